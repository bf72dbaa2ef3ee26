"""The TUI's run-store commands: ``/runs``, ``/show [ID]``, ``/diff [ID]``, ``/undo [ID]``.

They do what ``flow runs``, ``flow show``, ``flow show --diff`` and ``flow undo`` do (see
``_runs.py``), drawn with rich. Everything shown comes from a run record (model text, paths),
so it is cleaned of control sequences and escaped: a ``[`` is text, never markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from flow_cli._options import CommonOptions
from flow_cli._summary import clean, shorten

if TYPE_CHECKING:
    from flow_cli._runs import StoreContext

#: Help lines for the TUI's ``/help`` table.
RUN_HELP: tuple[tuple[str, str], ...] = (
    ("/runs", "this workspace's recorded runs, newest first"),
    ("/show [ID]", "a recorded run (default: the latest): status, files, next steps"),
    ("/diff [ID]", "a recorded run's diff (default: the latest)"),
    ("/undo [ID] [--force]", "restore what a run changed (default: the latest run)"),
)
RUN_COMMANDS = frozenset({"/runs", "/show", "/diff", "/undo"})


def handle_run_command(command: str, rest: str, console: Console, opts: CommonOptions) -> None:
    """Run one of ``RUN_COMMANDS``; a store problem is printed, never raised."""
    from flow_cli._runs import open_context
    from flow_core.store import StoreError
    from flow_safeio import SafeIOError

    try:
        ctx = open_context(opts)
        if command == "/runs":
            _runs(console, ctx)
        elif command == "/show":
            _show(console, ctx, rest or None)
        elif command == "/diff":
            _diff(console, ctx, rest or None)
        else:
            _undo(console, ctx, rest)
    except (StoreError, SafeIOError) as err:
        code = getattr(err, "code", "undo_failed")
        message = getattr(err, "message", str(err))
        console.print("[red]error[/]: " + escape(clean(f"{message} [{code}]")))


def _runs(console: Console, ctx: StoreContext) -> None:
    from flow_cli._runs import changed_of, describe_status

    infos = ctx.store.list(ctx.workspace)[:20]
    if not infos:
        console.print(escape(f"No runs recorded for {ctx.workspace} yet."))
        return
    table = Table(title="Runs (newest first)")
    for column in ("id", "time (UTC)", "status", "changed", "task"):
        table.add_column(column, overflow="fold")
    for info in infos:
        changed = changed_of(ctx, info)
        table.add_row(
            escape(info.id),
            escape(info.created.replace("T", " ")[:19]),
            escape(describe_status(info)),
            escape(clean("\n".join(changed)) or "-"),
            escape(shorten(clean(info.task or "").replace("\n", " "), 60) or "-"),
        )
    console.print(table)


def _show(console: Console, ctx: StoreContext, run_id: str | None) -> None:
    from flow_cli._runs import pick, show_summary

    console.print(escape(clean(show_summary(ctx, pick(ctx, run_id)))), end="")


def _diff(console: Console, ctx: StoreContext, run_id: str | None) -> None:
    from flow_cli._runs import pick

    info = pick(ctx, run_id)
    diff = ctx.store.open(info).read_text("diff.patch")
    if not diff:
        console.print(escape(f"Run {info.id} has no diff (nothing changed, or it never ended)."))
        return
    console.print(Syntax(clean(diff), "diff", word_wrap=True))


def _undo(console: Console, ctx: StoreContext, rest: str) -> None:
    from flow_cli._runs import pick, workspace_for
    from flow_core.store import undo_run

    words = rest.split()
    force = "--force" in words
    ids = [w for w in words if w != "--force"]
    info = pick(ctx, ids[0] if ids else None)
    with workspace_for(ctx, info) as ws:
        result = undo_run(ctx.store, info, ws, force=force)
    for path in result.restored:
        console.print(escape(f"restored {clean(path)}"))
    for path in result.removed:
        console.print(escape(f"removed {clean(path)} (the run created it)"))
    if result.undo_id:
        console.print(escape(f"Undid {info.id}; /undo {result.undo_id} puts it back."))
    else:
        console.print(escape(f"Nothing to undo: the files of {info.id} hold their old content."))
