"""Reading Rose's replies: the tool allowlist and the schema list, the ``call()`` envelope,
the freshness v1 fields and ``editor_lint`` results.

The contract these follow is written down in this package's README; ``_bridge.RoseBridge``
sends the requests and uses these to read what comes back.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from flow_core import (
    EDITOR_TOOL_NAMES,
    EditorFreshness,
    EditorLintResult,
    role_tools,
)
from flow_rose._errors import editor_error

__all__ = [
    "EDITOR_TOOLS",
    "READ_ONLY_EDITOR_TOOLS",
    "filter_schemas",
    "lint_result",
    "parse_freshness",
    "unwrap",
]

EDITOR_TOOLS: Final[frozenset[str]] = frozenset(EDITOR_TOOL_NAMES)
"""The Rose tools a model may ever see (the allowlist; ``editor_debug`` is status only).

flow-core owns the list (``flow_core.EDITOR_TOOL_NAMES``), so the runtime and the bridge can
never disagree about it."""

READ_ONLY_EDITOR_TOOLS: Final[frozenset[str]] = (
    frozenset(role_tools("reviewer", trusted=False, editor_tools=EDITOR_TOOL_NAMES)) & EDITOR_TOOLS
)
"""The allowlisted tools the planner and reviewer get; the coder also gets lint and check.

Derived from flow-core's one role → toolset rule (``flow_core.role_tools``)."""

_DEBUG_STATUS_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "enum": ["status"],
            "description": "Only 'status' is available through Flow.",
        }
    },
    "additionalProperties": False,
}


def filter_schemas(raw: Any) -> dict[str, dict[str, Any]]:
    """Keep the allowlisted entries of Rose's ``schemas()`` list, keyed by name."""
    if isinstance(raw, dict) and not raw:
        raw = []
    if not isinstance(raw, list):
        raise editor_error(
            "editor_protocol", "rose.tools.schemas() did not return a list of tool schemas"
        )
    kept: dict[str, dict[str, Any]] = {}
    for entry in raw:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise editor_error(
                "editor_protocol", "a rose.tools.schemas() entry has no string 'name'"
            )
        name = entry["name"]
        if name not in EDITOR_TOOLS:
            continue  # not on the allowlist (including file_read/file_write): never exposed
        description = entry.get("description", "")
        schema = entry.get("inputSchema", {})
        if not isinstance(description, str) or not isinstance(schema, dict):
            raise editor_error("editor_protocol", f"the rose.tools schema of {name} is malformed")
        if name == "editor_debug":
            schema = copy.deepcopy(_DEBUG_STATUS_SCHEMA)
            description = (description + " (status only through Flow)").strip()
        elif schema.get("properties") == []:
            schema = {**schema, "properties": {}}  # an empty Lua table decodes as a list
        kept[name] = {
            "name": name,
            "description": description,
            "inputSchema": schema,
            "readOnly": name in READ_ONLY_EDITOR_TOOLS,
        }
    return kept


def unwrap(name: str, reply: Any, *, refusals: frozenset[str] = frozenset()) -> Any:
    """Decode one ``call()`` reply: ``{ok=true, result=...}`` or ``{ok=false, error=...}``."""
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        raise editor_error(
            "editor_protocol", f"Rose's reply to {name} is not an {{ok, result|error}} object"
        )
    if reply["ok"]:
        if "result" not in reply:
            raise editor_error(
                "editor_protocol", f"Rose's reply to {name} says ok but has no result"
            )
        return reply["result"]
    error = reply.get("error")
    if not isinstance(error, dict):
        raise editor_error(
            "editor_protocol", f"Rose's reply to {name} says not ok but has no error object"
        )
    code = error.get("code")
    message = error.get("message", "")
    if not isinstance(code, str) or not isinstance(message, str):
        raise editor_error(
            "editor_protocol", f"Rose's error for {name} lacks a string code or message"
        )
    if code == "workspace_mismatch":
        raise editor_error("editor_workspace_mismatch", f"Rose refused {name}: {message}")
    if code in refusals:
        raise editor_error("editor_refused", f"Rose refused {name} [{code}]: {message}")
    raise editor_error("editor_tool_error", f"Rose's {name} failed [{code}]: {message}")


def parse_freshness(context: Mapping[str, Any]) -> EditorFreshness:
    """The freshness v1 fields of an ``editor_context`` result.

    Raises:
        EditorError: ``editor_freshness_missing`` when a field is absent or malformed.
    """
    fresh = context.get("freshness")
    if not isinstance(fresh, dict):
        raise editor_error(
            "editor_freshness_missing", "editor_context has no freshness object (API v1)"
        )
    for key in ("api", "dirty_buffers", "snapshot"):
        if key not in fresh or fresh[key] is None:
            raise editor_error(
                "editor_freshness_missing", f"editor_context freshness lacks {key!r} (API v1)"
            )
    if fresh["api"] != 1 or isinstance(fresh["api"], bool):
        raise editor_error(
            "editor_freshness_missing",
            f"editor_context freshness is API {fresh['api']!r}; Flow needs API v1",
        )
    dirty = fresh["dirty_buffers"]
    if isinstance(dirty, dict) and not dirty:
        dirty = []  # an empty Lua table may decode as either
    if not isinstance(dirty, list) or not all(isinstance(p, str) for p in dirty):
        raise editor_error(
            "editor_freshness_missing", "freshness dirty_buffers is not a list of paths"
        )
    snapshot = fresh["snapshot"]
    if not isinstance(snapshot, str) or not snapshot:
        raise editor_error(
            "editor_freshness_missing", "freshness snapshot is not a non-empty string"
        )
    return EditorFreshness(dirty_buffers=tuple(dirty), snapshot=snapshot)


def lint_result(result: Any, wanted: tuple[str, ...]) -> EditorLintResult:
    """An ``editor_lint`` result for the paths ``wanted``; a malformed one is status error."""

    def broken(message: str) -> EditorLintResult:
        return EditorLintResult(status="error", verified=False, files=(), message=message)

    if not isinstance(result, dict):
        return broken("Rose's editor_lint result is not an object")
    status = result.get("status")
    message = result.get("message", "")
    message = message if isinstance(message, str) else ""
    if status not in ("ok", "unavailable", "error"):
        return broken(f"Rose's editor_lint status {status!r} is unknown")
    raw_files = result.get("files", [])
    if isinstance(raw_files, dict) and not raw_files:
        raw_files = []
    if not isinstance(raw_files, list) or not all(isinstance(f, str) for f in raw_files):
        return broken("Rose's editor_lint files is not a list of paths")
    files = tuple(f for f in dict.fromkeys(raw_files) if f in wanted)
    if status != "ok":
        return EditorLintResult(
            status=status, verified=False, files=files, message=message or f"lint {status}"
        )
    verified = result.get("verified")
    error_count = result.get("error_count")
    stale = result.get("stale")
    if not isinstance(verified, bool):
        return broken("Rose's editor_lint result lacks a boolean 'verified'")
    if not isinstance(error_count, int) or isinstance(error_count, bool) or error_count < 0:
        return broken("Rose's editor_lint result lacks a non-negative 'error_count'")
    if not isinstance(stale, bool):
        return broken("Rose's editor_lint result lacks a boolean 'stale'")
    return EditorLintResult(
        status="ok",
        verified=verified and error_count == 0 and not stale and bool(files),
        files=files,
        error_count=error_count,
        stale=stale,
        message=message,
    )
