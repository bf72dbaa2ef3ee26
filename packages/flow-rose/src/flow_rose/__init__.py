"""Reverse bridge from Flow into the Rose Neovim plugin's editor tools over a private socket."""

from flow_rose.__about__ import __version__

__all__ = ["__version__"]
