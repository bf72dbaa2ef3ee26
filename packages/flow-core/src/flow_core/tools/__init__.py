"""File tools for the model, and which tools each role gets."""

from flow_core.tools._toolbox import (
    EDITOR_TOOL_NAMES,
    FILE_TOOL_NAMES,
    MAX_TOOL_OUTPUT_CHARS,
    READ_ONLY_TOOL_NAMES,
    ToolBox,
    ToolLedger,
)

__all__ = [
    "EDITOR_TOOL_NAMES",
    "FILE_TOOL_NAMES",
    "MAX_TOOL_OUTPUT_CHARS",
    "READ_ONLY_TOOL_NAMES",
    "ToolBox",
    "ToolLedger",
]
