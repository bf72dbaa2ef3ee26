"""Flow's MCP stdio server: flow_status, flow_run and flow_check."""

from flow_mcp.__about__ import __version__

__all__ = ["__version__"]
