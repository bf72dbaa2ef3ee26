"""flow-mcp: Flow's MCP stdio server (MCP 2025-11-25) with flow_status, flow_check, flow_run.

A hand-written server in three layers, like the MCP python-sdk: framing (``_framing``: stdin
lines ↔ JSON values), session (``_session``: JSON-RPC and the lifecycle; ``_inbox``, the
reader thread that answers ``ping`` and applies ``notifications/cancelled`` while a request
runs; ``_eras``, the handshake era and MCP 2026-07-28's per-request era opened by
``server/discover``) and tools (``_tools``: the three tools over ``flow_core.Runtime``).
Requests are served one at a time. ``_server`` wires them to stdio. ``flow serve``
(flow-cli) calls :func:`serve`.
"""

from flow_mcp.__about__ import __version__
from flow_mcp._framing import MAX_FRAME_BYTES
from flow_mcp._server import ServerOptions, main, run_server, serve
from flow_mcp._session import LATEST_PROTOCOL_VERSION
from flow_mcp._tools import TOOL_NAMES

# What a user calls: run the server (``main`` for argv, ``serve`` with options, ``run_server``
# on given descriptors) and the facts a client may want to know. The layers (framing,
# session, tools) stay private modules.
__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "MAX_FRAME_BYTES",
    "TOOL_NAMES",
    "ServerOptions",
    "__version__",
    "main",
    "run_server",
    "serve",
]
