"""Running one operator-approved named check (``docs/architecture.md``, "Checks").

A check is an exact argv snapshotted when the config was loaded. It runs with the workspace root
as its working directory, in a new session (so it leads its own process group), with stdin from
``/dev/null`` and stdout/stderr captured through one pipe: nothing it prints reaches Flow's own
stdout, which the MCP server reserves for protocol frames. Only the last bytes of its output are
kept (``OUTPUT_TAIL_BYTES``).

When the check times out or is interrupted, the whole process group is terminated: SIGTERM,
a short grace period, then SIGKILL, and the leader is reaped. Even a check that exits normally
has its group killed before the leader is reaped, so background children it forgot cannot
outlive it.

Live process groups are kept in a module-level registry (``verify/_groups.py``) so that signal
handlers (the CLI's and the MCP server's SIGTERM handlers) can call
:func:`kill_all_process_groups`; the output is read by ``verify/_output.py``.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from flow_core._codes import ErrorCode
from flow_core._errors import ConfigError, EditorError
from flow_core._protocols import EditorBridge
from flow_core._report import CheckResult, ErrorInfo
from flow_core.config import executable_identity
from flow_core.verify._groups import (
    _LIVE,
    GRACE_S,
    _close_and_reap,
    _Live,
    _pidfd,
    _signal_group,
    _terminate,
    kill_all_process_groups,
    live_process_groups,
)
from flow_core.verify._jail import CheckScope, CheckWatch
from flow_core.verify._output import OUTPUT_TAIL_BYTES, pump
from flow_core.verify._sandbox import Jail, prepare_jail
from flow_core.verify._tree import build_unjailed

if TYPE_CHECKING:
    from flow_core.config import CheckConfig
    from flow_core.config._sandbox import SandboxConfig

__all__ = [
    "GRACE_S",
    "OUTPUT_TAIL_BYTES",
    "CheckScope",
    "CheckWatch",
    "kill_all_process_groups",
    "live_process_groups",
    "run_check",
]


@dataclass(frozen=True)
class _Job:
    """One call of ``run_check``: the check's name and config, and when it began."""

    name: str
    check: CheckConfig
    started: float

    def result(
        self,
        status: str,
        *,
        code: ErrorCode | None = None,
        message: str = "",
        jail: Jail | None = None,
        ran: tuple[int | None, bytes] = (None, b""),
    ) -> CheckResult:
        """The ``CheckResult``; ``ran`` is the exit code and the output tail."""
        exit_code, tail = ran
        return CheckResult(
            name=self.name,
            kind=self.check.kind,
            required=self.check.required,
            argv=list(self.check.cmd),
            status=status,  # type: ignore[arg-type]
            exit_code=exit_code,
            duration_ms=(time.perf_counter() - self.started) * 1000.0,
            output_tail=tail[-OUTPUT_TAIL_BYTES:].decode("utf-8", errors="replace"),
            error=ErrorInfo(code=code, message=message) if code else None,
            sandbox=jail.kind if jail is not None else None,
            sandbox_reason=jail.reason if jail is not None else None,
        )


