"""The run store: every run's record outside the workspace, undo, and isolated runs.

See ``_record`` (a record's layout), ``_store`` (where records live, listing, pruning),
``_undo`` (undo and apply) and ``_isolate`` (worktrees and private copies).
"""

from flow_core.store._isolate import IsolatedTree, prepare_tree, remove_tree
from flow_core.store._record import FileEntry, RunRecord, StoreError, sha256
from flow_core.store._store import RunInfo, RunStore, default_store_root
from flow_core.store._undo import ApplyResult, UndoResult, apply_run, undo_run

__all__ = [
    "ApplyResult",
    "FileEntry",
    "IsolatedTree",
    "RunInfo",
    "RunRecord",
    "RunStore",
    "StoreError",
    "UndoResult",
    "apply_run",
    "default_store_root",
    "prepare_tree",
    "remove_tree",
    "sha256",
    "undo_run",
]
