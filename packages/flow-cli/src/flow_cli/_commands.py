"""``flow status``, ``flow check`` and ``flow run``: one JSON report on stdout, an exit code.

Errors are translated here, at the edge: a ``FlowError`` becomes an error report built by
``flow_core.error_report``, and the exit code comes from its code's category in flow-core's
catalogue (``flow_core.exit_code_for``: configuration, usage and trust errors exit 2, other
failures 1, an interrupt 130). Each prints a readable line on stderr and still a JSON report
on stdout.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal

from flow_cli._options import CommonOptions
from flow_cli._stdout import StdoutGuard

if TYPE_CHECKING:
    from flow_cli._progress import Progress
    from flow_core import ErrorCode, Event, FlowConfig, Report, Runtime

ReportKind = Literal["status", "check", "run"]


def exit_code_for(report: Report) -> int:
    """The process exit code of a report (0, 1, 2 or 130): ``flow_core.exit_code_for``.

    Derived from the report's status and its error codes' categories in flow-core's catalogue
    (usage 2, failure 1, interrupted 130).
    """
    import flow_core

    return flow_core.exit_code_for(report)


def build_runtime(
    opts: CommonOptions,
    *,
    on_event: Callable[[Event], None] | None = None,
    model: str | None = None,
    agent: Mapping[str, bool] | None = None,
) -> Runtime:
    """Load the configuration for ``opts`` and build a Runtime.

    Args:
        opts: the merged common flags; ``--workspace`` and ``--model`` are applied while the
            configuration loads, before anything else is built.
        on_event: progress sink, or None.
        model: a model that overrides ``opts.model`` (the TUI's ``/model NAME``).
        agent: ``[agent]`` consents set by ``run``'s flags (``allow_failing_baseline``,
            ``allow_test_edits``), applied over the loaded configuration.

    Every run of this runtime is recorded in the user's run store
    (``$XDG_STATE_HOME/flow/runs``).

    Raises:
        flow_core.ConfigError: the configuration is invalid (message names file, key, fix).
        flow_core.store.StoreError: the run store lies inside the workspace
            (``run_store_unusable``; exit 2).
    """
    from flow_core import load_config, open_runtime

    loaded = load_config(
        config_file=opts.config,
        workspace=opts.workspace,
        model=model if model is not None else opts.model,
    )
    if agent:
        config = loaded.config
        table = config.agent.model_copy(update=dict(agent))
        loaded = dataclasses.replace(loaded, config=config.model_copy(update={"agent": table}))
    return open_runtime(loaded, trusted=opts.trusted, on_event=on_event)


def status_report(opts: CommonOptions) -> tuple[Report, FlowConfig]:
    """``flow status``: the report and the config it describes, without building a Runtime.

    The run store's location is still checked (a store inside the workspace is refused, as
    for every other command), but nothing is opened: ``bench/bench_cli.py`` keeps this path
    a cold start of the config and the report.

    Raises:
        flow_core.ConfigError, flow_core.store.StoreError: as for :func:`build_runtime`.
    """
    from flow_core import config_status, load_config, run_store_root

    loaded = load_config(config_file=opts.config, workspace=opts.workspace, model=opts.model)
    run_store_root(loaded.config)
    report = config_status(
        loaded.config, trusted=opts.trusted, sources=loaded.sources, remembered=True
    )
    return report, loaded.config


def error_report(
    kind: ReportKind,
    code: ErrorCode,
    message: str,
    *,
    opts: CommonOptions | None = None,
    runtime: Runtime | None = None,
) -> Report:
    """A report for a failure that happened before the runtime could produce one.

    Built by ``flow_core.error_report`` (status ``interrupted`` for an interrupted code, else
    ``error``). When the configuration was already loaded (``runtime`` given), the report
    also carries what is known from it: workspace, config sources, models and checks.
    """
    import flow_core

    known: Report | None = None
    if runtime is not None:
        try:
            known = runtime.status()
        except Exception:  # describing the setup must never hide the original error
            known = None
    invocation = flow_core.Invocation()
    if opts is not None:
        invocation = flow_core.Invocation(workspace=opts.workspace, trusted=opts.trusted)
    return flow_core.error_report(kind, code, message, invocation=invocation, base=known)


def emit_usage_error(kind: str, code: ErrorCode, message: str) -> None:
    """Print a JSON error report for a usage error found by click (stdout stays one object)."""
    _emit_once(kind, code, message)


def emit_interrupted(kind: str) -> None:
    """Print an interrupted report when Ctrl-C came before the command's own handler."""
    kill_check_groups()
    _emit_once(kind, "interrupted", "interrupted by a signal")


def _emit_once(kind: str, code: ErrorCode, message: str) -> None:
    if kind not in ("status", "check", "run") or StdoutGuard.emitted:
        return
    report = error_report(kind, code, message)  # type: ignore[arg-type]
    with StdoutGuard() as out:
        out.emit(report.to_json())


