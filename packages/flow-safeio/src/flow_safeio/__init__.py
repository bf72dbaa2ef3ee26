"""Safe, descriptor-relative file I/O confined to one workspace root (stdlib only, POSIX)."""

from flow_safeio.__about__ import __version__

__all__ = ["__version__"]
