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

Live process groups are kept in a module-level registry so that signal handlers (the CLI's and
the MCP server's SIGTERM handlers) can call :func:`kill_all_process_groups`.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from flow_core._codes import ErrorCode
from flow_core._errors import ConfigError, EditorError
from flow_core._protocols import EditorBridge
from flow_core._report import CheckResult, ErrorInfo
from flow_core.config import executable_identity
from flow_core.verify._sandbox import Jail, prepare_jail
from flow_core.verify._tree import TreeSpec, build_unjailed

if TYPE_CHECKING:
    from flow_core.config import CheckConfig
    from flow_core.config._sandbox import SandboxConfig

__all__ = [
    "GRACE_S",
    "OUTPUT_TAIL_BYTES",
    "kill_all_process_groups",
    "live_process_groups",
    "run_check",
]

#: Bytes of combined stdout+stderr kept per check (the tail).
OUTPUT_TAIL_BYTES = 16 * 1024
#: Seconds between SIGTERM and SIGKILL when a check's group is terminated.
GRACE_S = 0.5
_READ_CHUNK = 65536
#: Seconds the pipe is still read after the leader exited (escaped processes may hold it).
_AFTER_EXIT_S = 0.5
_HAVE_PIDFD = hasattr(os, "pidfd_open")


@dataclass
class _Live:
    """One running check's process group."""

    proc: subprocess.Popen[bytes]
    pgid: int
    owner: object
    interrupted: bool = False
    #: pidfd of bubblewrap's pid 1 (its pid namespace ends when it does), or -1.
    ns_pidfd: int = -1


# pid -> entry. Plain dict operations only (no lock): kill_all_process_groups may run inside a
# signal handler on the main thread while that same thread is in the middle of run_check.
_LIVE: dict[int, _Live] = {}


def live_process_groups() -> list[int]:
    """Process-group ids of the checks running right now (for diagnostics and tests)."""
    return [e.pgid for e in _snapshot()]


def _snapshot(owner: object | None = None) -> list[_Live]:
    for _ in range(5):
        try:
            entries = list(_LIVE.values())
        except RuntimeError:  # changed size while another thread copied it
            continue
        return [e for e in entries if owner is None or e.owner is owner]
    return []


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_members_alive(pgid: int) -> bool:
    """True while a non-zombie process other than a reaped leader is in ``pgid``.

    Uses ``/proc`` where it exists (Linux); elsewhere falls back to ``killpg(pgid, 0)``, which
    also counts zombies and so errs on the side of "alive".
    """
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    with os.scandir(proc) as entries:
        pids = [e.name for e in entries if e.name.isdigit()]
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # comm may contain spaces and parentheses: fields start after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) == pgid:
            return True
    return False


_HAVE_WAITID = hasattr(os, "waitid") and hasattr(os, "WNOWAIT")


def _leader_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Has the leader exited? Where ``waitid(WNOWAIT)`` exists it is not reaped yet, so its
    pgid cannot be reused while the rest of the group is killed; elsewhere it is reaped."""
    if proc.returncode is not None:
        return True
    if not _HAVE_WAITID:
        return proc.poll() is not None
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _terminate(entry: _Live, grace_s: float) -> None:
    """SIGTERM the group, wait up to ``grace_s`` for the leader, then SIGKILL the group."""
    _signal_group(entry.pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    if _HAVE_PIDFD:
        try:
            pidfd = os.pidfd_open(entry.proc.pid)
        except OSError:
            pidfd = -1
        if pidfd >= 0:
            try:
                poller = select.poll()
                poller.register(pidfd, select.POLLIN)
                poller.poll(max(0, int(grace_s * 1000)))
            finally:
                os.close(pidfd)
    else:
        while time.monotonic() < deadline and not _leader_exited(entry.proc):
            time.sleep(0.005)
    _signal_group(entry.pgid, signal.SIGKILL)


def kill_all_process_groups(*, grace_s: float = GRACE_S, owner: object | None = None) -> int:
    """Terminate every live check's process group (SIGTERM, grace, SIGKILL).

    Safe to call from a signal handler or another thread: it takes no lock. The check that was
    running returns a result with status ``"interrupted"``; reaping stays with that check.

    Args:
        grace_s: seconds between SIGTERM and SIGKILL.
        owner: only groups started on behalf of this object (a ``Runtime``); all when None.

    Returns:
        How many process groups were signalled.
    """
    entries = _snapshot(owner)
    for e in entries:
        e.interrupted = True
        _signal_group(e.pgid, signal.SIGTERM)
    if entries:
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and not all(_leader_exited(e.proc) for e in entries):
            time.sleep(0.005)
    for e in entries:
        _signal_group(e.pgid, signal.SIGKILL)
    return len(entries)


def _result(
    name: str,
    check: CheckConfig,
    status: str,
    *,
    started: float,
    exit_code: int | None = None,
    tail: bytes = b"",
    code: ErrorCode | None = None,
    message: str = "",
    jail: Jail | None = None,
) -> CheckResult:
    return CheckResult(
        name=name,
        kind=check.kind,
        required=check.required,
        argv=list(check.cmd),
        status=status,  # type: ignore[arg-type]
        exit_code=exit_code,
        duration_ms=(time.perf_counter() - started) * 1000.0,
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
    editor: EditorBridge | None = None,
    owner: object | None = None,
    should_stop: Callable[[], bool] | None = None,
    sandbox: SandboxConfig | None = None,
    protected: Sequence[str] = (),
    writable: Sequence[str] = (),
    on_start: Callable[[int], None] | None = None,
    tree: TreeSpec | None = None,
) -> CheckResult:
    """Run one named check and return its result; never raises for the check's own outcome.

    Args:
        name: the check's name under ``[checks.NAME]``.
        check: the snapshotted config: ``cmd`` (exact argv), ``timeout`` (milliseconds),
            ``executable`` (resolved at load; None means it was not found).
        cwd: the workspace root.
        editor: when attached, the check is refused while any buffer is unsaved
            (``docs/architecture.md``, "Rose": named checks refuse unsaved buffers).
        owner: tag for :func:`kill_all_process_groups` (the Runtime running it).
        should_stop: polled while waiting; when it returns True the group is terminated and the
            result is ``"interrupted"``.
        sandbox: ``[sandbox]``: the jail the check runs in (``flow_core.verify._sandbox``);
            None runs it unjailed with Flow's environment, like ``mode = "off"``.
        protected: workspace-relative paths bound read-only inside the jail (besides
            ``.git``): ``FlowConfig.protected``.
        writable: absolute folders outside the workspace the check may write: the private
            results folder of a ``results = "junit"`` check (``run/_evidence.py``), bound
            read-write inside the jail.
        on_start: called with the check's process group id once it runs (the run record
            keeps it, so the group of a run killed with SIGKILL is ended by whoever settles
            that run: ``store/_reap.py``); an exception it raises is ignored.
        tree: run the check in a fresh tree made from this spec (the evidence run,
            ``docs/architecture.md``, "The evidence run"): the jail's private copy, or without
            a jail a private copy the check runs in (``verify/_tree.build_unjailed``); None
            runs it on the workspace as it is (``CheckResult.tree`` ``"workspace"``).

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
    started = time.perf_counter()
    if editor is not None:
        try:
            dirty = editor.freshness().dirty_buffers
        except EditorError as err:
            return _result(
                name,
                check,
                "refused",
                started=started,
                code="check_refused",
                message=f"editor freshness unavailable, check refused: {err}",
            )
        if dirty:
            return _result(
                name,
                check,
                "refused",
                started=started,
                code="check_refused",
                message="unsaved editor buffers: " + ", ".join(dirty),
            )
    if check.executable is None:
        return _result(
            name,
            check,
            "missing",
            started=started,
            code="check_missing",
            message=f"executable {check.cmd[0]!r} was not found when the config was loaded",
        )
    now_id = executable_identity(check.executable)
    if check.executable_id is not None and now_id != check.executable_id:
        # The operator approved the program that was there at load; this is another one
        # (replaced, re-linked or rewritten through a rename). Best effort: the window between
        # this stat and exec remains, as for any path-based exec.
        return _result(
            name,
            check,
            "refused",
            started=started,
            code="check_executable_changed",
            message=f"executable {check.executable!r} is not the file that was there when the "
            "config was loaded; fix: review it, then start Flow again to approve it",
        )
    try:
        jail = prepare_jail(
            check.executable,
            check.cmd,
            sandbox,
            workspace=cwd,
            protected=protected,
            writable=writable,
            tree=tree,
        )
        if tree is not None and jail.kind == "none":
            try:
                private = build_unjailed(cwd, tree)
            except BaseException:
                jail.close()
                raise
            jail._cleanups.append(private.close)
            cwd = private.root
    except ConfigError as err:
        return _result(name, check, "refused", started=started, code=err.code, message=err.message)
    except OSError as err:
        return _result(
            name,
            check,
            "error",
            started=started,
            code="check_error",
            message=f"could not make the check's private copy of the workspace: {err}",
        )
    try:
        result = _start_and_wait(
            name,
            check,
            jail,
            started=started,
            cwd=cwd,
            owner=owner,
            should_stop=should_stop,
            on_start=on_start,
        )
        result = _limit_status(result, jail)
        return result if tree is None else result.model_copy(update={"tree": "fresh"})
    finally:
        jail.close()


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


