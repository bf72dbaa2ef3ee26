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


_PATH = {"type": "string", "description": "relative path"}
_LINE = {"type": "integer", "minimum": 1}

#: Flow's own tools as the model sees them, by name. The descriptions are short on purpose:
#: they are part of every request of the coder (``bench/bench_context.py`` counts them).
TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "list_files": function_schema(
        "list_files",
        "List files under a directory (recursive, capped).",
        {"path": {"type": "string", "description": "directory; '' for the root"}},
        [],
    ),
    "read_file": function_schema(
        "read_file",
        "Read numbered lines of a text file (100 unless end_line says; the reply says what is "
        "left).",
        {"path": _PATH, "start_line": _LINE, "end_line": _LINE, "start_col": _LINE},
        ["path"],
    ),
    "search_text": function_schema(
        "search_text",
        "Find lines matching query; each match is PATH:LINE:COL: TEXT.",
        {
            "query": {"type": "string", "minLength": 1},
            "regex": {"type": "boolean", "description": "a Python regex (default: literal)"},
            "ignore_case": {"type": "boolean"},
            "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT_LINES},
            "path": {"type": "string", "description": "only files under this path"},
            "max_matches": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_MATCHES},
        },
        ["query"],
    ),
    "outline": function_schema(
        "outline",
        "A file's definitions (classes, functions; Markdown headings) with line ranges.",
        {"path": _PATH},
        ["path"],
    ),
    "write_file": function_schema(
        "write_file",
        "Create or replace a whole file.",
        {"path": _PATH, "content": {"type": "string"}},
        ["path", "content"],
    ),
    "edit_file": function_schema(
        "edit_file",
        "Replace the one exact occurrence of old_text with new_text.",
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
