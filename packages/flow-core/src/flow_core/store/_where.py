"""Where the user's run store lives, and the rule that keeps it out of the workspace.

Apart from the store itself (``_store``, ``_record``) so that ``flow status``, which refuses a
store inside the workspace like every other command but opens nothing, loads only this
(``bench/bench_cli.py``). ``StoreError`` is defined here for the same reason; ``_record`` and
the ``flow_core.store`` door still name it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from flow_core._errors import FlowError
from flow_core._xdg import state_dir

__all__ = ["StoreError", "default_store_root", "inside", "store_root_outside"]


class StoreError(FlowError):
    """The run store cannot be used, or a run record refuses an operation.

    Codes: ``run_store_unusable``, ``run_not_found``, ``run_store_full``, ``undo_conflict``,
    ``undo_failed``, ``apply_conflict``, ``apply_refused``, ``isolate_failed``,
    ``workspace_busy``.
    """

    default_code = "run_store_unusable"


def default_store_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/flow/runs``; ``~/.local/state/flow/runs`` when it is unset, empty or
    relative (XDG Base Directory Specification, "XDG_STATE_HOME")."""
    return state_dir(environ) / "runs"


def inside(path: Path, root: Path) -> bool:
    """True when ``path`` is ``root`` or lies under it, links resolved on both sides."""
    try:
        return os.path.commonpath([os.path.realpath(path), os.path.realpath(root)]) == (
            os.path.realpath(root)
        )
    except ValueError:
        return False


def store_root_outside(
    workspace: str | os.PathLike[str], environ: Mapping[str, str] | None = None
) -> Path:
    """The user's run store folder (``default_store_root``), checked to lie outside
    ``workspace``: a model that can write the workspace must not reach the record of what it
    did (flow-core's README, "Run store"). Nothing is created or opened.

    Raises:
        StoreError: code ``run_store_unusable`` naming the fix (set XDG_STATE_HOME).
    """
    root = default_store_root(environ)
    if inside(root, Path(workspace)):
        raise StoreError(
            f"the run store {root} lies inside the workspace {os.fspath(workspace)}; a "
            "run's record must be out of the model's reach; fix: set XDG_STATE_HOME to a "
            "directory outside the workspace",
        )
    return root
