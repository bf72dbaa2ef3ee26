"""The three tools (MCP 2025-11-25, "Server Features > Tools").

``flow_status``, ``flow_check`` and ``flow_run`` each declare a ``title``, a ``description``,
an ``inputSchema`` generated from the tool's pydantic arguments model (``_inputs``, which
also validates each call; no extra properties), the report's JSON Schema as
``outputSchema`` and behaviour ``annotations``. Every result is a ``CallToolResult`` whose
``structuredContent`` is a Flow report (the only copy of its diff), whose two text blocks
are a short summary and the report without its diff (for clients that ignore structured
content), sized under a cap (``_results``), and whose ``isError`` is ``flow_core.is_error``
(true exactly when the CLI would exit non-zero for that report).

Where errors go ("Server Features > Tools > Error Handling"):

* an unknown tool name is a protocol error, ``-32602`` (raised as ``JsonRpcError``);
* arguments that break the input schema are a *tool execution* error (2025-11-25 moved input
  validation there so the model can read the reason and retry): an ``isError`` result holding
  an error report with code ``invalid_arguments``;
* a ``FlowError`` from the runtime (configuration, unknown check, missing trust, model backend,
  editor bridge) becomes an ``isError`` result holding an error report with that error's code.

Annotation choices: ``flow_status`` only reads, so it is read-only and idempotent.
``flow_check`` edits nothing itself, but the operator's check commands are arbitrary programs
that may write caches or build outputs, so it is honestly *not* read-only; it deletes nothing
Flow knows of (``destructiveHint`` false) and repeats give the same answer for the same tree
(``idempotentHint`` true). ``flow_run`` writes files through the coder's tools (not read-only),
never deletes (``destructiveHint`` false) and is not idempotent. None of the three reach
beyond the configured workspace, model server and checks (``openWorldHint`` false).
"""

from __future__ import annotations

import contextlib
import copy
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, Protocol

from flow_core import (
    ErrorCode,
    ErrorInfo,
    Event,
    FlowError,
    Invocation,
    Report,
    error_report,
    report_json_schema,
)
from flow_mcp._inputs import input_schema, validate_arguments
from flow_mcp._progress import ProgressRelay, progress_message
from flow_mcp._results import DEFAULT_MAX_RESULT_CHARS, sized_result
from flow_mcp._rpc import INVALID_PARAMS, JsonRpcError, RequestId

#: The tool names, in the order ``tools/list`` gives them.
TOOL_NAMES: Final = ("flow_status", "flow_check", "flow_run")

_KINDS: Final[dict[str, Literal["status", "check", "run"]]] = {
    "flow_status": "status",
    "flow_check": "check",
    "flow_run": "run",
}


class FlowRuntime(Protocol):
    """The part of ``flow_core.Runtime`` the tools use."""

    def status(self) -> Report: ...
    def check(self, name: str | None = None) -> Report: ...
    def run(self, task: str) -> Report: ...
    def interrupt(self) -> None: ...
    def rollback(self) -> list[str]: ...


def _output_schema() -> dict[str, Any]:
    schema = copy.deepcopy(report_json_schema())
    # "Server Features > Tools > Output Schema": the root must be an object schema. The
    # schema keeps its "$defs" at the root, so every "#/$defs/..." reference resolves inside
    # the document that the client validates against.
    schema["type"] = "object"
    return schema


