"""The TUI's drawing of a report: the run's table, its checks, plan, review and diff, and
the sandbox line of ``/status``.

Everything that comes from the report (model text, check output, paths) is escaped: a ``[``
in it is text, never rich markup (``docs/architecture.md``, "Terminal UI").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from flow_cli._progress import describe_call
from flow_cli._summary import check_reason_lines, clean, token_lines

if TYPE_CHECKING:
    from rich.console import Console

    from flow_core import CheckResult, Report

__all__ = ["draw_report", "sandbox_summary"]

#: Failed tool calls listed (the last ones) in a run's summary table.
_FAILED_CALLS_SHOWN = 8

#: Plan lines shown after a trusted run (the whole plan is in the report).
_PLAN_LINES = 12


def draw_report(console: Console, report: Report) -> None:
    """Print a report as tables (the run, then its checks), then its diff in colour.

    Everything that comes from the report (model text, check output, paths) is escaped:
    a ``[`` in it is text, never rich markup.
    """
    colour = {"verified": "green", "passed": "green", "ok": "green", "interrupted": "yellow"}
    style = colour.get(report.status, "red")
    title = f"{report.kind}: [{style}]{escape(report.status)}[/]"
    if report.kind == "run":
        table = Table(title=title, show_header=False)
        table.add_row("verified", "[green]yes[/]" if report.verified else "[red]no[/]")
        reasons = report.verification.reasons if report.verification else []
        if reasons:
            table.add_row("why not", escape(clean("\n".join(reasons))))
        table.add_row("changed files", escape(clean("\n".join(report.changed_files) or "none")))
        table.add_row("tool calls", str(len(report.tool_calls)))
        tokens = token_lines(report)
        if tokens:
            table.add_row("tokens", escape(clean("\n".join(tokens))))
        for call in [c for c in report.tool_calls if not c.ok][-_FAILED_CALLS_SHOWN:]:
            line = describe_call(call.name, call.arguments, call.error, call.message)
            table.add_row(f"✗ {call.id}", escape(clean(line)))
        for err in report.errors:
            table.add_row("error", escape(clean(f"{err.message} [{err.code}]")))
        console.print(table)
        if report.checks:
            console.print(_checks_table(report.checks, "checks"))
    else:
        if report.checks:
            console.print(_checks_table(report.checks, title))
        else:
            console.print(title)
        for err in report.errors:
            console.print("[red]error[/]: " + escape(clean(f"{err.message} [{err.code}]")))
    if report.status == "interrupted":
        console.print("Interrupted; check process groups were killed. Back at the prompt.")
    if report.status == "read_only" and report.plan:
        console.print("[bold]Plan[/] (read-only session, nothing was changed):")
        console.print(escape(clean(report.plan)))
    elif report.kind == "run":
        _plan_and_review(console, report)
    if report.diff:
        console.print(Syntax(report.diff, "diff", word_wrap=True))


def _plan_and_review(console: Console, report: Report) -> None:
    """After a trusted run: the plan's first lines and the last review's verdict."""
    from flow_cli._summary import plan_excerpt

    lines, more = plan_excerpt(report.plan, _PLAN_LINES)
    if lines:
        console.print("[bold]Plan[/]")
        for line in lines:
            console.print("  " + escape(clean(line)), soft_wrap=True)
        if more:
            console.print(f"  [dim]… {more} more line(s) in the report's plan[/]")
    review = next(
        (c.review for c in reversed(report.verification_history) if c.review is not None),
        None,
    )
    if review is not None:
        verdict = "[green]approved[/]" if review.approved else "[red]not approved[/]"
        summary = escape(clean(review.summary)) if review.summary else ""
        console.print(f"[bold]Review[/]: {verdict}" + (f": {summary}" if summary else ""))
        for finding in review.findings:
            console.print("  - " + escape(clean(finding)), soft_wrap=True)


def _checks_table(checks: list[CheckResult], title: str) -> Table:
    """One row per check: result, required or optional, exit code, time and why."""
    table = Table(title=title)
    table.add_column("check", overflow="fold")
    table.add_column("result")
    table.add_column("needed")
    table.add_column("exit", justify="right")
    table.add_column("time", justify="right")
    table.add_column("jail")
    table.add_column("why", overflow="fold", min_width=16)
    for result in checks:
        ok = result.status == "passed"
        table.add_row(
            escape(result.name),
            Text(result.status, style="green" if ok else "red"),
            "required" if result.required else "optional",
            "-" if result.exit_code is None else str(result.exit_code),
            f"{result.duration_ms / 1000:.1f}s",
            Text(result.sandbox or "-", style="" if result.sandbox == "bwrap" else "yellow"),
            Text("\n".join(check_reason_lines(result, max_lines=3, width=100))),
        )
    return table


def sandbox_summary(report: Report) -> str:
    """``bwrap (mode auto, no network)``, or ``none: <why>`` for the /status table."""
    box = report.sandbox
    if box is None:
        return "-"
    net = "network" if box.network else "no network"
    head = f"{box.runs_as} (mode {box.mode}, {net})"
    return f"{head}\n{box.reason}" if box.reason else head
