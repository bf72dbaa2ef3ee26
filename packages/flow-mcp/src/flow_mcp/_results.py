"""A tool result sized for a client: the diff once, and a cap on the whole result.

MCP 2025-11-25, "Server Features > Tools > Tool Result": a result carries unstructured
``content`` and, with an ``outputSchema``, ``structuredContent``; a client hands the text to
its model, whose context is what the size costs (clients refuse or truncate results of a few
tens of thousands of tokens). So the report appears as follows (flow-mcp README, "Results"):

* ``structuredContent``: the report, the only place with the ``diff``;
* ``content``: two text blocks, a short summary (status, run id, changed files, where the
  diff is) and the report as JSON without its ``diff``;
* the whole result (both, as the compact ASCII JSON the wire carries) stays under
  ``max_chars`` characters: past it the diff is
  cut at a line boundary and ends with a line saying how much was left out and how to see all
  of it (``flow show RUN_ID --diff``); if the report without a diff is still too large, the
  text block keeps only the summary. The run id is in every result of a recorded run.
"""

from __future__ import annotations

import json
from typing import Any, Final

from flow_core import Report, is_error

#: Default cap on one tool result, in JSON characters (about 10k tokens at 4 characters a token,
#: well under the 25k-token limit clients commonly apply to one tool result).
DEFAULT_MAX_RESULT_CHARS: Final = 40_000
#: The smallest cap accepted: a summary and a report without its diff fit in it.
MIN_MAX_RESULT_CHARS: Final = 4_000
#: Room kept for the JSON around the two blocks and the diff's key.
_FRAME_CHARS: Final = 200

__all__ = ["DEFAULT_MAX_RESULT_CHARS", "MIN_MAX_RESULT_CHARS", "sized_result", "summary"]


def _json_len(value: Any) -> int:
    """Characters ``value`` takes on the wire (compact, ASCII-only JSON, as ``_framing``)."""
    return len(json.dumps(value, ensure_ascii=True, separators=(",", ":")))


def summary(report: Report, *, diff_chars: int, cut: bool) -> str:
    """The short text block: what happened, the run id, the files and where the diff is."""
    parts = [f"flow {report.kind}: {report.status}"]
    if report.run_id:
        parts.append(f"run {report.run_id}")
    if report.changed_files:
        names = ", ".join(report.changed_files[:10])
        more = len(report.changed_files) - 10
        parts.append(f"changed: {names}" + (f" and {more} more" if more > 0 else ""))
    if report.errors:
        parts.append("errors: " + ", ".join(sorted({e.code for e in report.errors})))
    line = "; ".join(parts)
    if diff_chars:
        where = f"the diff ({diff_chars} characters) is in structuredContent.diff"
        if cut:
            where += f", cut to fit this result; the whole diff: {_see_all(report.run_id)}"
        elif report.run_id:
            where += f" and in `flow show {report.run_id} --diff`"
        line += f"\n{where}"
    return line


def _see_all(run_id: str | None) -> str:
    if run_id:
        return f"`flow show {run_id} --diff`"
    return "not kept (no run store; run with the run store on to keep it)"


def _cut_diff(diff: str, room: int, run_id: str | None) -> str:
    """``diff`` cut at a line boundary so that it and its end line take ``room`` characters."""
    marker_room = 200
    budget = max(0, room - marker_room)
    head = diff[:budget]
    while head and _json_len(head) > budget:  # escapes make JSON longer than the text
        head = head[: max(0, len(head) - max(1, (_json_len(head) - budget)))]
    head = head[: head.rindex("\n") + 1] if "\n" in head else ""
    left = len(diff) - len(head)
    return head + f"… [diff cut: {left} of {len(diff)} characters left out; {_see_all(run_id)}]\n"


def sized_result(report: Report, max_chars: int = DEFAULT_MAX_RESULT_CHARS) -> dict[str, Any]:
    """A ``CallToolResult`` for ``report`` no larger than ``max_chars`` JSON characters.

    Args:
        report: the tool's report.
        max_chars: the cap on ``content`` plus ``structuredContent``, in JSON characters
            (at least :data:`MIN_MAX_RESULT_CHARS`; ``flow-mcp --max-result-chars``).

    Returns:
        ``{"content": [summary, report without diff], "structuredContent": report,
        "isError": flow_core.is_error(report)}``.
    """
    data = report.to_dict()
    diff: str = data.pop("diff", "") or ""
    lean = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    full_summary = summary(report, diff_chars=len(diff), cut=False)
    lean_size = len(lean) + _json_len(lean)  # in structuredContent, and as a string in text
    fixed = lean_size + _json_len(full_summary) + _FRAME_CHARS
    cut = bool(diff) and fixed + _json_len(diff) > max_chars
    text_report: str | None = lean
    if cut:
        cut_summary = summary(report, diff_chars=len(diff), cut=True)
        room = max_chars - lean_size - _json_len(cut_summary) - _FRAME_CHARS
        if room < 1_000:  # the report alone is large: the text keeps only the summary
            text_report = None
            room = max_chars - len(lean) - _json_len(cut_summary) - _FRAME_CHARS
        diff = _cut_diff(diff, room, report.run_id)
        full_summary = cut_summary
    blocks = [{"type": "text", "text": full_summary}]
    if text_report is not None:
        blocks.append({"type": "text", "text": text_report})
    data["diff"] = diff
    return {"content": blocks, "structuredContent": data, "isError": is_error(report)}