def _start_and_wait(
    name: str,
    check: CheckConfig,
    jail: Jail,
    *,
    started: float,
    cwd: str | Path,
    owner: object | None,
    should_stop: Callable[[], bool] | None,
    on_start: Callable[[int], None] | None = None,
) -> CheckResult:
    """Start the (jailed) check, wait for it, end every process it left; see ``run_check``."""
    proc: subprocess.Popen[bytes] | None = None
    try:
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
        entry = _Live(proc=proc, pgid=proc.pid, owner=owner)
        _LIVE[proc.pid] = entry
        if on_start is not None:
            with contextlib.suppress(Exception):
                on_start(proc.pid)
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
            return _result(
                name,
                check,
                "missing",
                started=started,
                jail=jail,
                code="check_missing",
                message=f"executable {check.executable!r} is gone: {err.strerror}",
            )
        return _result(
            name,
            check,
            "error",
            started=started,
            jail=jail,
            code="check_error",
            message=f"could not start {check.cmd[0]!r}: {err.strerror or err}",
        )
    try:
        entry.ns_pidfd = _pidfd(jail.started(lambda: _signal_group(entry.pgid, signal.SIGKILL)))
        tail, timed_out = _pump(entry, check.timeout / 1000.0, should_stop)
    except BaseException:
        entry.interrupted = True
        _terminate(entry, GRACE_S)
        _close_and_reap(entry)
        raise
    _close_and_reap(entry)
    if entry.interrupted:
        return _result(
            name,
            check,
            "interrupted",
            started=started,
            jail=jail,
            exit_code=proc.returncode,
            tail=tail,
            code="check_interrupted",
            message=f"check {name!r} was interrupted; its process group was killed",
        )
    if timed_out:
        return _result(
            name,
            check,
            "timeout",
            started=started,
            jail=jail,
            exit_code=proc.returncode,
            tail=tail,
            code="check_timeout",
            message=f"check {name!r} ran past its timeout of {check.timeout} ms"
            + (
                f" (check timeouts are milliseconds: did you mean {check.timeout * 1000}?)"
                if check.timeout < 1000
                else ""
            ),
        )
    if proc.returncode != 0:
        return _result(
            name,
            check,
            "failed",
            started=started,
            jail=jail,
            exit_code=proc.returncode,
            tail=tail,
            code="check_failed",
            message=f"check {name!r} exited with status {proc.returncode}",
        )
    return _result(name, check, "passed", started=started, exit_code=0, tail=tail, jail=jail)


