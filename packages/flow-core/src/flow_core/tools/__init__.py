"""File tools for the model, and which tools each role gets (``role_tools``)."""

from flow_core.tools._policy import (
    EDITOR_TOOL_NAMES,
    FILE_TOOL_NAMES,
    READ_ONLY_EDITOR_TOOL_NAMES,
    READ_ONLY_TOOL_NAMES,
    role_tools,
)
from flow_core.tools._toolbox import MAX_TOOL_OUTPUT_CHARS, ToolBox, ToolHost, ToolLedger

__all__ = [
    "EDITOR_TOOL_NAMES",
    "FILE_TOOL_NAMES",
    "MAX_TOOL_OUTPUT_CHARS",
    "READ_ONLY_EDITOR_TOOL_NAMES",
    "READ_ONLY_TOOL_NAMES",
    "ToolBox",
    "ToolHost",
    "ToolLedger",
    "role_tools",
]
