"""Undo a recorded run, and apply an isolated run's change to the workspace.

Both are a three-way merge per file, judged against the bytes on disk when they run: the
record holds each file's pre-image and the state the run's own last write left (SHA-256 and
permission bits, taken right after that write, never refreshed from the disk later). A file
is written only when it still holds the state the operation expects (undo: what the run left;
apply: what the run started from); any other file is a conflict, named with why, and then
nothing at all is written. Every stored image is read and verified first, and every write
goes through ``flow_safeio.Workspace`` (the path rules, protected paths, no symbolic link
followed, atomic replace); a write that fails half-way is rolled back from the state read
just before. An undo is itself a run record (kind ``undo``), so it can be shown and undone in
turn. Source: flow-core's README, "Run store".
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from flow_core._codes import ErrorCode
from flow_core.store._bytes import now_iso, sha256
from flow_core.store._record import FileEntry, RunRecord, StoreError
from flow_core.store._store import RunInfo, RunStore
from flow_safeio import NotFoundError, SafeIOError, Workspace

__all__ = ["ApplyResult", "UndoResult", "apply_run", "undo_run"]


@dataclass
class UndoResult:
    """What ``undo_run`` did.

    Attributes:
        run_id: the run that was undone.
        undo_id: the undo's own record.
        restored: files written back to their pre-images.
        removed: files the run had created, now removed.
        already: files that already held their pre-image (nothing to do).
        forced: files that had changed since the run and were restored anyway (``force``).
    """

    run_id: str
    undo_id: str | None = None
    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    forced: list[str] = field(default_factory=list)


@dataclass
class ApplyResult:
    """What ``apply_run`` wrote: ``written`` (changed or created) and ``removed`` files, and
    the files that ``already`` held the run's new content."""

    run_id: str
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Now:
    """One file as it is on disk now: bytes and permission bits, or why it cannot be judged.

    ``data`` None and ``odd`` None: there is no file. ``odd``: something Flow does not read or
    replace is there (a symbolic link, a directory, a hard link, ...), said in words.
    """

    data: bytes | None
    mode: int | None = None
    odd: str | None = None

    def holds(self, digest: str | None, mode: int | None = None) -> bool:
        """Whether this is exactly the recorded state (``mode`` None: bits not recorded)."""
        if self.odd is not None or sha256(self.data) != digest:
            return False
        return mode is None or self.data is None or self.mode == mode


_KINDS = {"dir": "a directory", "symlink": "a symbolic link", "other": "a special file"}


def _now(ws: Workspace, path: str) -> _Now:
    """``path`` as it is now, never followed through a link and never raising."""
    try:
        entry = ws.stat(path)
        if entry.kind != "file":
            return _Now(None, odd=f"is now {_KINDS.get(entry.kind, entry.kind)}")
        return _Now(ws.read_bytes(path), entry.mode)
    except NotFoundError:
        return _Now(None)
    except SafeIOError as err:
        return _Now(None, odd=f"cannot be read safely ({err})")


#: One planned write: the new bytes (None: remove the file) and the permission bits to give
#: them (None: keep the existing file's, or the umask's for a new one).
_Change = tuple[bytes | None, int | None]


def _write_set(ws: Workspace, changes: Mapping[str, _Change], code: ErrorCode) -> None:
    """Write every change; on a failure, put back what was written.

    Raises:
        StoreError: with ``code``, naming the file and why; the workspace is as before.
    """
    before: dict[str, _Now] = {}
    try:
        for path, (data, mode) in changes.items():
            before[path] = _now(ws, path)
            if data is None:
                with contextlib.suppress(NotFoundError):
                    ws.remove(path)
            else:
                ws.write_bytes(path, data, mode=mode)
    except (OSError, SafeIOError) as err:
        failed = path
        for done, old in before.items():
            with contextlib.suppress(OSError, SafeIOError):
                if old.data is None:
                    ws.remove(done)
                else:
                    ws.write_bytes(done, old.data, mode=old.mode)
        raise StoreError(
            f"{failed}: {err}; every file written so far was put back, nothing changed",
            code=code,
        ) from err