def _pump(
    entry: _Live, timeout_s: float, should_stop: Callable[[], bool] | None
) -> tuple[bytes, bool]:
    """Drain output until the leader exits and the pipe closes, or the deadline passes.

    Uses ``poll`` (no ``FD_SETSIZE`` limit) on the pipe and, on Linux, a pidfd for the leader.
    Once the leader has exited, the rest of its group is killed and the pipe is drained for at
    most ``_AFTER_EXIT_S`` (a process that escaped the group could hold it open forever).

    Returns:
        The output tail and whether the timeout fired. The group has been signalled and the
        leader has exited (it is not reaped yet).
    """
    proc = entry.proc
    assert proc.stdout is not None
    out_fd = proc.stdout.fileno()
    buf = bytearray()
    deadline = time.monotonic() + timeout_s
    pidfd = -1
    if _HAVE_PIDFD:
        try:
            pidfd = os.pidfd_open(proc.pid)
        except OSError:
            pidfd = -1
    poller = select.poll()
    poller.register(out_fd, select.POLLIN)
    if pidfd >= 0:
        poller.register(pidfd, select.POLLIN)
    poll_ms = 50 if (pidfd >= 0 and should_stop is None) else 10
    pipe_open = True
    leader_done = False
    timed_out = False
    try:
        while True:
            if entry.interrupted or (should_stop is not None and should_stop()):
                entry.interrupted = True
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = not leader_done
                break
            ready = {fd for fd, _ in poller.poll(min(poll_ms, max(1, int(remaining * 1000))))}
            if out_fd in ready:
                try:
                    chunk = os.read(out_fd, _READ_CHUNK)
                except InterruptedError:
                    chunk = b""
                except OSError:
                    chunk, pipe_open = b"", False
                else:
                    pipe_open = bool(chunk)
                if not pipe_open:
                    poller.unregister(out_fd)
                buf += chunk
                if len(buf) > 2 * OUTPUT_TAIL_BYTES:
                    del buf[: len(buf) - OUTPUT_TAIL_BYTES]
            if not leader_done:
                leader_done = pidfd in ready if pidfd >= 0 else _leader_exited(proc)
                if leader_done:
                    if pidfd >= 0:
                        poller.unregister(pidfd)
                    # The check is over when its leader is: kill what it left behind, then
                    # read what is still buffered for a short while at most.
                    _signal_group(entry.pgid, signal.SIGKILL)
                    deadline = min(deadline, time.monotonic() + _AFTER_EXIT_S)
            if leader_done and not pipe_open:
                break
    finally:
        if pidfd >= 0:
            os.close(pidfd)
    if entry.interrupted or timed_out:
        _terminate(entry, GRACE_S)
        if pipe_open:
            buf += _drain(out_fd)
    else:
        _signal_group(entry.pgid, signal.SIGKILL)
    return bytes(buf), timed_out


