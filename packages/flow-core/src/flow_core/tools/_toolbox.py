"""The model's tools: relative-path file tools over flow-safeio, named checks, editor tools.

Source: ``docs/architecture.md``, "Trust" and "Tools".

Which role gets which tool is decided in one place, ``flow_core.tools._policy.role_tools``:
readers get ``list_files``, ``read_file``, ``search_text``, ``outline`` and the editor's
read-only tools; a trusted coder also gets ``write_file`` (whole file), ``edit_file`` (exact
search-and-replace), ``run_check`` (a configured check *name*; the model picks nothing else)
and the editor's lint/check tools.

There is no delete, no shell and no way for the model to choose an executable, an argument, a
working directory or an environment. Every call gets an id (``tc-0001``...) and a
``ToolCallRecord``; a failed call returns a clear message to the model, costs budget, and
records a stable error code, the call's arguments (capped, ``tools._record``) and the error
message. Tool output is capped (``MAX_TOOL_OUTPUT_CHARS``).

Navigation fits small context windows: ``read_file`` shows a numbered window with the file's
line count and a hint that always advances (``tools._read``), ``search_text`` finds literal
strings or bounded regular expressions with context (``tools._search``), ``outline`` lists a
file's definitions with their line ranges (``tools._outline``). Every line number is the one
``grep -n`` prints for the file (``tools._lines``).

When an editor bridge is attached, ``read_file``/``write_file``/``edit_file`` go through its
buffer-aware I/O after Flow's own checks (path validation, protected config, size, trust, role);
an editor failure is a tool error, never a fallback to direct disk I/O.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flow_core._codes import ErrorCode
from flow_core._errors import EditorError
from flow_core._protocols import EditorBridge, Role
from flow_core._report import CheckResult, ToolCallRecord
from flow_core.tools._calls import (
    MAX_LIST_ENTRIES,
    MAX_TOOL_OUTPUT_CHARS,
    ToolError,
    ToolLedger,
    ToolOutcome,
    bool_arg,
    cap_output,
    check_unicode,
    int_arg,
    opt_int_arg,
    str_arg,
)
from flow_core.tools._edit import ambiguous_message, match_lines, no_match_message
from flow_core.tools._map import check_view
from flow_core.tools._modules import (
    git_exclude,
    installed_top_level,
    new_top_level,
    workspace_top_level,
)
from flow_core.tools._outline import render_outline
from flow_core.tools._policy import (
    IGNORE_FILES,
    lint_excluded_refusal,
    module_name,
    role_tools,
    what_runs_refusal,
)
from flow_core.tools._read import ReadError, read_window
from flow_core.tools._record import capped_arguments, capped_message
from flow_core.tools._schemas import TOOL_SCHEMAS, editor_function_schema, function_schema
from flow_core.tools._search import (
    MAX_SEARCH_BYTES,
    MAX_SEARCH_MATCHES,
    Query,
    SearchError,
    search,
)
from flow_core.verify import protected_reason
from flow_core.verify._toolfiles import is_python_startup
from flow_safeio import (
    NotDirectoryError,
    ProtectedPathError,
    SafeIOError,
    Workspace,
    validate_path,
)

__all__ = [
    "MAX_SEARCH_BYTES",
    "MAX_SEARCH_MATCHES",
    "MAX_TOOL_OUTPUT_CHARS",
    "ToolBox",
    "ToolError",
    "ToolHost",
    "ToolLedger",
    "ToolOutcome",
]

#: The most characters of a check's output a ``run_check`` result holds (its tail).
CHECK_TAIL_CHARS = 8_000


@dataclass(frozen=True)
class ToolHost:
    """What the run lends a role's tools: its configured checks, its write hooks and the
    attached editor (``docs/architecture.md``, "Tools"). The default lends nothing: no
    check, no hook, no editor.

    Attributes:
        check_names: configured check names, in config order (``run_check``'s enum).
        run_check: runs a configured check by name (the host's runner).
        check_programs: the check programs' absolute paths (``CheckConfig.executable``): the
            environments whose installed modules a new module must not shadow.
        before_write: called with a validated path before its first write in the run (the
            runtime keeps the pre-image).
        after_write: called with the path and the bytes written right after each write
            succeeded (the runtime records what its own write left, for undo).
        editor: the attached editor bridge, if any.
        editor_schemas: the bridge's filtered tool schemas (fetched once per runtime).
    """

    check_names: Sequence[str] = ()
    run_check: Callable[[str], CheckResult] | None = None
    check_programs: Sequence[str | None] = ()
    before_write: Callable[[str], None] | None = None
    after_write: Callable[[str, bytes], None] | None = None
    editor: EditorBridge | None = None
    editor_schemas: Sequence[Mapping[str, Any]] = ()


class ToolBox:
    """The tools of one role in one run.

    Args:
        role: planner, coder or reviewer; decides the toolset.
        workspace: the flow-safeio workspace (root held by descriptor). Its protected paths
            (operator config) are enforced for every write channel, the editor bridge's too.
        ledger: ids, records and the run-wide budget, shared by every role of the run.
        trusted: without trust no write tool and no check exists, whatever the role.
        host: the run's checks, write hooks and editor (``ToolHost``); the default lends none.
        cycle: the repair cycle recorded on each call.
    """

    def __init__(
        self,
        *,
        role: Role,
        workspace: Workspace,
        ledger: ToolLedger,
        trusted: bool,
        host: ToolHost = ToolHost(),
        cycle: int | None = None,
    ) -> None:
        self.role = role
        self._check_programs = tuple(host.check_programs)
        self.workspace = workspace
        self.ledger = ledger
        self.cycle = cycle
        self._editor = host.editor
        self._run_check = host.run_check
        self._before_write = host.before_write
        self._after_write = host.after_write
        #: The checks ``run_check`` may name, in config order.
        self.check_names: tuple[str, ...] = tuple(host.check_names)
        specs: dict[str, Mapping[str, Any]] = {}
        for spec in host.editor_schemas if host.editor is not None else ():
            specs.setdefault(str(spec.get("name", "")), spec)
        granted = role_tools(
            role,
            trusted=trusted,
            has_checks=bool(self.check_names) and host.run_check is not None,
            editor_tools=specs,
        )
        own: dict[str, Callable[[Mapping[str, Any]], ToolOutcome | str]] = {
            "list_files": self._list_files,
            "read_file": self._read_file,
            "search_text": self._search_text,
            "outline": self._outline,
            "write_file": self._write_file,
            "edit_file": self._edit_file,
            "run_check": self._run_named_check,
        }
        handlers: dict[str, Callable[[Mapping[str, Any]], ToolOutcome | str]] = {}
        schemas: list[dict[str, Any]] = []
        for name in granted:
            if name in specs:
                handlers[name] = self._editor_tool(name)
                schemas.append(editor_function_schema(specs[name]))
            else:
                handlers[name] = own[name]
                own_schema = TOOL_SCHEMAS.get(name) or self._run_check_schema()
                schemas.append(own_schema)
        self._handlers = handlers
        self.schemas: list[dict[str, Any]] = schemas
        self.names: frozenset[str] = frozenset(handlers)
        #: Characters of the schemas as sent (part of every request's context).
        self.schema_chars = len(json.dumps(schemas))

    def _run_check_schema(self) -> dict[str, Any]:
        return function_schema(
            "run_check",
            "Run one of the operator's named checks and see its result.",
            {"name": {"type": "string", "enum": list(self.check_names)}},
            ["name"],
        )

    # -- dispatch -------------------------------------------------------------------------------

    def refuse(
        self,
        name: str,
        code: ErrorCode,
        message: str,
        arguments: Mapping[str, Any] | None = None,
    ) -> ToolOutcome:
        """Record a call the host refused without running it (e.g. budget spent)."""
        call_id = self.ledger.next_id()
        self.ledger.refused += 1
        self.ledger.records.append(
            ToolCallRecord(
                id=call_id,
                role=self.role,
                name=name,
                ok=False,
                error=code,
                message=capped_message(message),
                cycle=self.cycle,
                arguments={} if arguments is None else capped_arguments(arguments),
            )
        )
        return ToolOutcome(id=call_id, ok=False, content=f"error ({code}): {message}", error=code)

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Run one tool call and record it; never raises for the model's mistakes."""
        call_id = self.ledger.next_id()
        handler = self._handlers.get(name)
        outcome: ToolOutcome
        code: str  # a catalogued code; flow-safeio's are plain strings
        message: str | None = None
        try:
            if handler is None:
                raise ToolError("tool_unknown", f"no tool named {name!r} for the {self.role}")
            if not isinstance(arguments, Mapping):
                raise ToolError("tool_invalid_arguments", "arguments must be a JSON object")
            check_unicode(arguments, "arguments")
            result = handler(arguments)
        except (ToolError, SearchError) as err:
            code, message = err.code, err.message
        except SafeIOError as err:
            code, message = err.code, str(err)
        except EditorError as err:
            code, message = err.code, err.message
        except (UnicodeError, ValueError, OverflowError, RecursionError) as err:
            # Text the model sent that no layer below could take (an odd code point in a
            # path, an embedded NUL): the model's mistake, never a crash of the run.
            code = "tool_invalid_arguments"
            message = f"the arguments could not be used ({type(err).__name__}); fix them"
        else:
            if isinstance(result, ToolOutcome):
                outcome = ToolOutcome(
                    call_id, result.ok, cap_output(result.content), result.error, result.check
                )
            else:
                outcome = ToolOutcome(call_id, True, cap_output(result))
        if message is not None:
            outcome = ToolOutcome(call_id, False, cap_output(f"error ({code}): {message}"), code)
        elif not outcome.ok:
            message = outcome.content.split("\n", 1)[0] if outcome.content else None
        self.ledger.records.append(
            ToolCallRecord(
                id=call_id,
                role=self.role,
                name=name,
                ok=outcome.ok,
                error=outcome.error,
                message=capped_message(message),
                cycle=self.cycle,
                arguments=capped_arguments(arguments),
            )
        )
        return outcome

    # -- helpers --------------------------------------------------------------------------------

    def _path(
        self, args: Mapping[str, Any], key: str = "path", *, default: str | None = None
    ) -> str:
        """The validated, normalised path argument (``"."`` is the root)."""
        rel = str_arg(args, key, default=default)
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
        # Files other tools run or obey (agent instructions, CI, .envrc, ...): the one table in
        # flow_core.verify._toolfiles, matched in any directory. Python startup files are
        # refused by the what-runs rule instead, which names its rule (_check_what_runs).
        why = protected_reason(rel)
        if why is not None and not is_python_startup(rel):
            raise ProtectedPathError(rel, f"protected path ({why}): it may be read but not written")

    def _check_what_runs(self, rel: str, text: str) -> None:
        """Writes that change what runs beyond what they show: the one rule in
        ``tools/_policy.py`` (``what_runs_refusal``), fed here with the facts it compares."""
        files: list[str] = []
        top: str | None = None
        if module_name(rel) is not None and not self.workspace.exists(rel):
            files = list(self.workspace.walk())
            top = new_top_level(rel, False, files)
        refusal = what_runs_refusal(
            rel,
            text,
            new_top_level=top,
            startup_file=is_python_startup(rel),
            installed=installed_top_level(self._check_programs) if top else frozenset(),
            workspace_modules=workspace_top_level(files, besides=rel) if top else frozenset(),
        )
        if refusal is None:
            refusal = lint_excluded_refusal(rel, self._ignore_patterns(rel))
        if refusal is not None:
            raise ToolError("changes_what_runs", f"{rel}: {refusal.message}")

    def _ignore_patterns(self, rel: str) -> list[tuple[str, str]]:
        """``(folder, pattern)`` of the ignore files linters obey on the way to ``rel``: each
        folder's ``.gitignore`` and ``.ignore``, and the repository's ``.git/info/exclude``."""
        parts = rel.split("/")[:-1]
        files: list[tuple[str, str]] = []
        for n in range(len(parts) + 1):
            folder = "/".join(parts[:n])
            files += [(folder, f"{folder}/{name}" if folder else name) for name in IGNORE_FILES]
        out: list[tuple[str, str]] = []
        for folder, path in [("", ""), *files]:
            try:
                text = self.workspace.read_bytes(path) if path else git_exclude(self.workspace.root)
            except SafeIOError:
                continue
            lines = [x.strip() for x in text.decode("utf-8", "replace").splitlines()[:2000]]
            if any(x.startswith("!") for x in lines):
                continue  # re-included paths: this file cannot be judged line by line
            out.extend((folder, x) for x in lines if x and not x.startswith("#"))
        return out

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
        self._check_what_runs(rel, text)
        if self._before_write is not None:
            self._before_write(rel)
        if self._editor is not None:
            self._editor.write_file(rel, text)
        else:
            self.workspace.write_bytes(rel, data)
        if self._after_write is not None:
            self._after_write(rel, data)

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
        start = int_arg(args, "start_line", 1)
        end = opt_int_arg(args, "end_line")
        col = int_arg(args, "start_col", 1)
        text = self._read_text(rel)
        try:
            return read_window(rel, text, start_line=start, end_line=end, start_col=col)
        except ReadError as err:
            raise ToolError("tool_invalid_arguments", str(err)) from err

    def _search_text(self, args: Mapping[str, Any]) -> str:
        query = str_arg(args, "query")
        prefix = self._path(args, default="")
        limit = min(int_arg(args, "max_matches", MAX_SEARCH_MATCHES), MAX_SEARCH_MATCHES)
        context = int_arg(args, "context", 0)
        if limit < 1 or context < 0:
            raise ToolError("tool_invalid_arguments", "max_matches >= 1 and context >= 0")
        return search(
            self._files_under(prefix),
            self.workspace.read_bytes,
            Query(query, bool_arg(args, "regex"), bool_arg(args, "ignore_case")),
            context=context,
            limit=limit,
        )

    def _files_under(self, rel: str) -> Iterator[str]:
        """The files below directory ``rel``, or ``rel`` itself when it names a file."""
        files = self.workspace.walk(rel)
        try:
            first = next(files, None)
        except NotDirectoryError:
            self.workspace.read_bytes(rel)  # a file, or the refusal that names the problem
            return iter((rel,))
        return itertools.chain(() if first is None else (first,), files)

    def _outline(self, args: Mapping[str, Any]) -> str:
        rel = self._file_path(args)
        return render_outline(rel, self._read_text(rel))

    # -- coder tools ----------------------------------------------------------------------------

    def _write_file(self, args: Mapping[str, Any]) -> str:
        rel = self._file_path(args)
        content = str_arg(args, "content")
        self._write_text(rel, content)
        return f"wrote {rel} ({len(content.encode('utf-8'))} bytes)"

    def _edit_file(self, args: Mapping[str, Any]) -> str:
        rel = self._file_path(args)
        old = str_arg(args, "old_text")
        new = str_arg(args, "new_text")
        if not old:
            raise ToolError("tool_invalid_arguments", "old_text must not be empty")
        text = self._read_text(rel)
        found = match_lines(text, old)
        if not found:
            raise ToolError("edit_no_match", no_match_message(rel, text, old))
        if len(found) > 1:
            raise ToolError("edit_ambiguous", ambiguous_message(rel, found))
        self._write_text(rel, text.replace(old, new, 1))
        return f"edited {rel} (1 replacement at line {found[0]})"

    def _run_named_check(self, args: Mapping[str, Any]) -> ToolOutcome:
        name = str_arg(args, "name")
        if name not in self.check_names or self._run_check is None:
            raise ToolError(
                "check_unknown",
                f"no configured check named {name!r}; configured: {', '.join(self.check_names)}",
            )
        result = self._run_check(name)
        ok = result.status == "passed"
        return ToolOutcome(
            id="",
            ok=ok,
            content=check_view(name, result, tail_chars=CHECK_TAIL_CHARS),
            error=None if ok else (result.error.code if result.error else result.status),
            check=result,
        )

    def _editor_tool(self, name: str) -> Callable[[Mapping[str, Any]], str]:
        editor = self._editor
        assert editor is not None

        def call(args: Mapping[str, Any]) -> str:
            return json.dumps(editor.call_tool(name, dict(args)), ensure_ascii=False)

        return call
