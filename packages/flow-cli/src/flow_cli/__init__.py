"""flow-cli: the ``flow`` command (status, check, run, tui, serve) and the terminal UI.

The console script is ``flow = flow_cli.__main__:main``; ``python -m flow_cli`` is the same.
Importing this package is cheap: click, flow-core and rich load only when a command runs.
"""

from flow_cli.__about__ import __version__
from flow_cli._main import main

__all__ = ["__version__", "main"]