def _drain(fd: int) -> bytes:
    """Read what is already buffered in the pipe without blocking."""
    out = bytearray()
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while poller.poll(0):
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except OSError:
            break
        if not chunk:
            break
        out += chunk[-OUTPUT_TAIL_BYTES:]
    return bytes(out[-OUTPUT_TAIL_BYTES:])


def _pidfd(pid: int | None) -> int:
    """A pidfd for ``pid`` (bubblewrap's pid 1), or -1 where there is none."""
    if pid is None or not _HAVE_PIDFD:
        return -1
    try:
        return os.pidfd_open(pid)
    except OSError:
        return -1


def _end_namespace(entry: _Live) -> None:
    """Kill bubblewrap's pid 1 and wait (bounded) until it, and so its namespace, is gone.

    The kernel ends every process of a pid namespace before its pid 1 exits, so once the
    pidfd is readable no process the check started is left (``pid_namespaces(7)``).
    """
    fd, entry.ns_pidfd = entry.ns_pidfd, -1
    if fd < 0:
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if not poller.poll(0):
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            poller.poll(2000)
    finally:
        os.close(fd)


def _close_and_reap(entry: _Live) -> None:
    """Close the pipe, reap the leader, forget the group; wait until no member is alive."""
    proc = entry.proc
    if proc.stdout is not None:
        proc.stdout.close()
    try:
        proc.wait()
    finally:
        _LIVE.pop(proc.pid, None)
        _end_namespace(entry)
    if entry.interrupted or sys.platform.startswith("linux"):
        # SIGKILL is asynchronous: wait (bounded) until the kernel has really ended the group.
        deadline = time.monotonic() + 2.0
        while _group_members_alive_fast(entry.pgid) and time.monotonic() < deadline:
            _signal_group(entry.pgid, signal.SIGKILL)
            time.sleep(0.002)


def _group_members_alive_fast(pgid: int) -> bool:
    """Cheap first test (``killpg(pgid, 0)``), then the precise ``/proc`` scan."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return _group_members_alive(pgid)