def run_check(
    name: str,
    check: CheckConfig,
    *,
    cwd: str | Path,
    sandbox: SandboxConfig | None = None,
    scope: CheckScope | None = None,
    watch: CheckWatch | None = None,
) -> CheckResult:
    """Run one named check and return its result; never raises for the check's own outcome.

    Args:
        name: the check's name under ``[checks.NAME]``.
        check: the snapshotted config: ``cmd`` (exact argv), ``timeout`` (milliseconds),
            ``executable`` (resolved at load; None means it was not found).
        cwd: the workspace root.
        sandbox: ``[sandbox]``: the jail the check runs in (``flow_core.verify._sandbox``);
            None runs it unjailed with Flow's environment, like ``mode = "off"``.
        scope: the protected paths, the writable results folder and the tree the check runs
            on (``CheckScope``). With ``scope.tree`` the check runs in a fresh tree made from
            it (the evidence run, ``docs/architecture.md``, "The evidence run"): the jail's
            private copy, or without a jail a private copy the check runs in
            (``verify/_tree.build_unjailed``); without it the check runs on the workspace as
            it is (``CheckResult.tree`` ``"workspace"``).
        watch: the editor whose unsaved buffers refuse the check, the owner tag for
            ``kill_all_process_groups``, the stop poll and the start callback (``CheckWatch``).

    Returns:
        A ``CheckResult`` whose status is ``passed``, ``failed`` (code ``check_failed``),
        ``timeout`` (``check_timeout``), ``limit`` (``check_limit``: a whole-check limit of
        ``[sandbox]``, named in the message), ``missing`` (``check_missing``), ``refused``
        (``check_refused``, ``sandbox_unavailable``), ``interrupted`` (``check_interrupted``)
        or ``error`` (``check_error``). ``duration_ms`` is wall time in milliseconds;
        ``sandbox`` says how it ran.

    Raises:
        KeyboardInterrupt: re-raised after the process group was killed and reaped.
    """
    job = _Job(name, check, time.perf_counter())
    scope = scope or CheckScope()
    watch = watch or CheckWatch()
    refused = _refusal(job, watch.editor)
    if refused is not None:
        return refused
    try:
        jail, cwd = _jail_for(check, cwd, sandbox, scope)
    except ConfigError as err:
        return job.result("refused", code=err.code, message=err.message)
    except OSError as err:
        return job.result(
            "error",
            code="check_error",
            message=f"could not make the check's private copy of the workspace: {err}",
        )
    try:
        result = _limit_status(_start_and_wait(job, jail, cwd, watch), jail)
        return result if scope.tree is None else result.model_copy(update={"tree": "fresh"})
    finally:
        jail.close()


def _refusal(job: _Job, editor: EditorBridge | None) -> CheckResult | None:
    """The result of a check that must not start (unsaved buffers, a missing or replaced
    executable), or None."""
    check = job.check
    if editor is not None:
        try:
            dirty = editor.freshness().dirty_buffers
        except EditorError as err:
            return job.result(
                "refused",
                code="check_refused",
                message=f"editor freshness unavailable, check refused: {err}",
            )
        if dirty:
            return job.result(
                "refused",
                code="check_refused",
                message="unsaved editor buffers: " + ", ".join(dirty),
            )
    if check.executable is None:
        return job.result(
            "missing",
            code="check_missing",
            message=f"executable {check.cmd[0]!r} was not found when the config was loaded",
        )
    now_id = executable_identity(check.executable)
    if check.executable_id is not None and now_id != check.executable_id:
        # The operator approved the program that was there at load; this is another one
        # (replaced, re-linked or rewritten through a rename). Best effort: the window between
        # this stat and exec remains, as for any path-based exec.
        return job.result(
            "refused",
            code="check_executable_changed",
            message=f"executable {check.executable!r} is not the file that was there when the "
            "config was loaded; fix: review it, then start Flow again to approve it",
        )
    return None


def _jail_for(
    check: CheckConfig, cwd: str | Path, sandbox: SandboxConfig | None, scope: CheckScope
) -> tuple[Jail, str | Path]:
    """The jail and the folder the check starts in (a private tree unjailed with a spec).

    Raises:
        ConfigError: the jail is required but unusable.
        OSError: the private copy could not be made (nothing is left behind).
    """
    assert check.executable is not None
    jail = prepare_jail(check.executable, check.cmd, sandbox, workspace=cwd, scope=scope)
    if scope.tree is not None and jail.kind == "none":
        try:
            private = build_unjailed(cwd, scope.tree)
        except BaseException:
            jail.close()
            raise
        jail._cleanups.append(private.close)
        cwd = private.root
    return jail, cwd


