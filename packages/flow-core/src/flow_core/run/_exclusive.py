"""One workspace, one writer: a run in place holds the workspace's lock until its record ends.

``Runtime.run`` takes the lock for a trusted run in the workspace itself with a run store
attached. The lock is ``flow_core.store.WorkspaceLock`` (an ``flock`` in the run store,
dropped by the kernel when its holder dies); when another run, undo or apply holds it, the
run follows ``[runs] when_busy``: ``refuse`` (error ``workspace_busy``, nothing written, no
record), ``wait`` (saying on stderr whom it waits for; an interrupt stops the wait) or
``isolate`` (the run goes isolated; its apply takes the lock then). This module holds the
refuse-or-wait step; the runtime picks isolation, since only it can run a task. Source:
flow-core's README, "Run store".
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flow_core.store._lock import busy_message

if TYPE_CHECKING:
    from flow_core.config import RunsConfig
    from flow_core.store import WorkspaceLock

__all__ = ["wait_or_refuse"]


def wait_or_refuse(
    lock: WorkspaceLock,
    busy: dict[str, Any],
    runs: RunsConfig,
    should_stop: Callable[[], bool],
) -> None:
    """After ``lock.try_acquire`` found the workspace ``busy`` (its holder): take the lock
    when it is free again (``when_busy = "wait"``, saying whom it waits for on stderr) or
    refuse at once (``refuse``; also ``isolate`` where the run cannot go isolated).

    Raises:
        StoreError: ``workspace_busy`` when refused, or when ``should_stop`` ended the wait.
    """
    wait = runs.when_busy == "wait"
    if wait:
        # stderr: every front end keeps stdout for its one report or protocol
        sys.stderr.write(f"flow: waiting: {busy_message(lock.workspace, busy)}\n")
        sys.stderr.flush()
    lock.acquire(wait=wait, should_stop=should_stop, what="run")
