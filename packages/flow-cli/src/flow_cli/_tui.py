"""The terminal UI: a prompt loop over the same verified runtime as ``flow run``.

On a terminal, input has line editing, a persistent history and bracketed paste (see
``flow_cli._input``); with piped stdin it is read line by line. Ctrl-D (end of input) leaves
with exit code 0. A plain line is a task, exactly like ``/build``: each
task is a new ``Runtime.run`` call, so every role starts from a fresh context. While a task
runs, a live view shows the role, turn, tool calls and checks; Ctrl-C interrupts the task (the
runtime kills the check process groups) and returns to the prompt.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from flow_cli._options import CommonOptions
from flow_cli._progress import LiveProgress
from flow_cli._summary import (
    backend_summary,
    budget_rows,
    clean,
    missing_executable,
    models_summary,
)
from flow_cli._tui_report import draw_report, sandbox_summary
from flow_cli._tui_runs import RUN_COMMANDS, RUN_HELP, handle_run_command

if TYPE_CHECKING:
    from flow_core import Event, Report, Runtime

#: Commands of the old tool that Flow deliberately does not offer (``docs/architecture.md``,
#: "Terminal UI").
UNAVAILABLE = {
    "/plugins": "plugins would run unreviewed code inside Flow, so they are not supported",
    "/evolve": "self-modification is not part of Flow's bounded, verified workflow",
    "/memory": "every task starts from fresh role contexts; nothing is remembered between tasks",
    "/feedback": "there is no feedback channel; review the report and run a new task instead",
}

HELP: tuple[tuple[str, str], ...] = (
    ("/help", "this list"),
    ("/status", "workspace, trust, config files, backend, models, checks and usage limits"),
    ("/check [name]", "run every configured check, or one (needs --trusted)"),
    ("/tools", "the tools each role may call"),
    ("/models", "models installed on the model server"),
    ("/model NAME", "use an installed model for every role"),
    ("/build REQUEST", "run the verified workflow on REQUEST"),
    *RUN_HELP,
    ("/clear", "clear the screen"),
    ("/quit", "leave (Ctrl-D does the same)"),
    ("any other line", "a task, run exactly like /build"),
    ("Ctrl-C (task running)", "stop it: 'stopping…' at once, its checks are killed; again: force"),
    ("Ctrl-C (at the prompt)", "clear the line"),
    ("Up / Down", "earlier lines (history kept between sessions)"),
)


class Tui:
    """One TUI session.

    Args:
        opts: the merged common flags.
        console: where everything is drawn (the terminal).
    """

    def __init__(self, opts: CommonOptions, console: Console) -> None:
        self.opts = opts
        self.console = console
        self.model: str | None = opts.model
        self.runtime: Runtime | None = None
        self._progress: LiveProgress | None = None

    # -- runtime ----------------------------------------------------------------------------

    def open(self) -> None:
        """Build the runtime for the current model.

        Raises:
            flow_core.ConfigError: the configuration is invalid.
        """
        from flow_cli._commands import build_runtime

        runtime = build_runtime(self.opts, on_event=self._on_event, model=self.model)
        if self.runtime is not None:
            self.runtime.close()
        self.runtime = runtime

    def close(self) -> None:
        """Release the runtime."""
        if self.runtime is not None:
            self.runtime.close()
            self.runtime = None

    def _on_event(self, event: Event) -> None:
        progress = self._progress
        if progress is not None:
            progress.on_event(event)

    @property
    def rt(self) -> Runtime:
        if self.runtime is None:
            self.open()
        assert self.runtime is not None
        return self.runtime

    # -- the loop ---------------------------------------------------------------------------

    def loop(self, read: Callable[[str], str] | None = None) -> int:
        """Read and handle lines until /quit or end of input.

        Args:
            read: reads one line given a prompt (default: the console's ``input``).

        Returns:
            0.
        """
        from flow_cli._input import make_reader
        from flow_core import FlowError

        reader = read or make_reader(self.console)
        self.banner()
        while True:
            try:
                line = reader("flow> ")
            except EOFError:
                self.console.print()
                return 0
            except KeyboardInterrupt:
                self.console.print("[dim](Ctrl-C) line cleared; /quit or Ctrl-D leaves[/]")
                continue
            try:
                if not self.handle(line.strip()):
                    return 0
            except KeyboardInterrupt:
                self.console.print(
                    "[yellow]forced stop[/] (second Ctrl-C): the task was abandoned at once; "
                    "its check process groups were killed"
                )
            except FlowError as err:
                self.console.print("[red]error[/]: " + escape(f"{err.message} [{err.code}]"))

    def banner(self) -> None:
        """Say where we are and how to get help.

        One fact per line, models grouped by name (one line per distinct model), so nothing
        is broken in the middle at 80 columns; lines are soft-wrapped (rich inserts no line
        breaks, a terminal wraps a long path itself and a pipe keeps it whole).
        """
        runtime = self.rt
        report = runtime.status()
        trust = "trusted" if report.trusted else "read-only (start with --trusted to edit)"
        self.console.print(
            f"[bold]Flow[/] {escape(report.flow_version)} · {escape(trust)}", soft_wrap=True
        )
        self.console.print(f"workspace: {escape(clean(report.workspace or '-'))}", soft_wrap=True)
        self.console.print(escape(clean(backend_summary(runtime.config))), soft_wrap=True)
        for i, line in enumerate(models_summary(report.models) or ["-"]):
            label = "models: " if i == 0 else "        "
            self.console.print(label + escape(clean(line)), soft_wrap=True)
        for spec in report.configured_checks:
            warning = missing_executable(spec, report.workspace)
            if warning is not None:
                self.console.print(f"[yellow]{escape(warning)}[/]", soft_wrap=True)
        for problem in report.warnings:
            if problem.code != "preflight_check_missing":  # said per check just above
                text = f"warning: {problem.message} [{problem.code}]"
                self.console.print(f"[yellow]{escape(clean(text))}[/]", soft_wrap=True)
        if report.sandbox is not None and report.sandbox.runs_as == "none":
            why = report.sandbox.reason or "checks run without a jail"
            self.console.print(f"[yellow]sandbox: {escape(clean(why))}[/]", soft_wrap=True)
        self.console.print("Type a task, or /help for commands. Ctrl-D leaves.")

    def handle(self, line: str) -> bool:
        """Handle one input line; returns False when the session should end."""
        if not line:
            return True
        if not line.startswith("/"):
            self.task(line)
            return True
        command, _, rest = line.partition(" ")
        command = command.lower()
        rest = rest.strip()
        if command in ("/quit", "/exit", "/q"):
            return False
        if command in UNAVAILABLE:
            self.console.print(escape(f"{command} is not available: {UNAVAILABLE[command]}."))
        elif command == "/help":
            self.show_help()
        elif command == "/status":
            self.show_status()
        elif command == "/check":
            self.check(rest or None)
        elif command == "/tools":
            self.show_tools()
        elif command == "/models":
            self.show_models()
        elif command == "/model":
            self.set_model(rest)
        elif command == "/build":
            if rest:
                self.task(rest)
            else:
                self.console.print("usage: /build REQUEST")
        elif command in RUN_COMMANDS:
            handle_run_command(command, rest, self.console, self.opts)
        elif command == "/clear":
            self.console.clear()
        else:
            self.console.print(f"unknown command {escape(command)}; type /help for the list")
        return True

    # -- commands ---------------------------------------------------------------------------

    def show_help(self) -> None:
        table = Table(title="Commands", show_header=False, box=None)
        for name, what in HELP:
            table.add_row(f"[bold]{escape(name)}[/]", escape(what))
        self.console.print(table)
        self.console.print(
            escape("Not available: " + ", ".join(UNAVAILABLE) + " (type one to see why).")
        )

    def show_status(self) -> None:
        runtime = self.rt
        report = runtime.status()
        table = Table(title="Status", show_header=False)
        table.add_row("workspace", escape(clean(report.workspace or "-")))
        table.add_row("trusted", "yes" if report.trusted else "no (read-only)")
        sources = "\n".join(report.config_sources) or "(defaults only)"
        table.add_row("config", escape(clean(sources)))
        table.add_row("backend", escape(clean(backend_summary(runtime.config, label=False))))
        for role, name in report.models.items():
            table.add_row(f"model: {escape(role)}", escape(clean(name)))
        for spec in report.configured_checks:
            flags = "required" if spec.required else "optional"
            found = "" if spec.executable else "\nnot found: install it or fix cmd[0]"
            table.add_row(
                f"check: {escape(spec.name)}",
                escape(
                    clean(f"{spec.kind}, {flags}, {spec.filetypes}: {' '.join(spec.argv)}{found}")
                ),
            )
        if report.sandbox is not None:
            table.add_row("sandbox", escape(clean(sandbox_summary(report))))
        # A status report carries no budgets (nothing ran), so show the limits a run enforces.
        agent = runtime.config.agent
        table.add_row("max model turns (per role call)", str(agent.max_iterations))
        table.add_row("max cycles", str(agent.max_cycles))
        table.add_row("max tool calls (per task)", str(agent.max_tool_calls))
        for label, value in self._budget_rows(runtime):
            table.add_row(label, escape(clean(value)))
        self.console.print(table)

    def _budget_rows(self, runtime: Runtime) -> list[tuple[str, str]]:
        """Each role's window, context budget and reply cap, computed as a run computes them
        (``Runtime.role_budgets``); the configured maximum when no backend can be built."""
        from flow_core import BackendError

        try:
            return budget_rows(runtime.role_budgets())
        except BackendError as err:
            limit = runtime.config.agent.max_context_chars
            why = f"agent.max_context_chars; the window was not asked: {err.message} [{err.code}]"
            return [("max context chars", f"{limit} ({why})")]

    def show_tools(self) -> None:
        runtime = self.rt
        table = Table(title="Tools per role")
        table.add_column("role")
        table.add_column("tools")
        for role, names in self._tools(runtime).items():
            table.add_row(escape(role), escape(", ".join(names) or "-"))
        self.console.print(table)
        if not self.opts.trusted:
            self.console.print("[dim]Read-only session: the coder gets no write or check tools.[/]")

    def _tools(self, runtime: Runtime) -> dict[str, list[str]]:
        """Tool names per role, from flow-core's one role → toolset rule (``role_tools``).

        Planner and reviewer read; the coder also writes and runs configured checks, but only
        in a trusted session. Editor tools appear only with ``flow serve --nvim``.
        """
        from flow_core import ROLES, role_tools

        return {
            role: list(
                role_tools(role, trusted=self.opts.trusted, has_checks=bool(runtime.config.checks))
            )
            for role in ROLES
        }

    def _installed(self) -> list[str] | None:
        from flow_core import BackendError

        try:
            return self.rt.list_models()
        except BackendError as err:
            self.console.print(
                "[red]The model server is not reachable[/]: "
                + escape(f"{err.message} [{err.code}]")
            )
            return None

    def show_models(self) -> None:
        names = self._installed()
        if names is None:
            return
        if not names:
            self.console.print("No models are installed (for Ollama: `ollama pull MODEL`).")
            return
        self.console.print("Installed models:")
        for name in names:
            mark = " [green](in use)[/]" if name == self.model else ""
            self.console.print(f"  {escape(name)}{mark}")

    def set_model(self, name: str) -> None:
        if not name:
            self.console.print("usage: /model NAME  (see /models)")
            return
        names = self._installed()
        if names is None:
            return
        if name not in names:
            listed = ", ".join(names) or "none"
            self.console.print(
                f"{escape(name)} is not installed; installed models: {escape(listed)}"
            )
            return
        previous = self.model
        self.model = name
        try:
            self.open()
        except Exception:
            self.model = previous
            raise
        self.console.print(f"Every role now uses {escape(name)}.")

    def check(self, name: str | None) -> None:
        if not self.opts.trusted:
            self.console.print(escape("Checks run project code, so /check needs --trusted."))
            self.console.print(
                escape("Review [checks.*] in your operator config, then restart with --trusted.")
            )
            return
        from flow_core import UnknownCheckError

        try:
            report = self._interruptible(lambda rt: rt.check(name), checks_only=True)
        except UnknownCheckError as err:
            self.console.print(f"[red]{escape(err.message)}[/]")
            return
        self.summary(report)

    def task(self, text: str) -> None:
        from flow_cli._leftover import leftover_lines

        report = self._interruptible(lambda rt: rt.run(text))
        self.summary(report)
        for line in leftover_lines(report):  # what an unverified run left, and /undo
            self.console.print(f"[yellow]{escape(line.replace('flow undo', '/undo'))}[/]")

    def _interruptible(
        self, action: Callable[[Runtime], Report], *, checks_only: bool = False
    ) -> Report:
        runtime = self.rt
        progress = LiveProgress(self.console, checks_only=checks_only)
        self._progress = progress
        from flow_core import Interrupts

        # Ctrl-C: the first stops the task (check process groups killed), the second forces.
        ctrl_c = Interrupts(lambda _signum: _stop(runtime, progress), signals=(signal.SIGINT,))
        try:
            with ctrl_c.installed():
                progress.start()
                return action(runtime)
        finally:
            progress.stop()
            self._progress = None

    # -- results ----------------------------------------------------------------------------

    def summary(self, report: Report) -> None:
        """Print a report as tables, its plan and review, and its diff (``_tui_report``)."""
        draw_report(self.console, report)


def run_tui(opts: CommonOptions) -> int:
    """Start the terminal UI.

    Returns:
        0 when the user leaves (/quit or Ctrl-D), 2 when the configuration is invalid.

    Raises:
        SystemExit: with code 130 on SIGTERM, after the running task's check process groups
            were killed.
    """
    from flow_cli._commands import say
    from flow_core import EXIT_CODES, ConfigError, Interrupts, error_category

    # emoji=False: ":name:" in a report (check output, a plan) stays text.
    console = Console(emoji=False)
    tui = Tui(opts, console)
    try:
        tui.open()
    except ConfigError as err:
        say(f"{err.message} [{err.code}]")
        return EXIT_CODES[error_category(err.code)]

    def leave(signum: int) -> bool:
        # SIGTERM or SIGHUP (the terminal closed): stop a running task (its check process
        # groups are killed, its record says interrupted), then leave.
        if tui.runtime is not None:
            tui.runtime.interrupt()
        raise SystemExit(130)

    try:
        with Interrupts(leave, signals=(signal.SIGTERM, signal.SIGHUP)).installed():
            return tui.loop()
    finally:
        tui.close()


def _stop(runtime: Runtime, progress: LiveProgress | None = None) -> bool:
    """The first Ctrl-C of a task: show "stopping…" at once, then ask the runtime to stop."""
    if progress is not None:
        progress.stopping()
    runtime.interrupt()
    return True
