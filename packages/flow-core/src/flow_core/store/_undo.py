"""Undo a recorded run, and apply an isolated run's change to the workspace.

Both are all-or-nothing from the user's side: every file is compared with what the record says
it should hold first (SHA-256), every stored image is read and verified, and only then is
anything written, through ``flow_safeio.Workspace`` (the path rules, protected paths, no
symbolic link followed, atomic replace). A write that fails half-way is rolled back from the
bytes read just before. An undo is itself a run record (kind ``undo``), so it can be shown and
undone in turn. Source: flow-core's README, "Run store".
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from flow_core.store._record import FileEntry, RunRecord, StoreError, now_iso, sha256
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
    """What ``apply_run`` wrote: ``written`` (changed or created) and ``removed`` files."""

    run_id: str
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def _current(ws: Workspace, path: str) -> bytes | None:
    """The file's bytes now, ``None`` when it does not exist.

    Raises:
        StoreError: code ``undo_failed`` when it cannot be read safely (a symbolic link, not
            a regular file, a hard link, over the size cap): nothing is written then.
    """
    try:
        return ws.read_bytes(path)
    except NotFoundError:
        return None
    except SafeIOError as err:
        raise StoreError(
            f"{path} cannot be compared with the record ({err}); nothing changed",
            code="undo_failed",
        ) from err


def _write_set(ws: Workspace, changes: Mapping[str, bytes | None], code: str) -> None:
    """Write every change (``None``: remove); on a failure, put back what was written.

    Raises:
        StoreError: with ``code``, naming the file and why; the workspace is as before.
    """
    before: dict[str, bytes | None] = {}
    try:
        for path, data in changes.items():
            before[path] = _current(ws, path)
            if data is None:
                with contextlib.suppress(NotFoundError):
                    ws.remove(path)
            else:
                ws.write_bytes(path, data)
    except (OSError, SafeIOError) as err:
        failed = path
        for done, old in before.items():
            with contextlib.suppress(OSError, SafeIOError):
                if old is None:
                    ws.remove(done)
                else:
                    ws.write_bytes(done, old)
        raise StoreError(
            f"{failed}: {err}; every file written so far was put back, nothing changed",
            code=code,
        ) from err


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
    """Restore the files ``info``'s run changed to their pre-images; remove those it created.

    Args:
        store: the run store (the undo's own record goes there).
        info: the run to undo (a ``run`` or an ``undo`` record).
        workspace: the run's workspace, opened with the operator's protected paths.
        force: restore even the files that changed after the run (their current bytes are
            kept in the undo's record, so this undo can itself be undone).

    Returns:
        What was restored, removed, already in place, or forced.

    Raises:
        StoreError: ``undo_nothing`` (an isolated run never applied, or already undone),
            ``undo_conflict`` (a file changed since the run; nothing was written),
            ``undo_failed`` (a stored pre-image is missing or corrupt, or a write failed:
            everything written was put back).
    """
    _refuse_live(info, "undo")
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
    targets: list[tuple[FileEntry, bytes | None]] = []
    conflicts: list[str] = []
    for entry in record.changed_files():
        now = _current(workspace, entry.path)
        digest = sha256(now)
        if digest == entry.pre_sha256:
            result.already.append(entry.path)
            continue
        if not entry.post_known or digest != entry.post_sha256:
            conflicts.append(entry.path)
            if not force:
                continue
            result.forced.append(entry.path)
        targets.append((entry, now))
    if conflicts and not force:
        raise StoreError(
            f"undo of {info.id} refused, nothing changed: {', '.join(conflicts)} changed "
            "since the run (or the run was killed while writing it); look at them, then "
            f"flow undo {info.id} --force to restore the run's pre-images anyway",
            code="undo_conflict",
        )
    if not targets:
        return result
    images = {
        e.path: (None if e.pre is None else record.read_image(e.pre, e.pre_sha256))
        for e, _ in targets
    }
    undo = store.begin(
        workspace=info.workspace, kind="undo", task=f"undo {info.id}", target=info.id
    )
    try:
        for entry, now in targets:
            undo.pre_image(entry.path, now)
        _write_set(workspace, images, "undo_failed")
    except BaseException:
        undo.finish("failed")
        raise
    undo.post_hashes({p: sha256(d) for p, d in images.items()})
    for entry, _ in targets:
        (result.removed if entry.pre is None else result.restored).append(entry.path)
    changed = sorted(images)
    undo.finish("undone", target=info.id, changed_files=changed)
    record.save_meta(undone_by=undo.id, undone_at=now_iso())
    result.undo_id = undo.id
    return result


def apply_run(
    store: RunStore, info: RunInfo, workspace: Workspace, *, own_run: bool = False
) -> ApplyResult:
    """Apply an isolated run's change to the workspace, as one all-or-nothing patch.

    Every file the run changed must still hold, in the workspace, the bytes the run started
    from (SHA-256 of the pre-image); otherwise nothing is written and the patch stays in the
    record.

    Args:
        own_run: the caller is the process still running that run (``run_isolated`` applying
            its verified change); anyone else must wait for the run to end.

    Raises:
        StoreError: ``apply_refused`` (not an isolated run, or already applied),
            ``apply_conflict`` (the workspace changed meanwhile), ``undo_failed`` (a stored
            image is missing or corrupt) or ``apply_conflict`` after a failed write (put back).
    """
    if not own_run:
        _refuse_live(info, "apply")
    meta = info.meta
    if not meta.get("isolated"):
        raise StoreError(
            f"run {info.id} was not isolated: its change is already in the workspace",
            code="apply_refused",
        )
    if meta.get("applied"):
        raise StoreError(f"run {info.id} was already applied", code="apply_refused")
    record = store.open(info)
    entries = record.changed_files()
    moved = [
        e.path
        for e in entries
        if sha256(_current(workspace, e.path)) != e.pre_sha256 or not e.post_known
    ]
    if moved:
        raise StoreError(
            f"apply of {info.id} refused, nothing changed: {', '.join(moved)} changed in the "
            f"workspace since the run started; the patch is kept: flow show {info.id} --diff",
            code="apply_conflict",
        )
    changes: dict[str, bytes | None] = {}
    for entry in entries:
        if entry.post_sha256 is None:
            changes[entry.path] = None
        elif entry.post is None:
            raise StoreError(
                f"run {info.id} kept no new content for {entry.path}; it cannot be applied",
                code="undo_failed",
            )
        else:
            changes[entry.path] = record.read_image(entry.post, entry.post_sha256)
    _write_set(workspace, changes, "apply_conflict")
    record.save_meta(applied=True, applied_at=now_iso())
    result = ApplyResult(run_id=info.id)
    for path, data in changes.items():
        (result.removed if data is None else result.written).append(path)
    return result


def left_in_place(record: RunRecord) -> list[str]:
    """Paths the record's run changed and left in the workspace (for "what was left" lines)."""
    return [e.path for e in record.changed_files()]
