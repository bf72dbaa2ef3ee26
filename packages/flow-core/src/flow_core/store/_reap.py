"""Settle the record of a run whose process died (SIGKILL, a crash, a power cut): once.

A record says ``running`` while its process writes it. When a reader (``flow runs``, ``flow
show``, ``flow undo``, ``flow apply``, the next run) finds that process gone, ``abandon`` makes
the record usable, exactly once (a ``.settling`` folder is the claim; another reader that finds
it waits for nothing and reads the record as it is):

0. every check process group the run noted (``processes.jsonl``) that still has members is
   killed (SIGKILL to the group): a check outlives a SIGKILLed Flow unless it is jailed
   (bubblewrap dies with its parent). A group is left alone when a process with its id lives
   but started at another time than the recorded leader (the id was reused); while any member
   of a group lives, the kernel does not hand its id to a new process;
1. an isolated run's tree still holds what the run wrote: each changed file whose bytes there
   are exactly the state recorded after the run's last write is kept in the record
   (``post/NNNN``), so ``flow apply`` works after the tree is gone;
2. ``diff.patch`` is written from the pre-images and that content (for a run in the
   workspace, from the workspace files that still hold what the run left);
3. the tree is removed, a git worktree with ``git worktree remove --force`` and
   ``git worktree prune``, so ``git worktree list`` forgets it;
4. ``meta.json`` says ``abandoned``, with ``abandoned_at`` and the changed files.

Source: flow-core's README, "Run store" and "Isolated runs".
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from flow_core.store._bytes import now_iso, sha256
from flow_core.store._record import FileEntry, RunRecord
from flow_safeio import SafeIOError, Workspace

if TYPE_CHECKING:
    from flow_core.store._store import RunInfo, RunStore

__all__ = ["abandon"]


def _left_content(root: str, entries: list[FileEntry]) -> dict[str, bytes | None]:
    """The bytes each entry's file holds under ``root`` when they are what the run left."""
    out: dict[str, bytes | None] = {}
    if not os.path.isdir(root):
        return out
    with contextlib.suppress(OSError), Workspace(root) as ws:
        for entry in entries:
            if not entry.post_known:
                continue
            data: bytes | None
            try:
                data = ws.read_bytes(entry.path)
            except SafeIOError:
                data = None
            if sha256(data) == entry.post_sha256:
                out[entry.path] = data
    return out


def _diff(record: RunRecord, entries: list[FileEntry], left: dict[str, bytes | None]) -> str:
    from flow_core.run._changes import unified_diff

    parts: list[str] = []
    for entry in entries:
        if entry.path not in left:
            parts.append(f"# {entry.path}: the run was killed; what it left is not known\n")
            continue
        old = None if entry.pre is None else record.read_image(entry.pre, entry.pre_sha256)
        parts.append(unified_diff(entry.path, old, left[entry.path]))
    return "".join(parts)


def _end_groups(record: RunRecord) -> None:
    """Step 0 of the module docstring."""
    from flow_core.store._store import process_start

    for pgid, start in record.check_groups():
        now = process_start(pgid)
        if now is not None and now != start:
            continue  # the id now names another process's group
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)


def _remove_tree(info: RunInfo) -> None:
    from flow_core.store._isolate import IsolatedTree, remove_tree

    meta = info.meta
    top, root = meta.get("tree_top"), meta.get("tree_root")
    if not isinstance(top, str) or not isinstance(root, str):
        return
    git_top = meta.get("tree_git_top")
    if isinstance(git_top, str):
        remove_tree(IsolatedTree("git-worktree", Path(top), Path(root), Path(git_top)))
    else:
        remove_tree(IsolatedTree("copy", Path(top), Path(root)))


def abandon(store: RunStore, info: RunInfo) -> None:
    """Settle ``info`` (status ``running``, process gone) as described in the module docstring.

    Best effort and never raising: a record that cannot be settled stays as it was, and
    ``RunInfo.interrupted`` still says its process is gone.
    """
    claim = info.dir / ".settling"
    try:
        os.mkdir(claim, 0o700)
    except OSError:
        return
    try:
        record = store.open(info)
        _end_groups(record)
        entries = record.changed_files()
        isolated = bool(info.meta.get("isolated"))
        root = info.meta.get("tree_root") if isolated else info.workspace
        left = _left_content(root, entries) if isinstance(root, str) else {}
        if isolated:
            for path, data in left.items():
                if data is not None:
                    with contextlib.suppress(Exception):
                        record.store_post_image(path, data)
        with contextlib.suppress(Exception):
            record.write_file("diff.patch", _diff(record, entries, left).encode("utf-8", "replace"))
        if isolated:
            with contextlib.suppress(Exception):
                _remove_tree(info)
        record.finish(
            "abandoned",
            abandoned_at=now_iso(),
            changed_files=[e.path for e in entries],
            **({"applied": False} if isolated else {}),
        )
    except Exception:  # a record that cannot be settled is read as it is
        return
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(claim)