def _mode_now(ws: Workspace, path: str) -> int | None:
    """Permission bits of ``path`` right after Flow wrote it (None: no file or unreadable)."""
    try:
        return ws.stat(path).mode
    except SafeIOError:
        return None


def _why(entry: FileEntry, now: _Now, expected: str | None, mode: int | None, when: str) -> str:
    """Why ``now`` is not the state ``expected``: one short clause for the conflict list."""
    if now.odd is not None:
        return now.odd
    if not entry.post_known:
        return "the run ended while writing it"
    if now.data is None:
        return f"deleted since {when}"
    if expected is None:
        return f"created since {when}"
    if sha256(now.data) == expected and mode is not None and now.mode is not None:
        return f"permissions changed since {when} ({mode:o} to {now.mode:o})"
    return f"changed since {when}"


def _later_writers(store: RunStore, info: RunInfo, paths: list[str]) -> dict[str, list[str]]:
    """For each path, the later runs of the same workspace that wrote it (oldest first)."""
    found: dict[str, list[str]] = {}
    wanted = set(paths)
    for later in reversed(store.list(info.workspace)):
        if later.id <= info.id or later.meta.get("target") == info.id:
            continue
        if later.meta.get("isolated") and not later.meta.get("applied"):
            continue
        for entry in store.open(later).files():
            if entry.path in wanted:
                found.setdefault(entry.path, []).append(later.id)
    return found


def _conflict_list(store: RunStore, info: RunInfo, conflicts: list[tuple[str, str]]) -> str:
    """``a.py (changed since the run; run X wrote it later), b.py (...)``."""
    writers = _later_writers(store, info, [p for p, _ in conflicts])
    parts = []
    for path, why in conflicts:
        later = f"; run {', '.join(writers[path])} wrote it later" if path in writers else ""
        parts.append(f"{path} ({why}{later})")
    return ", ".join(parts)


def _refuse_live(info: RunInfo, what: str) -> None:
    """A record whose process is still running is not undone or applied under its feet."""
    if info.status == "running" and not info.interrupted:
        raise StoreError(
            f"run {info.id} is still running (pid {info.meta.get('pid')}); let it finish or "
            f"stop it, then {what} it",
            code="undo_conflict" if what == "undo" else "apply_conflict",
        )


def undo_run(
    store: RunStore, info: RunInfo, workspace: Workspace, *, force: bool = False
) -> UndoResult:
    """Put back the files ``info``'s run changed, as a three-way merge per file.

    Each file is judged against what is on disk now: it is restored to its pre-image only
    when it holds exactly what the run's last write left (bytes and permission bits, as
    recorded right after that write); a file already back at its pre-image is left alone;
    anything else (someone edited, deleted, re-created or chmod-ed it, or replaced it with a
    link or a directory) is a conflict, and then nothing at all is written. Source: flow-core's
    README, "Run store".

    Args:
        store: the run store (the undo's own record goes there).
        info: the run to undo (a ``run`` or an ``undo`` record).
        workspace: the run's workspace, opened with the operator's protected paths.
        force: restore the conflicting files too; their current bytes and bits are first kept
            as the pre-images of the undo's own record, so this undo can itself be undone.
            A symbolic link, directory or special file is never replaced, even so.

    Returns:
        What was restored, removed, already in place, or forced.

    Raises:
        StoreError: ``undo_nothing`` (an isolated run never applied, or already undone),
            ``undo_conflict`` (files changed since the run, each named with why and the later
            runs that wrote it; nothing was written), ``workspace_busy`` (a run, undo or
            apply is writing the workspace now), ``undo_failed`` (a stored pre-image is
            missing or corrupt, a link is in the way, or a write failed: everything written
            was put back).
    """
    _refuse_live(info, "undo")
    with store.workspace_lock(info.workspace) as lock:
        lock.acquire(wait=False, what="undo", run_id=info.id)
        return _undo_locked(store, info, workspace, force=force)


