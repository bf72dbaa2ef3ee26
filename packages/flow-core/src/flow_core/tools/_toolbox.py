"""The model's tools: relative-path file tools over flow-safeio, named checks, editor tools.

Source: the seed's "Trust and security" and DESIGN.md ("flow-core → Tools").

Role sets:

* planner and reviewer: ``list_files``, ``read_file``, ``search_text`` and the editor's
  read-only tools (never ``editor_lint``/``editor_check``);
* coder: those plus ``write_file`` (whole file), ``edit_file`` (exact search-and-replace),
  ``run_check`` (a configured check *name*; the model picks nothing else) and the editor's
  lint/check tools.

There is no delete, no shell and no way for the model to choose an executable, an argument, a
working directory or an environment. Every call gets an id (``tc-0001``...) and a
``ToolCallRecord``; a failed call returns a clear message to the model, costs budget, and
records a stable error code. Tool output is capped (``MAX_TOOL_OUTPUT_CHARS``).

When an editor bridge is attached, ``read_file``/``write_file``/``edit_file`` go through its
buffer-aware I/O after Flow's own checks (path validation, protected config, size, trust, role);
an editor failure is a tool error, never a fallback to direct disk I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flow_core._errors import EditorError
from flow_core._protocols import EditorBridge, Role
from flow_core._report import CheckResult, ToolCallRecord
from flow_core.verify._toolfiles import protected_reason
from flow_safeio import ProtectedPathError, SafeIOError, Workspace, validate_path

__all__ = [
    "EDITOR_TOOL_NAMES",
    "FILE_TOOL_NAMES",
    "MAX_SEARCH_BYTES",
    "MAX_SEARCH_MATCHES",
    "MAX_TOOL_OUTPUT_CHARS",
    "READ_ONLY_TOOL_NAMES",
    "ToolBox",
    "ToolLedger",
    "ToolOutcome",
]

#: Flow's own file tools, in the order the coder sees them.
FILE_TOOL_NAMES: tuple[str, ...] = (
    "list_files",
    "read_file",
    "search_text",
    "write_file",
    "edit_file",
)
#: Tools every role gets.
READ_ONLY_TOOL_NAMES: tuple[str, ...] = ("list_files", "read_file", "search_text")
#: Editor tools Flow accepts from the bridge (seed: "Rose integration").
EDITOR_TOOL_NAMES: tuple[str, ...] = (
    "editor_context",
    "editor_diagnostics",
    "editor_symbols",
    "editor_references",
    "editor_lint",
    "editor_check",
    "editor_scip",
    "editor_debug",
)
_EDITOR_CODER_ONLY = frozenset({"editor_lint", "editor_check"})

#: Characters of one tool result sent back to the model.
MAX_TOOL_OUTPUT_CHARS = 24_000
#: Most matches ``search_text`` returns.
MAX_SEARCH_MATCHES = 50
#: Most bytes ``search_text`` reads across all files in one call.
MAX_SEARCH_BYTES = 4 * 1024 * 1024
#: Most entries ``list_files`` returns.
MAX_LIST_ENTRIES = 500
_MAX_LINE_CHARS = 300


class ToolError(Exception):
    """A tool call failed; ``code`` is recorded, ``message`` goes back to the model."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The result of one tool call.

    Attributes:
        id: the call id Flow gave it (``tc-0001``).
        ok: whether the tool did what was asked.
        content: what the model sees (capped to ``MAX_TOOL_OUTPUT_CHARS``).
        error: stable error code when not ok.
        check: the check result, for ``run_check``.
    """

    id: str
    ok: bool
    content: str
    error: str | None = None
    check: CheckResult | None = None


@dataclass
class ToolLedger:
    """Ids, records and the run-wide tool-call budget (``[agent] max_tool_calls``)."""

    limit: int
    records: list[ToolCallRecord] = field(default_factory=list)
    refused: int = 0

    @property
    def used(self) -> int:
        """Tool calls executed (refused calls are recorded but not counted)."""
        return len(self.records) - self.refused

    @property
    def exhausted(self) -> bool:
        """True once a call was refused because the budget was spent."""
        return self.refused > 0

    def next_id(self) -> str:
        """The id for the next call: ``tc-0001``, ``tc-0002``, ... (refused calls included)."""
        return f"tc-{len(self.records) + 1:04d}"


def _function(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
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

_SCHEMAS: dict[str, dict[str, Any]] = {
    "list_files": _function(
        "list_files",
        "List files under a workspace directory (recursive, capped; generated folders skipped).",
        {"path": {"type": "string", "description": "relative directory; '' for the root"}},
        [],
    ),
    "read_file": _function(
        "read_file",
        "Read a UTF-8 text file. Long files are cut; pass start_line to read further.",
        {"path": _PATH, "start_line": {"type": "integer", "minimum": 1}},
        ["path"],
    ),
    "search_text": _function(
        "search_text",
        "Find lines containing a literal substring (case-sensitive) in workspace files.",
        {
            "query": {"type": "string", "minLength": 1},
            "path": {"type": "string", "description": "only files under this relative directory"},
            "max_matches": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_MATCHES},
        },
        ["query"],
    ),
    "write_file": _function(
        "write_file",
        "Create or replace a whole file with the given UTF-8 content.",
        {"path": _PATH, "content": {"type": "string"}},
        ["path", "content"],
    ),
    "edit_file": _function(
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


def _cap(text: str, limit: int = MAX_TOOL_OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[output truncated: {len(text) - limit} more characters]"


def _str_arg(args: Mapping[str, Any], key: str, *, default: str | None = None) -> str:
    value = args.get(key, default)
    if not isinstance(value, str):
        raise ToolError("tool_invalid_arguments", f"argument {key!r} must be a string")
    return value


def _int_arg(args: Mapping[str, Any], key: str, default: int) -> int:
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError("tool_invalid_arguments", f"argument {key!r} must be an integer")
    return value


class ToolBox:
    """The tools of one role in one run.

    Args:
        role: planner, coder or reviewer; decides the tool set.
        workspace: the flow-safeio workspace (root held by descriptor). Its protected paths
            (operator config) are enforced for every write channel, the editor bridge's too.
        ledger: ids, records and the run-wide budget, shared by every role of the run.
        trusted: without trust no write tool and no check exists, whatever the role.
        check_names: configured check names, in config order (``run_check``'s enum).
        run_check: runs a configured check by name (the host's runner).
        before_write: called with a validated path before its first write in the run (the
            runtime keeps the pre-image).
        editor: the attached editor bridge, if any.
        editor_schemas: the bridge's filtered tool schemas (fetched once per runtime).
        cycle: the repair cycle recorded on each call.
    """

    def __init__(
        self,
        *,
        role: Role,
        workspace: Workspace,
        ledger: ToolLedger,
        trusted: bool,
        check_names: Sequence[str] = (),
        run_check: Callable[[str], CheckResult] | None = None,
        before_write: Callable[[str], None] | None = None,
        editor: EditorBridge | None = None,
        editor_schemas: Sequence[Mapping[str, Any]] = (),
        cycle: int | None = None,
    ) -> None:
        self.role = role
        self.workspace = workspace
        self.ledger = ledger
        self.cycle = cycle
        self._editor = editor
        self._run_check = run_check
        self._before_write = before_write
        self._check_names = tuple(check_names)
        writes = role == "coder" and trusted
        handlers: dict[str, Callable[[Mapping[str, Any]], ToolOutcome | str]] = {
            "list_files": self._list_files,
            "read_file": self._read_file,
            "search_text": self._search_text,
        }
        schemas = [_SCHEMAS[n] for n in READ_ONLY_TOOL_NAMES]
        if writes:
            handlers["write_file"] = self._write_file
            handlers["edit_file"] = self._edit_file
            schemas += [_SCHEMAS["write_file"], _SCHEMAS["edit_file"]]
            if self._check_names and run_check is not None:
                handlers["run_check"] = self._run_named_check
                schemas.append(
                    _function(
                        "run_check",
                        "Run one operator-configured check by name and see its result.",
                        {"name": {"type": "string", "enum": list(self._check_names)}},
                        ["name"],
                    )
                )
        if editor is not None:
            for spec in editor_schemas:
                name = str(spec.get("name", ""))
                if name not in EDITOR_TOOL_NAMES or name in handlers:
                    continue
                if name in _EDITOR_CODER_ONLY and not writes:
                    continue
                if not writes and not spec.get("readOnly", False):
                    continue
                handlers[name] = self._editor_tool(name)
                params = spec.get("inputSchema") or {"type": "object", "properties": {}}
                schemas.append(
                    {
                        "type": "function",
                        "function": {
                            "name": name,
                            "description": str(spec.get("description", "")),
                            "parameters": dict(params),
                        },
                    }
                )
        self._handlers = handlers
        self.schemas: list[dict[str, Any]] = schemas
        self.names: frozenset[str] = frozenset(handlers)
        #: Characters of the schemas as sent (part of every request's context).
        self.schema_chars = len(json.dumps(schemas))

    # -- dispatch -------------------------------------------------------------------------------

    def refuse(self, name: str, code: str, message: str) -> ToolOutcome:
        """Record a call the host refused without running it (e.g. budget spent)."""
        call_id = self.ledger.next_id()
        self.ledger.refused += 1
        self.ledger.records.append(
            ToolCallRecord(
                id=call_id, role=self.role, name=name, ok=False, error=code, cycle=self.cycle
            )
        )
        return ToolOutcome(id=call_id, ok=False, content=f"error ({code}): {message}", error=code)

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Run one tool call and record it; never raises for the model's mistakes."""
        call_id = self.ledger.next_id()
        handler = self._handlers.get(name)
        outcome: ToolOutcome
        try:
            if handler is None:
                raise ToolError("tool_unknown", f"no tool named {name!r} for the {self.role}")
            if not isinstance(arguments, Mapping):
                raise ToolError("tool_invalid_arguments", "arguments must be a JSON object")
            result = handler(arguments)
        except ToolError as err:
            outcome = ToolOutcome(call_id, False, f"error ({err.code}): {err.message}", err.code)
        except SafeIOError as err:
            outcome = ToolOutcome(call_id, False, f"error ({err.code}): {err}", err.code)
        except EditorError as err:
            outcome = ToolOutcome(call_id, False, f"error ({err.code}): {err.message}", err.code)
        else:
            if isinstance(result, ToolOutcome):
                outcome = ToolOutcome(
                    call_id, result.ok, _cap(result.content), result.error, result.check
                )
            else:
                outcome = ToolOutcome(call_id, True, _cap(result))
        self.ledger.records.append(
            ToolCallRecord(
                id=call_id,
                role=self.role,
                name=name,
                ok=outcome.ok,
                error=outcome.error,
                cycle=self.cycle,
            )
        )
        return outcome

    # -- helpers --------------------------------------------------------------------------------

    def _path(
        self, args: Mapping[str, Any], key: str = "path", *, default: str | None = None
    ) -> str:
        """The validated, normalised path argument (``"."`` is the root)."""
        rel = _str_arg(args, key, default=default)
        return validate_path(rel or ".")

    def _file_path(self, args: Mapping[str, Any]) -> str:
        rel = self._path(args)
        if rel == ".":
            raise ToolError("tool_invalid_arguments", "path must name a file, not the root")
        return rel

    def _check_protected(self, rel: str) -> None:
        # flow-safeio's own rule (NFC + case folding), applied before any write channel,
        # the editor bridge included; raises ProtectedPathError (code "protected").
        self.workspace.check_writable(rel)
        # Generated and environment folders (.venv, node_modules, build, any virtual
        # environment, ...): flow-safeio's one rule, the same that hides them from listings;
        # raises GeneratedPathError (code "generated_path").
        self.workspace.check_generated(rel)
        # Files other tools run or obey (agent instructions, CI, .envrc, *.pth, ...): the one
        # table in flow_core.verify._toolfiles, matched in any directory.
        why = protected_reason(rel)
        if why is not None:
            raise ProtectedPathError(rel, f"protected path ({why}): it may be read but not written")

    def _read_text(self, rel: str) -> str:
        if self._editor is not None:
            return self._editor.read_file(rel)
        data = self.workspace.read_bytes(rel)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ToolError("not_text", f"{rel} is not UTF-8 text") from err

    def _write_text(self, rel: str, text: str) -> None:
        data = text.encode("utf-8")
        limit = self.workspace.max_bytes
        if len(data) > limit:
            raise ToolError("too_large", f"{rel}: {len(data)} bytes is over the {limit}-byte limit")
        self._check_protected(rel)
        if self._before_write is not None:
            self._before_write(rel)
        if self._editor is not None:
            self._editor.write_file(rel, text)
        else:
            self.workspace.write_bytes(rel, data)

    # -- read-only tools ------------------------------------------------------------------------

    def _list_files(self, args: Mapping[str, Any]) -> str:
        rel = self._path(args, default="")
        files: list[str] = []
        truncated = False
        for path in self.workspace.walk(rel):
            if len(files) >= MAX_LIST_ENTRIES:
                truncated = True
                break
            files.append(path)
        out = "\n".join(files) if files else "(no files)"
        if truncated:
            out += f"\n[listing capped at {MAX_LIST_ENTRIES} entries]"
        return out

    def _read_file(self, args: Mapping[str, Any]) -> str:
        rel = self._file_path(args)
        start = _int_arg(args, "start_line", 1)
        if start < 1:
            raise ToolError("tool_invalid_arguments", "start_line must be >= 1")
        text = self._read_text(rel)
        if start > 1:
            lines = text.splitlines(keepends=True)
            if start > len(lines):
                return f"[{rel} has only {len(lines)} lines]"
            text = "".join(lines[start - 1 :])
        room = MAX_TOOL_OUTPUT_CHARS - 100  # leave room for the note below
        if len(text) > room:
            shown = text[:room]
            next_line = start + shown.count("\n")
            return shown + f"\n[cut: read again with start_line={next_line} for the rest]"
        return text

    def _search_text(self, args: Mapping[str, Any]) -> str:
        query = _str_arg(args, "query")
        if not query:
            raise ToolError("tool_invalid_arguments", "query must not be empty")
        prefix = self._path(args, default="")
        limit = min(_int_arg(args, "max_matches", MAX_SEARCH_MATCHES), MAX_SEARCH_MATCHES)
        if limit < 1:
            raise ToolError("tool_invalid_arguments", "max_matches must be >= 1")
        matches: list[str] = []
        scanned = 0
        note = ""
        for path in self.workspace.walk(prefix):
            if len(matches) >= limit:
                note = f"[stopped at {limit} matches]"
                break
            if scanned >= MAX_SEARCH_BYTES:
                note = f"[stopped after scanning {MAX_SEARCH_BYTES} bytes]"
                break
            try:
                data = self.workspace.read_bytes(path)
            except SafeIOError:
                continue
            scanned += len(data)
            if b"\0" in data[:8192]:
                continue
            text = data.decode("utf-8", errors="replace")
            if query not in text:
                continue
            for number, line in enumerate(text.splitlines(), 1):
                if query in line:
                    matches.append(f"{path}:{number}: {line[:_MAX_LINE_CHARS]}")
                    if len(matches) >= limit:
                        break
        out = "\n".join(matches) if matches else "(no matches)"
        return out + ("\n" + note if note else "")

    # -- coder tools ----------------------------------------------------------------------------

    def _write_file(self, args: Mapping[str, Any]) -> str:
        rel = self._file_path(args)
        content = _str_arg(args, "content")
        self._write_text(rel, content)
        return f"wrote {rel} ({len(content.encode('utf-8'))} bytes)"

    def _edit_file(self, args: Mapping[str, Any]) -> str:
        rel = self._file_path(args)
        old = _str_arg(args, "old_text")
        new = _str_arg(args, "new_text")
        if not old:
            raise ToolError("tool_invalid_arguments", "old_text must not be empty")
        text = self._read_text(rel)
        count = text.count(old)
        if count == 0:
            raise ToolError(
                "edit_no_match",
                f"old_text was not found in {rel} (0 matches); it must match exactly, "
                "including whitespace and line endings. Read the file and try again.",
            )
        if count > 1:
            raise ToolError(
                "edit_ambiguous",
                f"old_text occurs {count} times in {rel}; exactly one match is required. "
                "Include more surrounding lines.",
            )
        self._write_text(rel, text.replace(old, new, 1))
        return f"edited {rel} (1 replacement)"

    def _run_named_check(self, args: Mapping[str, Any]) -> ToolOutcome:
        name = _str_arg(args, "name")
        if name not in self._check_names or self._run_check is None:
            raise ToolError(
                "check_unknown",
                f"no configured check named {name!r}; configured: {', '.join(self._check_names)}",
            )
        result = self._run_check(name)
        lines = [f"check {name}: {result.status}"]
        if result.exit_code is not None:
            lines.append(f"exit code: {result.exit_code}")
        if result.error is not None:
            lines.append(result.error.message)
        if result.output_tail:
            lines.append("output (tail):\n" + result.output_tail[-8000:])
        ok = result.status == "passed"
        return ToolOutcome(
            id="",
            ok=ok,
            content="\n".join(lines),
            error=None if ok else (result.error.code if result.error else result.status),
            check=result,
        )

    def _editor_tool(self, name: str) -> Callable[[Mapping[str, Any]], str]:
        editor = self._editor
        assert editor is not None

        def call(args: Mapping[str, Any]) -> str:
            return json.dumps(editor.call_tool(name, dict(args)), ensure_ascii=False)

        return call
