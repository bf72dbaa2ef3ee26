"""Console entry point: ``flow`` (``flow_cli.__main__:main``) and ``python -m flow_cli``."""

from __future__ import annotations

from flow_cli._main import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
