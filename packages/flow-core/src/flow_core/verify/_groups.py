"""The live process groups of running checks, and how they are ended.

Each running check leads its own process group (``verify/_checks.py`` starts it in a new
session). The groups are kept in a module-level registry so that signal handlers (the CLI's
and the MCP server's SIGTERM handlers) can call :func:`kill_all_process_groups`: SIGTERM, a
short grace period (``GRACE_S``), then SIGKILL. A jailed check's group also ends with
bubblewrap's pid 1, whose pid namespace the kernel empties when it exits
(``pid_namespaces(7)``).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "GRACE_S",
    "kill_all_process_groups",
    "live_process_groups",
]

#: Seconds between SIGTERM and SIGKILL when a check's group is terminated.
GRACE_S = 0.5
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
