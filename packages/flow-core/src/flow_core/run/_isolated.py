"""An isolated run: the whole workflow in a private tree; only a verified change comes back.

``Runtime.run(task, isolate=True)`` (or ``[runs] isolate = true``) runs a ``Run`` through
these steps (``enter_tree``, ``Run.execute``, ``leave_tree``, ``apply_or_keep``), each working
on the ``Run`` through its public members:

1. a run record is started and the tree is made inside it (``flow_core.store.prepare_tree``:
   a git worktree of ``HEAD`` carrying the user's uncommitted state, or a private copy);
2. the runtime runs plan → code → verify → review with the tree as its workspace: the file
   tools (flow-safeio, protected paths, no ``.git`` access) and the checks work there;
3. the new bytes of every changed file are kept in the record (``post/NNNN``);
4. the tree is removed (``git worktree remove --force`` and ``git worktree prune``);
5. a verified change is applied to the real workspace as one patch
   (``flow_core.store.apply_run``) under the workspace's writer lock (``store/_lock.py``),
   refused when another run holds it (``workspace_busy``) or when any of its files no longer
   holds the bytes the run started from; an unverified change is not applied and stays in the
   record for ``flow show ID --diff`` and ``flow apply ID``.

Source: flow-core's README, "Isolated runs".
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from flow_core._report import ErrorInfo, Isolation, Report
from flow_core.store import (
    IsolatedTree,
    RunStore,
    StoreError,
    apply_run,
    prepare_tree,
    remove_tree,
)
from flow_safeio import SafeIOError, Workspace

if TYPE_CHECKING:
    from flow_core.config import FlowConfig
    from flow_core.run._run import Run
    from flow_core.store import RunRecord

__all__ = ["apply_or_keep", "enter_tree", "leave_tree"]


def _record(run: Run) -> RunRecord:
    record = run.journal.record
    if record is None:  # pragma: no cover - Runtime always records an isolated run
        raise StoreError("an isolated run needs a run record", code="isolate_failed")
    return record


def enter_tree(run: Run) -> IsolatedTree | Report:
    """Make the private tree inside the run's record and move ``run`` into it.

    Returns:
        The tree; or, when it cannot be made (``isolate_failed``), the run's final report,
        already written to the record.
    """
    record = _record(run)
    try:
        tree = prepare_tree(Path(run.config.workspace_dir), record.dir / "tree")
    except StoreError as err:
        report = run.failed("run", err.code, err.message)
        run.journal.finish(report, isolated=True, applied=False)
        return report.model_copy(update={"run_id": record.id, "run_dir": str(record.dir)})
    # Where the tree is, so a reader can settle the record if this process dies (store/_reap).
    record.save_meta(
        isolation=tree.kind,
        tree_root=str(tree.root),
        tree_top=str(tree.top),
        tree_git_top=None if tree.git_top is None else str(tree.git_top),
    )
    run.use_config(run.config.model_copy(update={"workspace_dir": tree.root}))
    return tree


def leave_tree(run: Run, tree: IsolatedTree, original: FlowConfig) -> None:
    """Keep the changed files' new bytes in the record (best effort), move ``run`` back to
    ``original``'s workspace and remove the tree."""
    try:
        record = _record(run)
        with contextlib.suppress(StoreError, OSError):
            for entry in record.changed_files():
                if entry.post_sha256 is None:
                    continue
                data = run.changes.read_disk(entry.path)
                if data is not None:
                    record.store_post_image(entry.path, data)
    finally:
        run.use_config(original)
        remove_tree(tree)


def apply_or_keep(run: Run, store: RunStore, tree: IsolatedTree, report: Report) -> Report:
    """Apply a verified change to the real workspace as one patch, or keep it in the record.

    Returns:
        The run's report, with ``workspace`` the real workspace, ``isolation`` set, and
        ``run_id``/``run_dir`` naming the record. A refused apply is reported in ``errors``
        (``apply_conflict``).
    """
    record = _record(run)
    config = run.config
    workspace = str(config.workspace_dir)
    reason: str | None = None
    applied = False
    errors = list(report.errors)
    if not report.changed_files:
        reason = "nothing changed"
    elif not report.verified:
        reason = f"not verified ({report.status}): kept in the run record"
    else:
        try:
            with (
                store.workspace_lock(workspace) as lock,
                Workspace(workspace, protected=tuple(config.protected)) as ws,
            ):
                lock.acquire(wait=False, what="apply", run_id=record.id)
                apply_run(store, store.get(record.id), ws, own_run=True)
            applied = True
        except (StoreError, SafeIOError) as err:
            code = getattr(err, "code", "apply_conflict")
            reason = getattr(err, "message", str(err))
            errors.append(ErrorInfo(code=code, message=reason))
    report = report.model_copy(
        update={
            "workspace": workspace,
            "errors": errors,
            "isolation": Isolation(mode=tree.kind, applied=applied, reason=reason),
            "run_id": record.id,
            "run_dir": str(record.dir),
        }
    )
    run.journal.finish(report, isolated=True, applied=applied)
    return report
