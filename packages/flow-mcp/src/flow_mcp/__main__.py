"""``python -m flow_mcp`` and the ``flow-mcp`` console script."""

from __future__ import annotations

import sys

from flow_mcp._server import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
