"""flow-rose: Flow's reverse bridge into the Rose Neovim plugin's editor tools.

``RoseBridge`` implements flow-core's ``EditorBridge`` over a private Neovim Unix socket,
sending only two fixed Lua expressions (see the package README for the contract with Rose).

Importing this package imports pynvim; do it on the application's main thread, before any
bridge is connected (pynvim records the signal-owning thread when it is first imported).
"""

from flow_rose.__about__ import __version__
from flow_rose._bridge import (
    DEFAULT_TIMEOUT,
    MAX_TIMEOUT,
    MIN_TIMEOUT,
    RoseBridge,
)
from flow_rose._errors import EDITOR_ERROR_CODES
from flow_rose._replies import EDITOR_TOOLS, READ_ONLY_EDITOR_TOOLS
from flow_rose._socket import validate_socket

__all__ = [
    # editor request timeout bounds, in seconds
    "DEFAULT_TIMEOUT",
    # error codes, all raised as flow_core.EditorError
    "EDITOR_ERROR_CODES",
    # tool allowlists
    "EDITOR_TOOLS",
    "MAX_TIMEOUT",
    "MIN_TIMEOUT",
    "READ_ONLY_EDITOR_TOOLS",
    # the bridge
    "RoseBridge",
    # version
    "__version__",
    # socket checks
    "validate_socket",
]