def _undo_locked(
    store: RunStore, info: RunInfo, workspace: Workspace, *, force: bool
) -> UndoResult:
    """``undo_run`` once the workspace's writer lock is held."""
    meta = info.meta
    if meta.get("isolated") and not meta.get("applied"):
        raise StoreError(
            f"run {info.id} ran isolated and its change was never applied to the workspace; "
            f"nothing to undo (flow show {info.id} --diff shows it, flow apply {info.id} "
            "applies it)",
            code="undo_nothing",
        )
    if meta.get("undone_by") and not force:
        raise StoreError(
            f"run {info.id} was already undone by {meta['undone_by']}; to redo it, undo "
            f"that: flow undo {meta['undone_by']}",
            code="undo_nothing",
        )
    record = store.open(info)
    result = UndoResult(run_id=info.id)
    targets: list[tuple[FileEntry, _Now]] = []
    conflicts: list[tuple[str, str]] = []
    for entry in record.changed_files():
        now = _now(workspace, entry.path)
        if entry.post_known and now.holds(entry.post_sha256, entry.post_mode):
            targets.append((entry, now))
        elif now.holds(entry.pre_sha256, entry.pre_mode):
            result.already.append(entry.path)
        else:
            why = _why(entry, now, entry.post_sha256, entry.post_mode, "the run")
            conflicts.append((entry.path, why))
            if force and now.odd is None:
                result.forced.append(entry.path)
                targets.append((entry, now))
    _refuse_conflicts(store, info, conflicts, force=force)
    if not targets:
        return result
    changes = _undo_changes(record, targets, forced=set(result.forced))
    undo = store.begin(
        workspace=info.workspace, kind="undo", task=f"undo {info.id}", target=info.id
    )
    try:
        for entry, now in targets:
            undo.pre_image(entry.path, now.data, now.mode)
        _write_set(workspace, changes, "undo_failed")
    except BaseException:
        undo.finish("failed")
        raise
    for path, (data, _mode) in changes.items():
        undo.post_state(path, sha256(data), _mode_now(workspace, path))
    for entry, _ in targets:
        (result.removed if entry.pre is None else result.restored).append(entry.path)
    undo.finish("undone", target=info.id, changed_files=sorted(changes))
    record.save_meta(undone_by=undo.id, undone_at=now_iso())
    result.undo_id = undo.id
    return result


def _refuse_conflicts(
    store: RunStore, info: RunInfo, conflicts: list[tuple[str, str]], *, force: bool
) -> None:
    """Raise for the conflicts an undo cannot pass (all without ``force``; links even so)."""
    if not conflicts:
        return
    if not force:
        raise StoreError(
            f"undo of {info.id} refused, nothing changed: "
            f"{_conflict_list(store, info, conflicts)}; look at them, then flow undo {info.id} "
            "--force to restore the run's pre-images anyway (your current content is kept in "
            "the undo's own record, so that undo can be undone)",
            code="undo_conflict",
        )
    odd = [(p, why) for p, why in conflicts if why.startswith(("is now", "cannot be read"))]
    if odd:
        raise StoreError(
            f"undo of {info.id} refused, nothing changed: "
            f"{_conflict_list(store, info, odd)}; Flow never replaces a link, directory or "
            "special file, even with --force: move it away first",
            code="undo_failed",
        )


def _undo_changes(
    record: RunRecord, targets: list[tuple[FileEntry, _Now]], *, forced: set[str]
) -> dict[str, _Change]:
    """The pre-images to write back, read and checked against their hashes first."""
    changes: dict[str, _Change] = {}
    for entry, now in targets:
        if entry.pre is None:
            changes[entry.path] = (None, None)
            continue
        data = record.read_image(entry.pre, entry.pre_sha256)
        # The recorded bits come back: a forced undo changed them (the person's chmod), and
        # undoing that undo must give them back. Only a file whose post state kept no bits
        # (an older record) and is not forced keeps the bits it has now.
        keep = now.data is not None and entry.path not in forced and entry.post_mode is None
        changes[entry.path] = (data, None if keep else entry.pre_mode)
    return changes


