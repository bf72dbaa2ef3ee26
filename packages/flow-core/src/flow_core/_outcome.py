"""What a report means to a front end: the error report built once, its exit code, ``isError``.

The CLI and the MCP server build an error report the same way (:func:`error_report`) and
read a report the same way: :func:`exit_code_for` gives the CLI's exit code from the report's
status and, for an error report, from the categories of its error codes in flow-core's
catalogue (``ERROR_CATEGORIES``: usage 2, failure 1, interrupted 130); an MCP tool result's
``isError`` is true exactly when that exit code is not 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from flow_core.__about__ import __version__
from flow_core._report import ErrorInfo, Report

if TYPE_CHECKING:
    from flow_core._catalogue import ErrorCode

__all__ = ["Invocation", "error_report", "exit_code_for", "is_error"]

#: Report statuses that mean success (exit code 0).
_SUCCESS = frozenset({"ok", "passed", "verified"})


@dataclass(frozen=True)
class Invocation:
    """What the command line (or the MCP tool call) said, as an error report shows it.

    Attributes:
        workspace: the absolute workspace path, when known.
        trusted: whether the command ran with ``--trusted``.
        task: the run's task, when there is one.
    """

    workspace: str | None = None
    trusted: bool = False
    task: str | None = None


def error_report(
    kind: Literal["status", "check", "run"],
    code: ErrorCode,
    message: str,
    *,
    invocation: Invocation = Invocation(),
    base: Report | None = None,
) -> Report:
    """A report for an error that stopped a command before it produced one.

    Its status is ``"interrupted"`` when ``code`` is in the interrupted category, else
    ``"error"``; ``ok`` is false and ``errors`` holds the one ``{code, message}``.

    Args:
        kind: the command (``status``, ``check`` or ``run``).
        code: a code of ``flow_core.ERROR_CODES``.
        message: what went wrong and what to do.
        invocation: the workspace, ``--trusted`` and task the command was given
            (``Invocation``; the default: none known, untrusted).
        base: a report that already describes the setup (``Runtime.status()``); its
            workspace, sources, models and checks are kept (and the invocation's task, when
            it has one).
    """
    from flow_core._catalogue import error_category

    status: Literal["error", "interrupted"] = (
        "interrupted" if error_category(code) == "interrupted" else "error"
    )
    errors = [ErrorInfo(code=code, message=message)]
    update: dict[str, object] = {"kind": kind, "ok": False, "status": status, "errors": errors}
    if base is not None:
        if invocation.task is not None:
            update["task"] = invocation.task
        return base.model_copy(update=update)
    return Report(
        kind=kind,
        ok=False,
        status=status,
        flow_version=__version__,
        workspace=invocation.workspace,
        trusted=invocation.trusted,
        task=invocation.task,
        errors=errors,
    )


def exit_code_for(report: Report) -> int:
    """The CLI exit code of a report: 0, 1 (failure), 2 (usage) or 130 (interrupted).

    ``ok``/``passed``/``verified`` exit 0 (but a run verified in an isolated tree whose
    change could not be applied to the workspace exits 1) and ``interrupted`` 130. An
    ``error`` report takes the strongest category among its error codes (interrupted, then
    usage, then failure); any other status (``failed``, ``unverified``, ``read_only``) exits 1.
    A success reads no catalogue (``flow status`` does not load the error table).
    """
    if report.status in _SUCCESS and report.isolation is None:
        return 0
    from flow_core._catalogue import EXIT_CODES, error_category

    if report.isolation is not None and report.verified and not report.isolation.applied:
        return EXIT_CODES["failure"]  # verified in isolation, but the workspace moved
    if report.status in _SUCCESS:
        return 0
    if report.status == "interrupted":
        return EXIT_CODES["interrupted"]
    if report.status == "error":
        categories = {error_category(e.code) for e in report.errors}
        for category in ("interrupted", "usage"):
            if category in categories:
                return EXIT_CODES[category]
    return EXIT_CODES["failure"]


def is_error(report: Report) -> bool:
    """An MCP ``CallToolResult.isError``: true exactly when the CLI would not exit 0."""
    return exit_code_for(report) != 0
