"""The catalogue of every stable error code Flow reports: views of one table of typed rows.

The rows live in ``flow_core._codes`` (``ROWS``: code, category, area, meaning, cause, fix).
Codes appear as ``FlowError.code``, ``ErrorInfo.code`` in reports, ``ToolCallRecord.error``
and ``CheckResult.error.code``. They never change meaning once released. Codes from
flow-safeio (file tools refusing a path) and from flow-rose (the editor bridge,
:data:`EDITOR_ERROR_CODES`, re-exported as ``flow_rose.EDITOR_ERROR_CODES``) have their rows
too, so every code Flow reports has exactly one entry.

Each code's *category* (:data:`ERROR_CATEGORIES`) is ``usage`` (fix the command line or the
configuration; CLI exit code 2), ``failure`` (the work failed; exit 1) or ``interrupted``
(Ctrl-C or SIGTERM; exit 130). The CLI's exit codes and the MCP tools' ``isError`` are derived
from these categories (``flow_core.exit_code_for``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from flow_core._codes import ROWS, Area, CodeRow, ErrorCategory, ErrorCode

__all__ = [
    "EDITOR_ERROR_CODES",
    "ERROR_CATEGORIES",
    "ERROR_CODES",
    "EXIT_CODES",
    "ErrorCategory",
    "ErrorCode",
    "Explanation",
    "codes_of",
    "error_category",
    "explain_error",
]

_BY_CODE: Final[Mapping[str, CodeRow]] = MappingProxyType({row.code: row for row in ROWS})


def codes_of(area: Area) -> dict[str, str]:
    """The codes one part of Flow raises (``area``, or listed in a row's ``also``), each with
    its meaning: the tables ``BACKEND_ERROR_CODES``, ``REPLY_ISSUE_CODES``, ``PREFLIGHT_CODES``
    and ``EDITOR_ERROR_CODES`` are these views."""
    table: dict[str, str] = {}
    for row in ROWS:
        if row.area == area:
            table[row.code] = row.meaning
        table.update((row.code, meaning) for where, meaning in row.also if where == area)
    return table


#: The editor bridge's codes (flow-rose raises each as ``flow_core.EditorError``).
EDITOR_ERROR_CODES: Mapping[str, str] = MappingProxyType(codes_of("editor"))

#: The process exit code of each category (``flow status|check|run``; 0 is success).
EXIT_CODES: Final[Mapping[ErrorCategory, int]] = MappingProxyType(
    {"usage": 2, "failure": 1, "interrupted": 130}
)

#: Every code Flow can report, mapped to a one-line meaning and, where one exists, the fix.
ERROR_CODES: Mapping[str, str] = MappingProxyType({row.code: row.meaning for row in ROWS})

#: The category of every code in :data:`ERROR_CODES`.
ERROR_CATEGORIES: Mapping[str, ErrorCategory] = MappingProxyType(
    {row.code: row.category for row in ROWS}
)


def error_category(code: str) -> ErrorCategory:
    """The category of ``code``; a code missing from the catalogue counts as a failure."""
    return ERROR_CATEGORIES.get(code, "failure")


@dataclass(frozen=True, slots=True)
class Explanation:
    """What ``flow explain CODE`` prints for one error code.

    Attributes:
        code: the stable code.
        category: ``usage``, ``failure`` or ``interrupted``.
        exit_code: the CLI exit code the category gives (2, 1 or 130).
        meaning: the catalogue's one-line meaning (:data:`ERROR_CODES`).
        cause: the usual cause.
        fix: what to do.
    """

    code: str
    category: ErrorCategory
    exit_code: int
    meaning: str
    cause: str
    fix: str


def explain_error(code: str) -> Explanation | None:
    """The explanation of ``code`` from the catalogue, or None for an unknown code."""
    row = _BY_CODE.get(code)
    if row is None:
        return None
    return Explanation(
        row.code, row.category, EXIT_CODES[row.category], row.meaning, row.cause, row.fix
    )
