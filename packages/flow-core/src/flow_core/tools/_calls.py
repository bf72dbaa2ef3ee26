"""One tool call's parts: its outcome, the run's ledger, the error a tool raises, and the
readers of its JSON arguments.

``tools/_toolbox.py`` (the ``ToolBox``) uses these; the rules are ``docs/architecture.md``'s
"Tools" section: a failed call costs budget, records a stable code, and sends its message back
to the model; output is capped at ``MAX_TOOL_OUTPUT_CHARS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flow_core._codes import ErrorCode
from flow_core._report import CheckResult, ToolCallRecord
from flow_core._unicode import first_surrogate

__all__ = [
    "MAX_LIST_ENTRIES",
    "MAX_TOOL_OUTPUT_CHARS",
    "ToolError",
    "ToolLedger",
    "ToolOutcome",
    "bool_arg",
    "cap_output",
    "check_unicode",
    "int_arg",
    "opt_int_arg",
    "str_arg",
]


#: Characters of one tool result sent back to the model.
MAX_TOOL_OUTPUT_CHARS = 24_000
#: Most entries ``list_files`` returns.
MAX_LIST_ENTRIES = 500


class ToolError(Exception):
    """A tool call failed; ``code`` is recorded, ``message`` goes back to the model."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
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


def cap_output(text: str, limit: int = MAX_TOOL_OUTPUT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with a marker saying how many were cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[output truncated: {len(text) - limit} more characters]"


def str_arg(args: Mapping[str, Any], key: str, *, default: str | None = None) -> str:
    """The string argument ``key``; ``tool_invalid_arguments`` when it is not one."""
    value = args.get(key, default)
    if not isinstance(value, str):
        raise ToolError("tool_invalid_arguments", f"argument {key!r} must be a string")
    return value


def int_arg(args: Mapping[str, Any], key: str, default: int) -> int:
    """The integer argument ``key`` (a whole float counts); ``tool_invalid_arguments`` else."""
    value = args.get(key, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError("tool_invalid_arguments", f"argument {key!r} must be an integer")
    return value


def opt_int_arg(args: Mapping[str, Any], key: str) -> int | None:
    """The integer argument ``key``, or None when it is absent or null."""
    return None if args.get(key) is None else int_arg(args, key, 0)


def bool_arg(args: Mapping[str, Any], key: str) -> bool:
    """The boolean argument ``key`` (default false); ``tool_invalid_arguments`` else."""
    value = args.get(key, False)
    if not isinstance(value, bool):
        raise ToolError("tool_invalid_arguments", f"argument {key!r} must be true or false")
    return value


def check_unicode(value: Any, where: str, depth: int = 0) -> None:
    """Refuse arguments holding a lone surrogate: such text cannot be written or encoded."""
    if isinstance(value, str):
        at = first_surrogate(value)
        if at is not None:
            raise ToolError(
                "tool_invalid_arguments",
                f"argument {where} holds invalid Unicode (a lone surrogate at character {at}); "
                "send valid UTF-8 text",
            )
    elif depth < 8 and isinstance(value, Mapping):
        for key, item in value.items():
            check_unicode(key, where, depth + 1)
            check_unicode(item, f"{where}[{key!r}]" if depth else repr(key), depth + 1)
    elif depth < 8 and isinstance(value, list | tuple):
        for item in value:
            check_unicode(item, where, depth + 1)