def apply_run(
    store: RunStore, info: RunInfo, workspace: Workspace, *, own_run: bool = False
) -> ApplyResult:
    """Apply an isolated run's change to the workspace, as one all-or-nothing patch.

    A three-way merge per file against what is on disk now: a file that still holds the bytes
    the run started from gets the run's new bytes; one that already holds them is left alone;
    anything else is a conflict, and then nothing is written and the patch stays in the
    record. Permission bits are not compared (a fresh checkout's bits follow the umask). The
    new bytes come from the record (``post/NNNN``) or, for a run that was killed before it
    kept them, from its tree when that is still there, checked against the recorded hash.

    Args:
        own_run: the caller is the process still running that run (``run_isolated`` applying
            its verified change, holding the workspace's lock); anyone else must wait for the
            run to end, and takes the lock itself.

    Raises:
        StoreError: ``apply_refused`` (not an isolated run, or already applied),
            ``apply_conflict`` (the workspace changed meanwhile, each file named),
            ``workspace_busy`` (a run, undo or apply is writing the workspace now),
            ``undo_failed`` (a stored image is missing or corrupt) or ``apply_conflict``
            after a failed write (put back).
    """
    if own_run:  # the running isolated run holds the workspace's lock already
        return _apply_locked(store, info, workspace)
    _refuse_live(info, "apply")
    with store.workspace_lock(info.workspace) as lock:
        lock.acquire(wait=False, what="apply", run_id=info.id)
        return _apply_locked(store, info, workspace)


def _apply_locked(store: RunStore, info: RunInfo, workspace: Workspace) -> ApplyResult:
    """``apply_run`` once the workspace's writer lock is held."""
    meta = info.meta
    if not meta.get("isolated"):
        raise StoreError(
            f"run {info.id} was not isolated: its change is already in the workspace",
            code="apply_refused",
        )
    if meta.get("applied"):
        raise StoreError(f"run {info.id} was already applied", code="apply_refused")
    record = store.open(info)
    targets: list[FileEntry] = []
    already: list[str] = []
    conflicts: list[tuple[str, str]] = []
    for entry in record.changed_files():
        now = _now(workspace, entry.path)
        if entry.post_known and now.holds(entry.post_sha256):
            already.append(entry.path)
        elif entry.post_known and now.holds(entry.pre_sha256):
            targets.append(entry)
        else:
            conflicts.append(
                (entry.path, _why(entry, now, entry.pre_sha256, None, "the run started"))
            )
    if conflicts:
        raise StoreError(
            f"apply of {info.id} refused, nothing changed: "
            f"{_conflict_list(store, info, conflicts)}; the patch is kept: "
            f"flow show {info.id} --diff",
            code="apply_conflict",
        )
    changes = {e.path: (_new_content(record, info, e), None) for e in targets}
    bits = {e.path: _mode_now(workspace, e.path) for e in targets if e.pre is not None}
    _write_set(workspace, changes, "apply_conflict")
    for path, mode in bits.items():  # the bits the person gave the file before the apply
        record.pre_mode(path, mode)
    for path, (data, _mode) in changes.items():
        record.post_state(path, sha256(data), _mode_now(workspace, path))
    for path in already:  # the workspace's own bits, not the tree's, are what undo expects
        record.post_state(path, sha256(_now(workspace, path).data), _mode_now(workspace, path))
    record.save_meta(applied=True, applied_at=now_iso())
    result = ApplyResult(run_id=info.id, already=already)
    for path, (data, _mode) in changes.items():
        (result.removed if data is None else result.written).append(path)
    return result


def _new_content(record: RunRecord, info: RunInfo, entry: FileEntry) -> bytes | None:
    """What an isolated run left in ``entry``'s file: None (removed), or its checked bytes.

    Raises:
        StoreError: ``undo_failed`` when neither the record nor the run's tree has them.
    """
    if entry.post_sha256 is None:
        return None
    if entry.post is not None:
        return record.read_image(entry.post, entry.post_sha256)
    root = info.meta.get("tree_root")
    if isinstance(root, str) and os.path.isdir(root):
        with contextlib.suppress(OSError, SafeIOError), Workspace(root) as tree:
            data = tree.read_bytes(entry.path)
            if sha256(data) == entry.post_sha256:
                return data
    raise StoreError(
        f"run {info.id} kept no new content for {entry.path} and its tree is gone; it "
        "cannot be applied (flow show --diff still shows the change)",
        code="undo_failed",
    )


def left_in_place(record: RunRecord) -> list[str]:
    """Paths the record's run changed and left in the workspace (for "what was left" lines)."""
    return [e.path for e in record.changed_files()]
