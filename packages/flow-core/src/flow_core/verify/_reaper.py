"""What a jailed check leaves to clean up after its result is returned.

``docs/architecture.md``, "Sandbox" (a check's cost). Removing a check's private copy,
unmounting its tmpfs and removing or handing back its cgroups costs the kernel more than
some checks take to run; none of it changes the check's result, which is read before
(``Jail.limits_hit``). ``Jail.close`` hands that work to one thread of this process
(``later``) and returns. The work is still always done, and done before anyone could see it
half done:

- before a check of the same workspace is prepared (``settle(place)``, ``prepare_jail``);
- before this process exits (``atexit``; the callbacks given to ``on_exit``, such as the
  removal of idle cgroup sets, run after it);
- at most ``MAX_PENDING`` jobs wait at a time: ``later`` waits for room beyond that;
- a child made by ``fork`` starts with no jobs (its parent does them).

A Flow killed with SIGKILL leaves the pending work to the next Flow's sweep, as it would
without this thread (``_cgroup.sweep_once``). A job never raises out of the thread.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from collections import Counter, deque
from collections.abc import Callable

__all__ = ["MAX_PENDING", "exiting", "later", "on_exit", "settle"]

#: Jobs that may wait at once; ``later`` waits for room beyond that.
MAX_PENDING = 4

_JOBS: deque[tuple[str, Callable[[], None]]] = deque()
_PENDING: Counter[str] = Counter()
_AFTER: list[Callable[[], None]] = []


class _State:
    cond = threading.Condition()
    exiting = False
    thread: threading.Thread | None = None
    pid = 0


_STATE = _State()


def later(place: str, job: Callable[[], None]) -> None:
    """Run ``job`` on the reaper thread, after those handed in before it; never raises.

    Args:
        place: what the job cleans up after (a check's workspace path): ``settle(place)``
            waits for it.
        job: the cleanup; an exception it raises is dropped. Runs inline when this process
            is exiting or no thread can be started.
    """
    with _STATE.cond:
        inline = _STATE.exiting or not _running()
        if not inline:
            _STATE.cond.wait_for(lambda: len(_JOBS) < MAX_PENDING)
            _JOBS.append((place, job))
            _PENDING[place] += 1
            _STATE.cond.notify_all()
            return
    with contextlib.suppress(Exception):
        job()


def settle(place: str | None = None) -> None:
    """Wait until no job for ``place`` (None: any) is pending; never raises."""
    with _STATE.cond:
        if place is None:
            _STATE.cond.wait_for(lambda: not _JOBS)
        else:
            _STATE.cond.wait_for(lambda: _PENDING[place] == 0)


def exiting() -> bool:
    """Whether this process has begun to exit (no new idle resources should be kept)."""
    return _STATE.exiting


def on_exit(callback: Callable[[], None]) -> None:
    """Run ``callback`` when this process exits, after the pending jobs (once each)."""
    with _STATE.cond:
        if callback not in _AFTER:
            _AFTER.append(callback)


def _running() -> bool:
    """Start the thread if this process has none yet; False when it cannot (call locked)."""
    if _STATE.thread is not None and _STATE.pid == os.getpid():
        return _STATE.thread.is_alive()
    thread = threading.Thread(target=_work, name="flow-check-reaper", daemon=True)
    try:
        thread.start()
    except RuntimeError:  # the interpreter is shutting down
        return False
    _STATE.thread, _STATE.pid = thread, os.getpid()
    return True


def _work() -> None:
    while True:
        with _STATE.cond:
            _STATE.cond.wait_for(lambda: bool(_JOBS))
            place, job = _JOBS[0]
        with contextlib.suppress(Exception):
            job()
        with _STATE.cond:
            _JOBS.popleft()
            _PENDING[place] -= 1
            if _PENDING[place] <= 0:
                del _PENDING[place]
            _STATE.cond.notify_all()


def _forked() -> None:
    """In a child made by ``fork``: no thread, no jobs (they are the parent's), and a fresh
    lock (another thread may have held it at the fork)."""
    _STATE.cond = threading.Condition()
    _JOBS.clear()
    _PENDING.clear()
    _STATE.thread, _STATE.pid = None, 0


@atexit.register
def _at_exit() -> None:
    _STATE.exiting = True
    if _STATE.pid == os.getpid():
        settle()
    for callback in list(_AFTER):
        with contextlib.suppress(Exception):
            callback()


os.register_at_fork(after_in_child=_forked)