def say(message: str) -> None:
    """One human line on stderr."""
    sys.stderr.write(f"flow: {message}\n")
    sys.stderr.flush()


class _Interrupts:
    """SIGINT/SIGTERM while a command runs: flow-core's rule, first interrupts, second forces.

    The first signal asks the runtime to stop (it kills the check process groups, and ``run``
    or ``check`` return an ``interrupted`` report). Before the runtime exists, or on a second
    signal, ``KeyboardInterrupt`` is raised to unwind at once.
    """

    def __init__(self) -> None:
        from flow_core import Interrupts

        self.runtime: Runtime | None = None
        #: The live view, when one is drawn: it shows "stopping…" and stops following roles.
        self.progress: Progress | None = None
        self.signals = Interrupts(self._interrupt)

    @property
    def count(self) -> int:
        return self.signals.count

    def _interrupt(self, signum: int) -> bool:
        if self.runtime is None:
            return False
        if self.progress is not None:
            self.progress.stopping()
        else:
            # os.write, not sys.stderr: a signal handler may run in the middle of another
            # write to sys.stderr, and the buffered writer refuses reentrant calls.
            _raw_stderr("flow: stopping… (press Ctrl-C again to force)\n")
        self.runtime.interrupt()
        return True


def _raw_stderr(text: str) -> None:
    """Write ``text`` to fd 2 without Python's buffers (safe inside a signal handler)."""
    with contextlib.suppress(OSError):
        os.write(2, text.encode("utf-8", "replace"))


def kill_check_groups() -> None:
    """Kill every check process group flow-core still tracks (best effort).

    ``Runtime.interrupt`` already kills its own groups; this also covers groups started by a
    runtime that is gone (``flow_core.kill_all_process_groups``).
    """
    from flow_core import kill_all_process_groups

    kill_all_process_groups()


def run_report_command(
    kind: ReportKind,
    opts: CommonOptions,
    *,
    name: str | None = None,
    task: str | None = None,
    isolate: bool | None = None,
    agent: Mapping[str, bool] | None = None,
) -> int:
    """Run ``status``, ``check`` or ``run`` and print exactly one JSON report on stdout.

    Args:
        kind: which command.
        opts: the merged common flags.
        name: the check name for ``check`` (None: every configured check).
        task: the task text for ``run``.
        isolate: ``run --isolate`` (None: the config's ``[runs] isolate``).
        agent: ``[agent]`` consents set by ``run``'s flags (``--allow-failing-baseline``,
            ``--allow-test-edits``); see :func:`build_runtime`.

    Returns:
        The exit code (see ``exit_code_for``; 2 for configuration and trust errors).
    """
    interrupts = _Interrupts()
    request = _Request(kind, name, task, isolate, agent)
    with StdoutGuard() as out, interrupts.signals.installed():
        code, report = _produce(request, opts, interrupts)
        out.emit(report.to_json())
    return code


@dataclasses.dataclass(frozen=True)
class _Request:
    """One report command as asked (see ``run_report_command`` for the fields)."""

    kind: ReportKind
    name: str | None = None
    task: str | None = None
    isolate: bool | None = None
    agent: Mapping[str, bool] | None = None


def _produce(request: _Request, opts: CommonOptions, interrupts: _Interrupts) -> tuple[int, Report]:
    """The command's exit code and report; every failure still gives one report."""
    kind = request.kind
    runtime: Runtime | None = None
    progress = None
    try:
        from flow_core import FlowError

        try:
            if kind != "status":
                from flow_cli._progress import progress_on_stderr

                progress = progress_on_stderr(run=kind == "run")
                interrupts.progress = progress
            if kind == "status":
                report, config = status_report(opts)
                _describe_setup(report, config)
            else:
                runtime = build_runtime(
                    opts,
                    on_event=progress.on_event if progress else None,
                    agent=request.agent,
                )
                interrupts.runtime = runtime
                report = _work(runtime, request, opts, progress)
        except FlowError as err:
            say(f"{err.message} [{err.code}]")
            report = error_report(kind, err.code, err.message, opts=opts, runtime=runtime)
            return exit_code_for(report), report
        finally:
            if progress is not None:
                progress.stop()
        report = _finish(kind, report, interrupts)
        return exit_code_for(report), report
    except KeyboardInterrupt:
        if runtime is not None:
            runtime.interrupt()
        kill_check_groups()
        if interrupts.count > 1:
            say("forced stop (second signal); check process groups were killed [interrupted]")
        else:
            say("interrupted; check process groups were killed [interrupted]")
        report = error_report(
            kind, "interrupted", "interrupted by a signal", opts=opts, runtime=runtime
        )
        return exit_code_for(report), report
    except Exception as err:  # a bug: still one JSON object on stdout, details on stderr
        import traceback

        traceback.print_exc(file=sys.stderr)
        say(f"internal error: {err!r}; please report it with the traceback above [internal_error]")
        report = error_report(kind, "internal_error", repr(err), opts=opts, runtime=runtime)
        return exit_code_for(report), report
    finally:
        interrupts.runtime = None
        if runtime is not None:
            close_quietly(runtime)


