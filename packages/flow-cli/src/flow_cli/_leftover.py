"""What a run left behind, in words: shared by ``flow run`` (stderr) and the TUI.

After an unverified, failed or interrupted run the user must learn which files are changed on
disk and how to take them back (``flow undo ID``); after an isolated run that was not applied,
where its change is kept (``flow show ID --diff``, ``flow apply ID``). A verified run that
changed the workspace says nothing here: its report is the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flow_cli._summary import clean

if TYPE_CHECKING:
    from flow_core import Report

__all__ = ["leftover_lines"]

_LISTED = 10


def _files(paths: list[str]) -> str:
    shown = ", ".join(paths[:_LISTED])
    more = len(paths) - _LISTED
    return clean(shown + (f" and {more} more" if more > 0 else ""))


def leftover_lines(report: Report) -> list[str]:
    """Human lines (no ``flow:`` prefix) about the files a run left changed or kept aside."""
    if report.kind != "run":
        return []
    run_id = report.run_id
    iso = report.isolation
    if iso is not None:
        if iso.applied or not report.changed_files:
            return []
        why = clean(iso.reason or "not verified")
        kept = [
            f"isolated run not applied ({why}); the workspace is unchanged; the change to "
            f"{_files(report.changed_files)} is kept in the run record"
        ]
        if run_id:
            kept.append(f"see it: flow show {run_id} --diff; apply it: flow apply {run_id}")
        return kept
    if report.verified:
        return []
    lines: list[str] = []
    if report.rolled_back:
        lines.append(
            f'rolled back ([runs] on_unverified = "rollback"): {_files(report.rolled_back)}'
        )
    left = [p for p in report.changed_files if p not in report.rolled_back]
    if left:
        lines.append(f"left changed in the workspace, not verified: {_files(left)}")
        if run_id:
            lines.append(f"to undo: flow undo {run_id}   (details: flow show {run_id})")
    return lines