def _limit_status(result: CheckResult, jail: Jail) -> CheckResult:
    """``limit`` (``check_limit``, naming the ``[sandbox]`` keys) when the check ran into a
    whole-check limit (``Jail.limits_hit``); an interrupted check stays interrupted."""
    hit = jail.limits_hit()
    if not hit or result.status == "interrupted":
        return result
    names = ", ".join(f"sandbox.{key}" for key in hit)
    message = f"check {result.name!r} ran into its whole-check limit: {names}"
    return result.model_copy(
        update={"status": "limit", "error": ErrorInfo(code="check_limit", message=message)}
    )


def _start_and_wait(job: _Job, jail: Jail, cwd: str | Path, watch: CheckWatch) -> CheckResult:
    """Start the (jailed) check, wait for it, end every process it left; see ``run_check``."""
    started = _start(job, jail, cwd, watch)
    if isinstance(started, CheckResult):
        return started
    entry = started
    try:
        entry.ns_pidfd = _pidfd(jail.started(lambda: _signal_group(entry.pgid, signal.SIGKILL)))
        tail, timed_out = pump(entry, job.check.timeout / 1000.0, watch.should_stop)
    except BaseException:
        entry.interrupted = True
        _terminate(entry, GRACE_S)
        _close_and_reap(entry)
        raise
    _close_and_reap(entry)
    return _ending(job, jail, entry, tail, timed_out=timed_out)


def _start(job: _Job, jail: Jail, cwd: str | Path, watch: CheckWatch) -> _Live | CheckResult:
    """``Popen`` the jail's argv in a new session and register its group; a result when the
    program could not be started."""
    proc: subprocess.Popen[bytes] | None = None
    try:
        with jail.spawning():  # born in the check's cgroups
            proc = subprocess.Popen(
                jail.argv,
                executable=jail.executable,
                cwd=cwd,
                env=jail.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                pass_fds=jail.pass_fds,
                preexec_fn=jail.preexec,  # noqa: PLW1509 - only setrlimit and one write
            )
        entry = _Live(proc=proc, pgid=proc.pid, owner=watch.owner)
        _LIVE[proc.pid] = entry
        if watch.on_start is not None:
            with contextlib.suppress(Exception):
                watch.on_start(proc.pid)
    except BaseException as err:
        if proc is not None and proc.pid not in _LIVE:
            # Interrupted (Ctrl-C, SIGTERM) between the start and the registration: the group
            # is not yet known to kill_all_process_groups, so end it here.
            _signal_group(proc.pid, signal.SIGKILL)
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                proc.wait()
                if proc.stdout is not None:
                    proc.stdout.close()
        if not isinstance(err, OSError):
            raise
        if isinstance(err, FileNotFoundError):
            return job.result(
                "missing",
                code="check_missing",
                message=f"executable {job.check.executable!r} is gone: {err.strerror}",
                jail=jail,
            )
        return job.result(
            "error",
            code="check_error",
            message=f"could not start {job.check.cmd[0]!r}: {err.strerror or err}",
            jail=jail,
        )
    return entry


def _ending(job: _Job, jail: Jail, entry: _Live, tail: bytes, *, timed_out: bool) -> CheckResult:
    """The result of a check that ran: interrupted, timed out, failed or passed."""
    name, timeout, code = job.name, job.check.timeout, entry.proc.returncode
    ran = (code, tail)
    if entry.interrupted:
        message = f"check {name!r} was interrupted; its process group was killed"
        return job.result(
            "interrupted", code="check_interrupted", message=message, jail=jail, ran=ran
        )
    if timed_out:
        hint = (
            f" (check timeouts are milliseconds: did you mean {timeout * 1000}?)"
            if timeout < 1000
            else ""
        )
        message = f"check {name!r} ran past its timeout of {timeout} ms{hint}"
        return job.result("timeout", code="check_timeout", message=message, jail=jail, ran=ran)
    if code != 0:
        message = f"check {name!r} exited with status {code}"
        return job.result("failed", code="check_failed", message=message, jail=jail, ran=ran)
    return job.result("passed", jail=jail, ran=(0, tail))