def _finish(kind: ReportKind, report: Report, interrupts: _Interrupts) -> Report:
    """The report as printed, once the command's lines went to stderr: the unjailed
    warning, interrupted or why not ok, and after a run the baseline warnings and leftovers."""
    _warn_unjailed(report)
    if interrupts.count and report.status != "interrupted":
        report = report.model_copy(update={"status": "interrupted", "ok": False})
    if report.status == "interrupted":
        say("interrupted; check process groups were killed [interrupted]")
    elif not report.ok:
        _explain(report)
    if kind == "run":
        from flow_cli._leftover import leftover_lines
        from flow_cli._summary import clean

        for warning in report.warnings:  # what the baseline check run found
            say(clean(f"warning: {warning.message} [{warning.code}]"))
        for line in leftover_lines(report):
            say(line)
    return report


def _work(
    runtime: Runtime, request: _Request, opts: CommonOptions, progress: Progress | None
) -> Report:
    """``check`` or ``run`` on a built runtime (trust first, then the hints, then the work)."""
    from flow_core import NotTrustedError

    kind = request.kind
    if kind == "check" and not opts.trusted:
        raise NotTrustedError(
            "flow check runs the configured checks, which execute project code; "
            "review [checks.*] in your operator config, then add --trusted",
        )
    _say_hints(runtime, verifies=kind == "run" and opts.trusted)
    if progress is not None:
        progress.start()
    if kind == "check":
        return runtime.check(request.name)
    return runtime.run(request.task or "", isolate=request.isolate)


def _warn_unjailed(report: Report) -> None:
    """``[sandbox] mode = "auto"`` without a usable bubblewrap: say so on stderr, every time."""
    sandbox = report.sandbox
    if sandbox is not None and sandbox.mode == "auto" and sandbox.runs_as == "none":
        say(sandbox.reason or "warning: checks run without a jail")


def close_quietly(runtime: Runtime) -> None:
    """Close a runtime; a failure to close is reported on stderr, never raised."""
    try:
        runtime.close()
    except Exception as err:
        say(f"could not close the runtime cleanly: {err!r} [internal_error]")


#: How many lines of the plan a read-only ``flow run`` shows on stderr.
PLAN_LINES = 12


def _describe_setup(report: Report, config: FlowConfig) -> None:
    """``flow status`` on stderr: a summary line on a terminal, and setup warnings always.

    The report has no field for the model backend, so its kind and ``base_url`` are shown
    here, for people, and only when stderr is a terminal (a script gets stdout alone).
    """
    from flow_cli._summary import clean, missing_executable, status_line

    if sys.stderr.isatty():
        say(status_line(report, config))
    for spec in report.configured_checks:
        warning = missing_executable(spec, report.workspace)
        if warning is not None:
            say(warning)
    for problem in report.warnings:
        if problem.code != "preflight_check_missing":  # said per check just above
            say(clean(f"warning: {problem.message} [{problem.code}]"))


def _say_hints(runtime: Runtime, *, verifies: bool) -> None:
    """Before a check or run: likely config mistakes that do not stop it (a seconds timeout);
    before a run that can verify (``flow run --trusted``) also the test checks whose pass
    would rest on their exit status alone. A read-only run runs no check and ``flow check``
    claims no verification, so the weak-evidence warning would be noise there."""
    from flow_cli._summary import clean

    wanted = ("check_timeout_short", "weak_evidence") if verifies else ("check_timeout_short",)
    for hint in runtime.status().warnings:
        if hint.code in wanted:
            say(clean(f"warning: {hint.message} [{hint.code}]"))


def _explain(report: Report) -> None:
    """Say on stderr, briefly, why a report is not ok."""
    from flow_cli._summary import check_line, clean

    if report.status == "read_only":
        _explain_read_only(report)
        return
    for err in report.errors:
        say(clean(f"{err.message} [{err.code}]"))
    if report.verification is not None:
        for reason in report.verification.reasons:
            say(clean(f"not verified: {reason} [not_verified]"))
    for result in report.checks:
        if result.status != "passed":
            say(check_line(result))


def _explain_read_only(report: Report) -> None:
    """One line for a read-only run, then the first lines of the plan it made."""
    from flow_cli._summary import clean, plan_excerpt

    say(
        "read-only run (no --trusted): planned only, nothing was written and no check ran; "
        "review the plan, then rerun with --trusted to apply it"
    )
    for err in report.errors:
        if err.code != "not_trusted":
            say(clean(f"{err.message} [{err.code}]"))
    lines, more = plan_excerpt(report.plan, PLAN_LINES)
    if not lines:
        say("the planner produced no plan")
        return
    sys.stderr.write("".join(f"  {line}\n" for line in lines))
    if more:
        sys.stderr.write(f"  … {more} more line{'s' if more != 1 else ''} in the report's plan\n")
    sys.stderr.flush()
