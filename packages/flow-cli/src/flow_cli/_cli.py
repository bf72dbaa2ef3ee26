"""The click application: ``flow [status|check|run|runs|show|undo|apply|tui|serve|completion]``.

Exit codes (``docs/architecture.md``, "Exit codes"): 0 ok, 1 failed or unverified, 2
configuration or usage error, 130 interrupted. ``status``, ``check`` and ``run`` print exactly
one JSON object on stdout, usage errors included (see ``run_cli``).
"""

from __future__ import annotations

import io
import sys
from typing import TYPE_CHECKING, Any

import click

from flow_cli.__about__ import __version__
from flow_cli._options import CommonOptions, collect, common_options, subcommand_in

if TYPE_CHECKING:
    from flow_core import ErrorCode

# click's own outcomes, before any command runs. The numbers are flow-core's EXIT_CODES
# (usage, interrupted); not imported from there so that ``flow --help`` stays cheap, and a
# test keeps them equal.
EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

#: Subcommands whose stdout is exactly one JSON object.
REPORT_COMMANDS = frozenset({"status", "check", "run"})


class _EditorTimeout(click.types.FloatParamType):
    """Seconds within flow-core's ``EDITOR_TIMEOUT_MIN``-``EDITOR_TIMEOUT_MAX`` range.

    flow-core is imported only when the option is given, so ``flow --help`` stays cheap.
    """

    name = "float"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        from flow_core import EDITOR_TIMEOUT_MAX, EDITOR_TIMEOUT_MIN

        seconds = super().convert(value, param, ctx)
        if not EDITOR_TIMEOUT_MIN <= seconds <= EDITOR_TIMEOUT_MAX:
            self.fail(
                f"{seconds:g} is not between {EDITOR_TIMEOUT_MIN:g} and "
                f"{EDITOR_TIMEOUT_MAX:g} seconds",
                param,
                ctx,
            )
        return seconds


