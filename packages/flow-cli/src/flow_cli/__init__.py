"""The `flow` command and terminal UI."""

from flow_cli.__about__ import __version__

__all__ = ["__version__"]
