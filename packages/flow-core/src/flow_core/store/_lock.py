"""One workspace, one writer: a lock per workspace root, held while a run, undo or apply writes.

The lock is an ``flock(2)`` on ``<store>/locks/<hash of the workspace's real path>.lock``, in
the run store, so outside the model's reach. The kernel releases it when its holder exits in
any way (a return, a signal, SIGKILL, a crash): a lock left by a dead process is never in the
way, and nothing has to guess from a pid. The descriptor is close-on-exec, so a check the run
starts never inherits it. The holder writes who it is (pid, run id, what, since when) into the
file, for the message a refused writer prints. Source: flow-core's README, "Run store".
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flow_core.store._bytes import now_iso
from flow_core.store._record import StoreError

__all__ = ["WorkspaceLock"]

#: Seconds between two tries of a waiting writer (it also looks at its stop flag then).
WAIT_POLL_S = 0.1


class WorkspaceLock:
    """The writer's lock of one workspace root.

    Args:
        store_root: the run store folder (``RunStore.root``).
        workspace: the workspace root (any spelling: its real path names the lock).
    """

    def __init__(self, store_root: Path, workspace: str | os.PathLike[str]) -> None:
        real = os.path.realpath(os.fspath(workspace))
        digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:32]
        self.workspace = real
        self.path = store_root / "locks" / f"{digest}.lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._fd is not None

    def try_acquire(self, **holder: Any) -> dict[str, Any] | None:
        """Take the lock if it is free and write ``holder`` (plus pid and time) into it.

        Returns:
            None when taken; else what the current holder wrote about itself (may be empty).

        Raises:
            StoreError: ``run_store_unusable`` when the lock file cannot be opened.
        """
        if self._fd is not None:
            return None
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError as err:
            raise StoreError(f"the workspace lock {self.path} cannot be opened: {err}") from err
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = _read_holder(fd)
            os.close(fd)
            return who
        except OSError as err:
            os.close(fd)
            raise StoreError(f"the workspace lock {self.path} cannot be taken: {err}") from err
        info = {"pid": os.getpid(), "since": now_iso(), "workspace": self.workspace, **holder}
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd
        return None

    def acquire(
        self, *, wait: bool, should_stop: Callable[[], bool] = lambda: False, **holder: Any
    ) -> None:
        """Take the lock, waiting for it when ``wait`` (until ``should_stop()`` is true).

        Raises:
            StoreError: ``workspace_busy`` naming the holder (not waiting, or stopped while
                waiting).
        """
        pause = threading.Event()
        while True:
            who = self.try_acquire(**holder)
            if who is None:
                return
            if not wait or should_stop():
                raise StoreError(busy_message(self.workspace, who), code="workspace_busy")
            pause.wait(WAIT_POLL_S)

    def release(self) -> None:
        """Let the lock go (idempotent); the kernel does it anyway when the process ends."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)

    def __enter__(self) -> WorkspaceLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_holder(fd: int) -> dict[str, Any]:
    with contextlib.suppress(OSError, ValueError):
        value = json.loads(os.pread(fd, 65_536, 0) or b"{}")
        if isinstance(value, dict):
            return value
    return {}


def busy_message(workspace: str, who: dict[str, Any]) -> str:
    """``the workspace W is busy: run ID (pid P, since T) is writing it; ...``."""
    what = str(who.get("what") or "a run")
    run = f" {who['run_id']}" if who.get("run_id") else ""
    pid = f"pid {who['pid']}, " if who.get("pid") else ""
    since = f"since {who['since']}" if who.get("since") else "now"
    return (
        f"the workspace {workspace} is busy: {what}{run} ({pid}{since}) is writing it; "
        'wait for it to end, run with --isolate, or set [runs] when_busy = "wait" or '
        '"isolate"'
    )