class _EditorTimeoutOption(click.Option):
    """Fills the range and default into the help text from flow-core, when help is shown."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        from flow_core import EDITOR_TIMEOUT_DEFAULT, EDITOR_TIMEOUT_MAX, EDITOR_TIMEOUT_MIN

        record = super().get_help_record(ctx)
        if record is None:
            return None
        names, text = record
        limits = {"min": EDITOR_TIMEOUT_MIN, "max": EDITOR_TIMEOUT_MAX}
        return names, text.format(default=EDITOR_TIMEOUT_DEFAULT, **limits)


@click.group(
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@common_options
@click.version_option(__version__, "--version", prog_name="flow")
@click.pass_context
def cli(
    ctx: click.Context,
    workspace: str | None,
    config_file: str | None,
    trusted: bool,
    model: str | None,
) -> int:
    """Flow: bounded planner → coder → reviewer runs, verified by checks you approve.

    With no subcommand, starts the terminal UI. The common flags work before or after the
    subcommand. Exit codes: 0 ok, 1 failed/unverified, 2 configuration/usage error,
    130 interrupted.

    Ctrl-C (or SIGTERM) while a command works: the first stops it cleanly ("stopping…"; check
    processes are killed, the report says interrupted); a second forces an immediate exit.
    """
    opts = CommonOptions(workspace=workspace, config=config_file, trusted=trusted, model=model)
    ctx.obj = opts
    if ctx.invoked_subcommand is None:
        from flow_cli._tui import run_tui

        return run_tui(opts)
    return EXIT_OK


@cli.command()
@common_options
@click.pass_context
def status(ctx: click.Context, /, **values: str | bool | None) -> int:
    """Print the workspace, trust, config sources, models, checks and budgets as JSON.

    Sends no model request and runs no command; works with no model server running.
    """
    from flow_cli._commands import run_report_command

    return run_report_command("status", collect(ctx, **values))


@cli.command()
@click.argument("name", required=False)
@common_options
@click.pass_context
def check(ctx: click.Context, /, name: str | None, **values: str | bool | None) -> int:
    """Run every configured check (or only NAME) and print one JSON report.

    Needs --trusted: checks execute project code. Exit 0 when every selected check passed,
    1 when one failed, 2 for an unknown NAME or a missing --trusted.
    """
    from flow_cli._commands import run_report_command

    return run_report_command("check", collect(ctx, **values), name=name)


@cli.command()
@click.argument("task")
@click.option(
    "--isolate/--no-isolate",
    default=None,
    help="Work in a git worktree (or a private copy) and apply only a verified change "
    "(default: [runs] isolate).",
)
@click.option(
    "--allow-failing-baseline",
    is_flag=True,
    default=False,
    help="Go on when a required lint/type check already fails before any change, judging it "
    "by new findings only (default: [agent] allow_failing_baseline).",
)
@click.option(
    "--allow-test-edits",
    is_flag=True,
    default=False,
    help="Let test files the model changed or added count, each test only when it fails "
    "without the change and passes with it (default: [agent] allow_test_edits).",
)
@common_options
@click.pass_context
def run(
    ctx: click.Context,
    /,
    task: str,
    isolate: bool | None,
    allow_failing_baseline: bool,
    allow_test_edits: bool,
    **values: str | bool | None,
) -> int:
    """Run the verified planner → coder → reviewer workflow on TASK; print one JSON report.

    Without --trusted only the plan is made (read-only) and the exit code is 1. Exit 0 only
    when the run is verified. Every run is recorded (flow runs, flow show, flow undo); a run
    that could never be verified (no required check, a required check's program missing, an
    empty task) is refused before any model request, with exit code 2.
    """
    from flow_cli._commands import run_report_command

    return run_report_command(
        "run",
        collect(ctx, **values),
        task=task,
        isolate=isolate,
        agent={
            key: True
            for key, on in (
                ("allow_failing_baseline", allow_failing_baseline),
                ("allow_test_edits", allow_test_edits),
            )
            if on
        },
    )


@cli.command()
@common_options
@click.pass_context
def tui(ctx: click.Context, /, **values: str | bool | None) -> int:
    """Start the terminal UI (also what plain `flow` does)."""
    from flow_cli._tui import run_tui

    return run_tui(collect(ctx, **values))


@cli.command()
@common_options
@click.option(
    "--nvim",
    "nvim",
    default=None,
    metavar="SOCKET",
    help="Private Neovim socket of Rose, for the editor bridge (needs flow-cli[editor]).",
)
@click.option(
    "--editor-timeout",
    cls=_EditorTimeoutOption,
    type=_EditorTimeout(),
    default=None,
    metavar="SECONDS",
    help="Editor request timeout in seconds ({min:g}-{max:g}, default {default:g}).",
)
@click.option(
    "--max-result-chars",
    "max_result_chars",
    type=click.IntRange(min=4000),
    default=None,
    metavar="N",
    help="Cap on one tool result in JSON characters; past it the diff is cut and the result "
    "says `flow show RUN_ID --diff` (default 40000).",
)
@click.pass_context
def serve(
    ctx: click.Context,
    /,
    nvim: str | None,
    editor_timeout: float | None,
    max_result_chars: int | None,
    **values: str | bool | None,
) -> int:
    """Serve flow_status, flow_run and flow_check over MCP stdio (delegates to flow-mcp)."""
    from flow_cli._serve import serve_mcp

    return serve_mcp(
        collect(ctx, **values),
        nvim=nvim,
        editor_timeout=editor_timeout,
        max_result_chars=max_result_chars,
    )


@cli.command()
@click.argument("code", required=False)
def explain(code: str | None) -> int:
    """Explain an error CODE: its meaning, usual cause and fix (no CODE: list every code).

    Every error line Flow writes on stderr ends with its code in brackets, e.g.
    [check_timeout]; `flow explain check_timeout` says what it means and what to do.
    Exit 0, or 2 for an unknown CODE.
    """
    from flow_cli._explain import explain_code, list_codes

    return list_codes() if code is None else explain_code(code)


@cli.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> int:
    """Print the shell completion script for SHELL (bash, zsh or fish).

    \b
    bash: eval "$(flow completion bash)"   (e.g. in ~/.bashrc)
    zsh:  eval "$(flow completion zsh)"    (e.g. in ~/.zshrc)
    fish: flow completion fish > ~/.config/fish/completions/flow.fish
    """
    from click.shell_completion import get_completion_class

    completer = get_completion_class(shell)
    assert completer is not None  # the Choice above names only click's built-in shells
    click.echo(completer(cli, {}, "flow", "_FLOW_COMPLETE").source())
    return EXIT_OK


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout, not a table.")
@click.option("--all", "everywhere", is_flag=True, help="Runs of every workspace.")
@click.option(
    "--limit", type=click.IntRange(0), default=20, show_default=True, help="Newest N (0: all)."
)
@common_options
@click.pass_context
def runs(
    ctx: click.Context, /, as_json: bool, everywhere: bool, limit: int, **values: str | bool | None
) -> int:
    """List recorded runs, newest first: id, time, status, changed files, workspace, task.

    Works from any folder; the workspace only filters: the runs of --workspace (or the
    config's workspace_dir), else of the workspace holding the current folder, else every
    workspace's; --all lists every workspace's. The records live under
    $XDG_STATE_HOME/flow/runs (default ~/.local/state/flow/runs).
    """
    from flow_cli._runs import list_runs

    return list_runs(collect(ctx, **values), as_json=as_json, limit=limit, everywhere=everywhere)


@cli.command()
@click.argument("run_id", metavar="[ID]", required=False)
@click.option("--diff", "part", flag_value="diff", help="Print the run's diff.")
@click.option("--transcript", "part", flag_value="transcript", help="Print the transcript (JSONL).")
@click.option("--plan", "part", flag_value="plan", help="Print the plan.")
@click.option("--json", "part", flag_value="json", help="Print the run's JSON report.")
@common_options
@click.pass_context
def show(
    ctx: click.Context, /, run_id: str | None, part: str | None, **values: str | bool | None
) -> int:
    """Show a recorded run (default: this workspace's latest), or one part of its record."""
    from flow_cli._runs import show_run

    return show_run(collect(ctx, **values), run_id, part)


@cli.command()
@click.argument("run_id", metavar="[ID]", required=False)
@click.option("--force", is_flag=True, help="Restore even files that changed after the run.")
@common_options
@click.pass_context
def undo(
    ctx: click.Context, /, run_id: str | None, force: bool, **values: str | bool | None
) -> int:
    """Restore the files a run changed and remove the files it created (default: latest run).

    Refused, changing nothing, when any of them changed after the run, unless --force. The
    undo is recorded too: flow undo UNDO-ID puts the change back.
    """
    from flow_cli._runs import undo as undo_command

    return undo_command(collect(ctx, **values), run_id, force=force)


@cli.command(name="apply")
@click.argument("run_id", metavar="ID")
@common_options
@click.pass_context
def apply_command(ctx: click.Context, /, run_id: str, **values: str | bool | None) -> int:
    """Apply an isolated run's kept change to the workspace (refused if the files moved on)."""
    from flow_cli._runs import apply

    return apply(collect(ctx, **values), run_id)


def _usage_code(err: click.UsageError) -> ErrorCode:
    """The catalogue code of a click usage error: a missing ``--config`` file is
    ``config_not_found``, everything else ``usage_error``."""
    code: ErrorCode = "usage_error"
    param = getattr(err, "param", None)
    if isinstance(err, click.BadParameter) and param is not None and param.name == "config_file":
        code = "config_not_found"
    return code


def _show(err: click.ClickException, code: str) -> None:
    """click's message on stderr, its last line ending with ``[code]`` like every Flow error
    line (``flow explain CODE``)."""
    buffer = io.StringIO()
    err.show(file=buffer)
    sys.stderr.write(buffer.getvalue().rstrip("\n") + f" [{code}]\n")
    sys.stderr.flush()


def run_cli(argv: list[str]) -> int:
    """Run the click application without letting click call ``sys.exit``.

    A usage error prints click's message on stderr, its last line ending with the error code
    (``[usage_error]``, or ``[config_not_found]`` for a missing ``--config`` file), and exits
    2. When the subcommand was ``status``, ``check`` or ``run``, a JSON error report is also
    printed on stdout, so a script can always parse stdout as one JSON object.

    Args:
        argv: the arguments after the program name.

    Returns:
        The exit code.
    """
    try:
        result = cli.main(args=argv, prog_name="flow", standalone_mode=False)
    except click.UsageError as err:
        code = _usage_code(err)
        _show(err, code)
        command = None
        if err.ctx is not None and err.ctx.command.name in REPORT_COMMANDS:
            command = err.ctx.command.name
        elif err.ctx is None or err.ctx.command is cli:
            command = subcommand_in(argv, REPORT_COMMANDS)
        if command is not None:
            from flow_cli._commands import emit_usage_error

            emit_usage_error(command, code, err.format_message())
        return EXIT_USAGE
    except click.ClickException as err:
        _show(err, "usage_error")
        return err.exit_code
    except click.Abort:
        # Ctrl-C outside the commands' own handlers (e.g. while modules were loading).
        click.echo("flow: interrupted", err=True)
        command = subcommand_in(argv, REPORT_COMMANDS)
        if command is not None:
            from flow_cli._commands import emit_interrupted

            emit_interrupted(command)
        return EXIT_INTERRUPTED
    if isinstance(result, int):
        return result
    return EXIT_OK
