"""The run store: every run's record outside the workspace, undo, and isolated runs.

See ``_where`` (where the store lives, kept out of the workspace, and ``StoreError``),
``_record`` (a record's layout), ``_store`` (the records: listing, pruning), ``_undo`` (undo
and apply), ``_isolate`` (worktrees and private copies), ``_lock`` (one writer per workspace)
and ``_reap`` (settling the record of a run whose process died). Names load on first use
(``flow_core._lazy.lazy_door``): ``flow status`` checks where the store lives (``_where``)
without loading the store, undo, apply or isolation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flow_core._lazy import lazy_door

if TYPE_CHECKING:
    from flow_core.store._isolate import (
        IsolatedTree as IsolatedTree,
        prepare_tree as prepare_tree,
        remove_tree as remove_tree,
    )
    from flow_core.store._lock import (
        WorkspaceLock as WorkspaceLock,
    )
    from flow_core.store._record import (
        FileEntry as FileEntry,
        RunRecord as RunRecord,
        sha256 as sha256,
    )
    from flow_core.store._store import (
        RunInfo as RunInfo,
        RunStore as RunStore,
    )
    from flow_core.store._undo import (
        ApplyResult as ApplyResult,
        UndoResult as UndoResult,
        apply_run as apply_run,
        undo_run as undo_run,
    )
    from flow_core.store._where import (
        StoreError as StoreError,
        default_store_root as default_store_root,
    )
else:
    __all__, __getattr__, __dir__, _EXPORTS = lazy_door(
        __name__,
        {
            "flow_core.store._isolate": ("IsolatedTree", "prepare_tree", "remove_tree"),
            "flow_core.store._lock": ("WorkspaceLock",),
            "flow_core.store._record": ("FileEntry", "RunRecord", "sha256"),
            "flow_core.store._store": ("RunInfo", "RunStore"),
            "flow_core.store._where": ("StoreError", "default_store_root"),
            "flow_core.store._undo": ("ApplyResult", "UndoResult", "apply_run", "undo_run"),
        },
        globals(),
    )
