"""Reading a running check's output until it ends (``verify/_checks.py`` starts it).

The check's stdout and stderr share one pipe. Only the last ``OUTPUT_TAIL_BYTES`` are kept.
The pipe and, on Linux, a pidfd for the group's leader are watched with ``poll`` (no
``FD_SETSIZE`` limit); once the leader has exited the rest of its group is killed and the
pipe is read for at most ``_AFTER_EXIT_S`` more, because a process that escaped the group
could hold it open forever.
"""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from flow_core.verify._groups import (
    GRACE_S,
    _leader_exited,
    _Live,
    _pidfd,
    _signal_group,
    _terminate,
)

__all__ = ["OUTPUT_TAIL_BYTES", "pump"]

#: Bytes of combined stdout+stderr kept per check (the tail).
OUTPUT_TAIL_BYTES = 16 * 1024
_READ_CHUNK = 65536
#: Seconds the pipe is still read after the leader exited (escaped processes may hold it).
_AFTER_EXIT_S = 0.5


@dataclass
class _Watch:
    """What ``pump`` watches: the pipe, the leader's pidfd (-1: none) and what was read."""

    out_fd: int
    pidfd: int
    poller: select.poll
    buf: bytearray = field(default_factory=bytearray)
    pipe_open: bool = True
    leader_done: bool = False

    def read(self) -> None:
        """Read one chunk from the pipe (it is readable); keep only the tail."""
        try:
            chunk = os.read(self.out_fd, _READ_CHUNK)
        except InterruptedError:
            chunk = b""
        except OSError:
            chunk, self.pipe_open = b"", False
        else:
            self.pipe_open = bool(chunk)
        if not self.pipe_open:
            self.poller.unregister(self.out_fd)
        self.buf += chunk
        if len(self.buf) > 2 * OUTPUT_TAIL_BYTES:
            del self.buf[: len(self.buf) - OUTPUT_TAIL_BYTES]


def pump(
    entry: _Live, timeout_s: float, should_stop: Callable[[], bool] | None
) -> tuple[bytes, bool]:
    """Drain output until the leader exits and the pipe closes, or the deadline passes.

    Returns:
        The output tail and whether the timeout fired. The group has been signalled and the
        leader has exited (it is not reaped yet).
    """
    proc = entry.proc
    assert proc.stdout is not None
    watch = _Watch(proc.stdout.fileno(), _pidfd(proc.pid), select.poll())
    watch.poller.register(watch.out_fd, select.POLLIN)
    if watch.pidfd >= 0:
        watch.poller.register(watch.pidfd, select.POLLIN)
    try:
        timed_out = _loop(entry, watch, time.monotonic() + timeout_s, should_stop)
    finally:
        if watch.pidfd >= 0:
            os.close(watch.pidfd)
    if entry.interrupted or timed_out:
        _terminate(entry, GRACE_S)
        if watch.pipe_open:
            watch.buf += _drain(watch.out_fd)
    else:
        _signal_group(entry.pgid, signal.SIGKILL)
    return bytes(watch.buf), timed_out


def _loop(
    entry: _Live, watch: _Watch, deadline: float, should_stop: Callable[[], bool] | None
) -> bool:
    """Poll until the check is over, stopped or past ``deadline``; True when it timed out."""
    poll_ms = 50 if (watch.pidfd >= 0 and should_stop is None) else 10
    while True:
        if entry.interrupted or (should_stop is not None and should_stop()):
            entry.interrupted = True
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return not watch.leader_done
        ready = {fd for fd, _ in watch.poller.poll(min(poll_ms, max(1, int(remaining * 1000))))}
        if watch.out_fd in ready:
            watch.read()
        if not watch.leader_done:
            done = watch.pidfd in ready if watch.pidfd >= 0 else _leader_exited(entry.proc)
            if done:
                watch.leader_done = True
                if watch.pidfd >= 0:
                    watch.poller.unregister(watch.pidfd)
                # The check is over when its leader is: kill what it left behind, then
                # read what is still buffered for a short while at most.
                _signal_group(entry.pgid, signal.SIGKILL)
                deadline = min(deadline, time.monotonic() + _AFTER_EXIT_S)
        if watch.leader_done and not watch.pipe_open:
            return False


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
