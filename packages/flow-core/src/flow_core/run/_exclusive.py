"""One workspace, one writer: a run in place holds the workspace's lock until its record ends.

``Runtime.run`` calls ``run_exclusive`` for a trusted run in the workspace itself with a run
store attached. The lock is ``flow_core.store.WorkspaceLock`` (an ``flock`` in the run store,
dropped by the kernel when its holder dies); when another run, undo or apply holds it, the
run follows ``[runs] when_busy``: ``refuse`` (error ``workspace_busy``, nothing written, no
record), ``wait`` (saying on stderr whom it waits for; an interrupt stops the wait) or
``isolate`` (the run goes isolated; its apply takes the lock then). Source: flow-core's
README, "Run store".
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from flow_core.store import StoreError
from flow_core.store._lock import busy_message

if TYPE_CHECKING:
    from flow_core._report import Report
    from flow_core.run._runtime import Runtime
    from flow_core.store import RunStore

__all__ = ["run_exclusive"]


def run_exclusive(runtime: Runtime, task: str, store: RunStore, *, may_isolate: bool) -> Report:
    """Run ``task`` in the workspace under its writer lock (see the module docstring).

    Args:
        may_isolate: the run could run isolated (no editor attached).

    Returns:
        The run's report; an ``error`` report with ``workspace_busy`` when refused.
    """
    policy = runtime.config.runs.when_busy
    try:
        lock = store.workspace_lock(runtime.config.workspace_dir)
        busy = lock.try_acquire(what="run")
        if busy is not None and policy == "isolate" and may_isolate:
            return runtime._run_isolated(task)
        if busy is not None:
            # A run that only waits: ``Runtime.interrupt`` stops the wait through its state.
            state = runtime._new_run(task).state
            if policy == "wait":
                # stderr: every front end keeps stdout for its one report or protocol
                sys.stderr.write(f"flow: waiting: {busy_message(lock.workspace, busy)}\n")
                sys.stderr.flush()
            lock.acquire(wait=policy == "wait", should_stop=lambda: state.stop, what="run")
    except StoreError as err:
        return runtime._new_run(task).failed("run", err.code, err.message)
    with lock:
        return runtime._run_recorded(task)
