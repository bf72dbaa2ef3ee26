"""The JSON schemas of the model's tools, in the chat API's function-tool form.

Flow's own file tools are fixed here; editor tools keep the ``inputSchema`` Rose sent
(``editor_function_schema``); ``run_check``'s schema is built per toolbox because its
``enum`` lists the configured check names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flow_core.tools._search import MAX_CONTEXT_LINES, MAX_SEARCH_MATCHES

__all__ = ["TOOL_SCHEMAS", "editor_function_schema", "function_schema"]


def function_schema(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    """An OpenAI-style ``{"type": "function", ...}`` tool with a closed JSON-Schema object."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_PATH = {"type": "string", "description": "workspace-relative path with '/' separators"}

#: Flow's own tools as the model sees them, by name.
TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "list_files": function_schema(
        "list_files",
        "List files under a workspace directory (recursive, capped; generated folders skipped).",
        {"path": {"type": "string", "description": "relative directory; '' for the root"}},
        [],
    ),
    "read_file": function_schema(
        "read_file",
        "Read numbered lines of a UTF-8 text file (at most 250 lines per call). The reply "
        "gives the total line count and, when the file goes on, the start_line to read next. "
        "Use search_text or outline first, then read only the lines you need.",
        {
            "path": _PATH,
            "start_line": {"type": "integer", "minimum": 1, "description": "first line (1-based)"},
            "end_line": {"type": "integer", "minimum": 1, "description": "last line, inclusive"},
            "start_col": {
                "type": "integer",
                "minimum": 1,
                "description": "first column of start_line, for the rest of a very long line",
            },
        },
        ["path"],
    ),
    "search_text": function_schema(
        "search_text",
        "Find lines matching a query in workspace files; each match is PATH:LINE:COL: TEXT.",
        {
            "query": {"type": "string", "minLength": 1},
            "regex": {
                "type": "boolean",
                "description": "treat query as a Python regular expression (default: literal)",
            },
            "ignore_case": {"type": "boolean"},
            "context": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_CONTEXT_LINES,
                "description": "lines shown before and after each match",
            },
            "path": {"type": "string", "description": "only files under this relative path"},
            "max_matches": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_MATCHES},
        },
        ["query"],
    ),
    "outline": function_schema(
        "outline",
        "List a file's definitions (classes, functions, methods; headings in Markdown) with "
        "their line ranges, to read one with read_file start_line/end_line.",
        {"path": _PATH},
        ["path"],
    ),
    "write_file": function_schema(
        "write_file",
        "Create or replace a whole file with the given UTF-8 content.",
        {"path": _PATH, "content": {"type": "string"}},
        ["path", "content"],
    ),
    "edit_file": function_schema(
        "edit_file",
        "Replace exactly one occurrence of old_text with new_text. old_text must match the "
        "file exactly (spaces, line endings) and occur exactly once.",
        {
            "path": _PATH,
            "old_text": {"type": "string", "minLength": 1},
            "new_text": {"type": "string"},
        },
        ["path", "old_text", "new_text"],
    ),
}


def editor_function_schema(spec: Mapping[str, Any]) -> dict[str, Any]:
    """An editor tool's schema (``{"name", "description", "inputSchema"}``) as a function."""
    params = spec.get("inputSchema") or {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {
            "name": str(spec["name"]),
            "description": str(spec.get("description", "")),
            "parameters": dict(params),
        },
    }