def _build_definitions() -> list[dict[str, Any]]:
    output = _output_schema()
    return [
        {
            "name": "flow_status",
            "title": "Flow status",
            "description": (
                "Show Flow's configuration for this workspace: trust mode, models per role, "
                "configured named checks and where the configuration came from. Runs no model "
                "request and no command."
            ),
            "inputSchema": input_schema("flow_status"),
            "outputSchema": output,
            "annotations": {
                "title": "Flow status",
                "readOnlyHint": True,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        },
        {
            "name": "flow_check",
            "title": "Run Flow checks",
            "description": (
                "Run the operator-approved named checks (all, or the one named) in the "
                "workspace and report each result. Needs the server started with --trusted. "
                "Check commands are fixed by the operator's configuration."
            ),
            "inputSchema": input_schema("flow_check"),
            "outputSchema": output,
            "annotations": {
                "title": "Run Flow checks",
                "readOnlyHint": False,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        },
        {
            "name": "flow_run",
            "title": "Run a verified Flow task",
            "description": (
                "Plan, edit and verify a change with the local model: planner, then coder, "
                "then the named checks and a read-only reviewer, within fixed budgets. The "
                "report says whether the change is verified and carries the diff. Without "
                "--trusted the run only plans."
            ),
            "inputSchema": input_schema("flow_run"),
            "outputSchema": output,
            "annotations": {
                "title": "Run a verified Flow task",
                "readOnlyHint": False,
                "destructiveHint": False,
                "idempotentHint": False,
                "openWorldHint": False,
            },
        },
    ]


_DEFINITIONS: list[dict[str, Any]] | None = None


def _log(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _definitions() -> list[dict[str, Any]]:
    global _DEFINITIONS  # noqa: PLW0603 - built once, on first use
    if _DEFINITIONS is None:
        _DEFINITIONS = _build_definitions()
    return _DEFINITIONS


def tool_definitions() -> list[dict[str, Any]]:
    """A fresh copy of the three ``Tool`` objects that ``tools/list`` returns."""
    return copy.deepcopy(_definitions())


def tool_result(report: Report, max_chars: int = DEFAULT_MAX_RESULT_CHARS) -> dict[str, Any]:
    """A ``CallToolResult`` for one report, sized for a client (see ``_results``).

    ``structuredContent`` is the report (the only copy of its diff, cut past ``max_chars``
    JSON characters); ``content`` a summary and the report without its diff. ``isError`` is
    ``flow_core.is_error``: true exactly when the CLI would exit non-zero for the same report
    (the category of its error codes in flow-core's catalogue).
    """
    return sized_result(report, max_chars)


class FlowTools:
    """The tools layer: lists the three tools and runs them on a runtime.

    Args:
        runtime: a ``flow_core.Runtime`` (or anything with ``status``/``check``/``run``).
        workspace: the workspace shown in error reports (absolute path), if known.
        trusted: whether the server runs with ``--trusted`` (shown in error reports).
        progress: the relay the runtime was built with, if any.
        max_result_chars: the cap on one result, in JSON characters (``_results``).
    """

    def __init__(
        self,
        runtime: FlowRuntime,
        *,
        workspace: str | None = None,
        trusted: bool = False,
        progress: ProgressRelay | None = None,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        self.runtime = runtime
        self.max_result_chars = max_result_chars
        self.workspace = workspace
        self.trusted = trusted
        self.progress = progress
        self._lock = threading.Lock()
        self._running: str | None = None
        self._cancel_reason: str | None = None
        if progress is not None:
            progress.watch = self._reassert

    def cancel(self, reason: str) -> None:
        """Stop the ``flow_check``/``flow_run`` in progress (any thread; no-op when idle).

        Goes through ``Runtime.interrupt()``, the path Ctrl-C takes in the CLI: no further
        tool call, write or check starts, running check process groups are killed and a
        model request in flight is abandoned. After a cancelled run, :meth:`call_tool` rolls
        the run's edits back. Progress notifications for the request stop here.
        """
        with self._lock:
            if self._running is None or self._cancel_reason is not None:
                return
            self._cancel_reason = reason
        if self.progress is not None:
            self.progress.start(None)
        self.runtime.interrupt()

    def _finish(self) -> str | None:
        """End the call's bookkeeping; the cancellation reason, if it was cancelled."""
        with self._lock:
            reason, self._cancel_reason = self._cancel_reason, None
            self._running = None
        return reason

    def _reassert(self, event: Event) -> None:
        # A cancellation that came before the runtime's own reset (start of run/check) would
        # be forgotten; every later event re-asserts it.
        if self._cancel_reason is not None:
            self.runtime.interrupt()

    def list_tools(self) -> list[dict[str, Any]]:
        """The ``tools`` array of ``tools/list``."""
        return _definitions()

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        progress_token: RequestId | None,
        *,
        stopped: Callable[[], str | None] = lambda: None,
    ) -> dict[str, Any]:
        """Run one tool and return its ``CallToolResult``.

        ``stopped()`` names a cancellation (or the client's end) that came before this call
        could take note of it; the run is then interrupted at its first event, as if
        :meth:`cancel` had come during it.

        Raises:
            JsonRpcError: ``-32602`` for a tool name that does not exist.
        """
        kind = _KINDS.get(name)
        if kind is None:
            raise JsonRpcError(
                INVALID_PARAMS,
                f"Unknown tool: {name}",
                {"tools": list(TOOL_NAMES)},
            )
        task = arguments.get("task") if isinstance(arguments.get("task"), str) else None
        problem = validate_arguments(name, arguments)
        if problem is not None:
            report = self.error_report(kind, "invalid_arguments", problem, task=task)
            return tool_result(report, self.max_result_chars)
        if self.progress is not None:
            self.progress.start(progress_token, f"{name}: starting")
        with self._lock:
            self._running, self._cancel_reason = name, stopped()
        if self._cancel_reason is not None and self.progress is not None:
            self.progress.start(None)
        try:
            if name == "flow_status":
                report = self.runtime.status()
            elif name == "flow_check":
                report = self.runtime.check(arguments.get("name"))
            else:
                report = self.runtime.run(arguments["task"])
        except FlowError as err:
            report = self.error_report(kind, err.code, err.message, task=task)
        finally:
            if self.progress is not None:
                self.progress.start(None)
            reason = self._finish()
        if reason is not None and name != "flow_status":
            report = self._after_cancel(report, reason, rollback=name == "flow_run")
        return tool_result(report, self.max_result_chars)

    def _after_cancel(self, report: Report, reason: str, *, rollback: bool) -> Report:
        """Roll a cancelled run back and say so in its report (sent only after EOF)."""
        errors = [*report.errors, ErrorInfo(code="cancelled", message=reason)]
        update: dict[str, Any] = {"status": "interrupted", "ok": False, "verified": False}
        if rollback and report.changed_files:
            try:
                left = self.runtime.rollback()
            except Exception as err:  # the workspace went away: say so, keep serving
                left = list(report.changed_files)
                _log(f"flow-mcp: rollback failed: {type(err).__name__}: {err}")
            restored = [p for p in report.changed_files if p not in left]
            if restored:
                _log(f"flow-mcp: cancelled run rolled back: {', '.join(restored)}")
            if left:
                message = (
                    "left in place after the cancelled run (the editor bridge cannot delete "
                    f"files, or they could not be restored): {', '.join(left)}"
                )
                errors.append(ErrorInfo(code="rollback_incomplete", message=message))
                _log(f"flow-mcp: {message}")
            update["changed_files"] = left
            if not left:
                update["diff"] = ""
        update["errors"] = errors
        return report.model_copy(update=update)

    def error_report(
        self,
        kind: Literal["status", "check", "run"],
        code: ErrorCode,
        message: str,
        *,
        task: str | None = None,
    ) -> Report:
        """An error report (``flow_core.error_report``) with one ``{code, message}`` entry."""
        invocation = Invocation(workspace=self.workspace, trusted=self.trusted, task=task)
        return error_report(kind, code, message, invocation=invocation)


__all__ = [
    "TOOL_NAMES",
    "FlowRuntime",
    "FlowTools",
    "ProgressRelay",
    "progress_message",
    "tool_definitions",
    "tool_result",
]
