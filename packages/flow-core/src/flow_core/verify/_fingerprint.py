"""The whole workspace watched: a fingerprint of every file, compared before and after.

Flow tracks the files its own tools write, but a check, a formatter, an editor, a leftover
process or a person can change others. A :class:`Fingerprint` records every regular file and
symbolic link under the workspace root (generated folders excluded, by flow-safeio's one
rule, ``flow_safeio.is_generated_dir``); comparing two (:func:`compare`) lists every path
that appeared, disappeared or changed. Source of the rule: ``docs/architecture.md``, section
"Evidence".

Cost: the walk stats every entry; a file's content is hashed (SHA-256) only when there is no
earlier fingerprint that saw it with the same size, modification time, change time, inode and
mode, and, in a git repository, git's index does not vouch for it (a tracked file whose stat
is the one the index recorded holds the blob the index names: :mod:`._gitindex`; its identity
is then that blob id, ``oid``, and its content is not read). A hashed file gets its git blob id
too, so a file compared once by blob id and once by SHA-256 is still compared by content. A
file whose change time lies within :data:`RACY_NS` of when the earlier fingerprint was taken is
hashed again (the "racy git" rule: a write in the same clock tick can leave the times
unchanged). Change time cannot be set from user space, so restoring a file's modification time
does not hide a rewrite.

Bounds: at most ``max_files`` entries and ``max_hash_bytes`` newly hashed bytes per
fingerprint (both in its :class:`FingerprintScope`). Past either bound the fingerprint is
*incomplete* (``complete`` false, with ``problem`` saying why) and cannot vouch that nothing
changed.

The walk holds directory descriptors and opens every name relative to its parent with
``O_NOFOLLOW``: a symbolic link is recorded by its target text and never followed.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from flow_safeio import is_generated_dir

from ._gitindex import GitIndex, blob_hasher, read_index

__all__ = [
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_HASH_BYTES",
    "RACY_NS",
    "FileState",
    "Fingerprint",
    "FingerprintScope",
    "TreeChange",
    "compare",
    "take_fingerprint",
]

#: Most entries (files and links) one fingerprint records.
DEFAULT_MAX_FILES = 100_000
#: Most bytes one fingerprint hashes anew (1 GiB); unchanged files cost a stat only.
DEFAULT_MAX_HASH_BYTES = 1 << 30
#: Nanoseconds: a file changed this close to an earlier fingerprint is hashed again.
RACY_NS = 100_000_000
#: Pre-images kept for the diff: files up to this size (bytes) ...
KEEP_FILE_BYTES = 256 * 1024
#: ... while the total kept stays under this (bytes).
KEEP_TOTAL_BYTES = 32 * 1024 * 1024
_MAX_DEPTH = 64
_CHUNK = 1 << 20
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

ChangeKind = Literal["added", "removed", "modified", "type_changed", "mode_changed"]


@dataclass(frozen=True)
class FileState:
    """One entry: a regular file (``digest`` = SHA-256 hex, ``""`` when git's index vouched
    for it unread; ``oid`` = git blob id, ``""`` outside a repository) or a link (``digest`` =
    target)."""

    kind: Literal["file", "link"]
    size: int
    mode: int
    ino: int
    mtime_ns: int
    ctime_ns: int
    digest: str
    oid: str = ""

    def same_content(self, other: FileState) -> bool:
        """Same content (or link target): by SHA-256 when both have one, else by blob id."""
        if self.digest and other.digest:
            return self.digest == other.digest
        return bool(self.oid) and self.oid == other.oid

    def same_stat(self, st: os.stat_result) -> bool:
        return (
            self.size == st.st_size
            and self.mode == st.st_mode
            and self.ino == st.st_ino
            and self.mtime_ns == st.st_mtime_ns
            and self.ctime_ns == st.st_ctime_ns
        )


@dataclass
class Fingerprint:
    """Every file and link under the root, by workspace-relative ``/`` path.

    Attributes:
        files: the recorded entries.
        complete: false when a bound was reached; ``problem`` says which.
        problem: why the fingerprint is incomplete, or None.
        started_ns: wall-clock time (``time.time_ns``) when the walk began.
        hashed_files / hashed_bytes: the content actually hashed this time.
        kept: pre-images (bytes) of small files, when taken with ``keep=True``.
        git_dirs: workspace-relative paths of every ``.git`` folder seen (never entered); one
            that appears or goes between two fingerprints is an outside change.
        algorithm: the repository's blob id hash (``sha1``/``sha256``), None outside one.
        from_index: files git's index vouched for (not read).
    """

    files: dict[str, FileState] = field(default_factory=dict)
    complete: bool = True
    problem: str | None = None
    started_ns: int = 0
    hashed_files: int = 0
    hashed_bytes: int = 0
    kept: dict[str, bytes] = field(default_factory=dict)
    git_dirs: set[str] = field(default_factory=set)
    algorithm: str | None = None
    from_index: int = 0


@dataclass(frozen=True)
class TreeChange:
    """One path that differs between two fingerprints.

    Attributes:
        path: workspace-relative path.
        change: ``added``, ``removed``, ``modified`` (content or link target),
            ``type_changed`` (file ↔ link) or ``mode_changed`` (permission bits only).
        detail: a short human description (sizes, modes, link targets).
    """

    path: str
    change: ChangeKind
    detail: str


@dataclass(frozen=True)
class FingerprintScope:
    """What one fingerprint covers and how far it may go (module docstring, "Bounds").

    Attributes:
        also: workspace-relative file paths recorded even inside a generated folder (the
            protected files that live there, such as ``.vscode/tasks.json``).
        max_files: most entries recorded.
        max_hash_bytes: most bytes hashed anew.
    """

    also: tuple[str, ...] = ()
    max_files: int = DEFAULT_MAX_FILES
    max_hash_bytes: int = DEFAULT_MAX_HASH_BYTES


class _Walk:
    def __init__(
        self,
        previous: Fingerprint | None,
        scope: FingerprintScope,
        keep: bool,
        *,
        index: GitIndex | None = None,
        read: frozenset[str] = frozenset(),
    ) -> None:
        self.fp = Fingerprint(started_ns=time.time_ns())
        self.previous = previous
        self.index = index
        self.read = read
        self.fp.algorithm = index.algorithm if index is not None else None
        if self.fp.algorithm is None and previous is not None:
            self.fp.algorithm = previous.algorithm
        self.max_files = scope.max_files
        self.max_hash_bytes = scope.max_hash_bytes
        self.keep = keep
        self.kept_total = 0

    def stop(self, problem: str) -> None:
        if self.fp.complete:
            self.fp.complete = False
            self.fp.problem = problem

    def record(self, rel: str, dir_fd: int, name: str, st: os.stat_result) -> None:
        if len(self.fp.files) >= self.max_files:
            self.stop(f"tree too large: more than {self.max_files} files outside generated folders")
            return
        if stat.S_ISLNK(st.st_mode):
            try:
                target = os.readlink(name, dir_fd=dir_fd)
            except OSError:
                target = "?"
            self.fp.files[rel] = _state("link", st, target)
            return
        if self.unread(rel, st):
            return
        if self.fp.hashed_bytes + st.st_size > self.max_hash_bytes:
            self.stop(f"tree too large: more than {self.max_hash_bytes} bytes to hash")
            return
        keep = self.keep and st.st_size <= KEEP_FILE_BYTES
        digest, oid, data, st2 = _hash(dir_fd, name, keep=keep, algorithm=self.fp.algorithm)
        if digest is None or st2 is None:
            return  # vanished or not a regular file any more: the next walk sees what is there
        self.fp.hashed_files += 1
        self.fp.hashed_bytes += st2.st_size
        self.fp.files[rel] = _state("file", st2, digest, oid)
        if data is not None and self.kept_total + len(data) <= KEEP_TOTAL_BYTES:
            self.fp.kept[rel] = data
            self.kept_total += len(data)

    def unread(self, rel: str, st: os.stat_result) -> bool:
        """Record ``rel`` without reading it when an earlier fingerprint or git's index vouches
        for its stat (a path in ``read`` is always read unless an earlier reading stands)."""
        old = self.previous.files.get(rel) if self.previous is not None else None
        racy = self.previous is not None and st.st_ctime_ns >= self.previous.started_ns - RACY_NS
        fresh = old is not None and old.kind == "file" and old.same_stat(st) and not racy
        if old is not None and fresh and (old.digest or rel not in self.read):
            self.fp.files[rel] = old
            return True
        oid = self.index.vouches(rel, st) if self.index is not None else None
        if oid is None or rel in self.read:
            return False
        self.fp.files[rel] = _state("file", st, "", oid)
        self.fp.from_index += 1
        return True

    def scan(self, dir_fd: int, prefix: str, depth: int) -> None:
        try:
            entries = sorted(os.scandir(dir_fd), key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            if not self.fp.complete:
                return
            rel = f"{prefix}{e.name}"
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if _is_git(e.name):
                    self.fp.git_dirs.add(rel)
                    continue
                if is_generated_dir(dir_fd, e.name):
                    continue
                if depth >= _MAX_DEPTH:
                    self.stop(f"tree too deep: more than {_MAX_DEPTH} levels at {rel}")
                    return
                try:
                    sub = os.open(
                        e.name,
                        os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC,
                        dir_fd=dir_fd,
                    )
                except OSError:
                    continue
                try:
                    self.scan(sub, rel + "/", depth + 1)
                finally:
                    os.close(sub)
            elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                self.record(rel, dir_fd, e.name, st)

    def exact(self, root_fd: int, rel: str) -> None:
        """Record one exact path even if it lies inside a generated folder."""
        if rel in self.fp.files:
            return
        parts = rel.split("/")
        fd = root_fd
        opened: list[int] = []
        try:
            for part in parts[:-1]:
                fd = os.open(
                    part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC, dir_fd=fd
                )
                opened.append(fd)
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                self.record(rel, fd, parts[-1], st)
        except OSError:
            return
        finally:
            for o in opened:
                os.close(o)


def _is_git(name: str) -> bool:
    return name.rstrip(". ").casefold() == ".git"


def _state(
    kind: Literal["file", "link"], st: os.stat_result, digest: str, oid: str = ""
) -> FileState:
    return FileState(
        kind=kind,
        size=st.st_size,
        mode=st.st_mode,
        ino=st.st_ino,
        mtime_ns=st.st_mtime_ns,
        ctime_ns=st.st_ctime_ns,
        digest=digest,
        oid=oid,
    )


_Hashed = tuple[str | None, str, bytes | None, os.stat_result | None]


def _hash(dir_fd: int, name: str, *, keep: bool, algorithm: str | None) -> _Hashed:
    """SHA-256 and git blob id (``""`` without ``algorithm`` or when the size changed while
    reading) of a regular file opened without following links, and its bytes if ``keep``."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None, "", None, None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "", None, None
        h = hashlib.sha256()
        blob = blob_hasher(algorithm, st.st_size) if algorithm else None
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, _CHUNK):
            size += len(chunk)
            h.update(chunk)
            if blob is not None:
                blob.update(chunk)
            if keep:
                chunks.append(chunk)
        oid = blob.hexdigest() if blob is not None and size == st.st_size else ""
        return h.hexdigest(), oid, (b"".join(chunks) if keep else None), st
    except OSError:
        return None, "", None, None
    finally:
        os.close(fd)


def take_fingerprint(
    root: str | Path,
    *,
    scope: FingerprintScope = FingerprintScope(),
    previous: Fingerprint | None = None,
    keep: bool = False,
    git_index: bool = True,
    read: Iterable[str] = (),
) -> Fingerprint:
    """Fingerprint every file and link under ``root``.

    Args:
        root: the workspace root (absolute directory).
        scope: the paths recorded inside generated folders too, and the two bounds
            (:class:`FingerprintScope`; the default: none, and the default bounds).
        previous: an earlier fingerprint of the same root; files whose stat is unchanged keep
            its digest instead of being read again.
        keep: keep the bytes of small files (:data:`KEEP_FILE_BYTES`, at most
            :data:`KEEP_TOTAL_BYTES` in all) so a later diff can show what changed (a file
            git's index vouched for is not read: its blob holds the earlier content).
        git_index: take tracked files git's index vouches for unread (module docstring).
        read: paths whose content is read whatever vouches for them (those Flow wrote, so
            they compare by SHA-256 with what Flow wrote).

    Returns:
        The fingerprint; ``complete`` is false (with ``problem``) when a bound was reached.

    Raises:
        OSError: the root itself cannot be opened as a directory.
    """
    index = read_index(root) if git_index else None
    walk = _Walk(previous, scope, keep, index=index, read=frozenset(read))
    root_fd = os.open(os.fspath(root), os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        walk.scan(root_fd, "", 0)
        for rel in scope.also:
            if walk.fp.complete:
                walk.exact(root_fd, rel)
    finally:
        os.close(root_fd)
    return walk.fp


def _describe(state: FileState) -> str:
    if state.kind == "link":
        return f"symbolic link to {state.digest!r}"
    return f"{state.size} bytes, mode {stat.S_IMODE(state.mode):o}"


def compare(
    before: Fingerprint, after: Fingerprint, *, written: Mapping[str, str | None] | None = None
) -> list[TreeChange]:
    """Every path that differs between two fingerprints and not by Flow's tools, sorted.

    Args:
        before: the earlier fingerprint.
        after: the later one.
        written: paths Flow's own tools wrote since ``before``, mapped to the SHA-256 of what
            they last wrote (None: no file). Such a path is reported only when what is there
            now differs from that: something else changed it after Flow's write.

    Returns:
        One :class:`TreeChange` per differing path.
    """
    written = written or {}
    out: list[TreeChange] = []
    for path in sorted(set(before.files) | set(after.files) | set(written)):
        old, new = before.files.get(path), after.files.get(path)
        if path in written:
            actual = new.digest if new is not None and new.kind == "file" else None
            if actual == written[path]:
                # Flow's writes keep an existing file's mode: a new mode came from elsewhere.
                if old is not None and new is not None and old.kind == "file":
                    change = _change(path, old, _state_like(new, old))
                    if change is not None:
                        out.append(change)
                continue
            if new is None:
                out.append(TreeChange(path, "removed", "removed after Flow's tool wrote it"))
            else:
                what = "replaced by a " + new.kind if new.kind != "file" else "rewritten"
                out.append(
                    TreeChange(
                        path,
                        "modified",
                        f"{what} after Flow's tool wrote it (now {_describe(new)})",
                    )
                )
            continue
        change = _change(path, old, new)
        if change is not None:
            out.append(change)
    return sorted(out + _git_changes(before, after), key=lambda c: c.path)


def _git_changes(before: Fingerprint, after: Fingerprint) -> list[TreeChange]:
    """A ``.git`` folder that appeared or went: Flow's tools never write one, so it is an
    outside change (its hooks and configuration would steer a later ``git``)."""
    out = [
        TreeChange(p, "added", "a git folder appeared (Flow's git never uses it)")
        for p in sorted(after.git_dirs - before.git_dirs)
    ]
    out += [TreeChange(p, "removed", "a git folder") for p in before.git_dirs - after.git_dirs]
    return out


def _state_like(state: FileState, like: FileState) -> FileState:
    """``state`` with the content identity of ``like`` (to compare only what else differs)."""
    return FileState(
        state.kind,
        state.size,
        state.mode,
        state.ino,
        state.mtime_ns,
        state.ctime_ns,
        like.digest,
        like.oid,
    )


def _change(path: str, old: FileState | None, new: FileState | None) -> TreeChange | None:
    if old is None and new is None:
        return None
    if old is None:
        assert new is not None
        return TreeChange(path, "added", _describe(new))
    if new is None:
        return TreeChange(path, "removed", f"was {_describe(old)}")
    if old.kind != new.kind:
        return TreeChange(path, "type_changed", f"{_describe(old)} → {_describe(new)}")
    if not old.same_content(new):
        if new.kind == "link":
            return TreeChange(path, "modified", f"link target {old.digest!r} → {new.digest!r}")
        return TreeChange(path, "modified", f"content changed ({old.size} → {new.size} bytes)")
    if stat.S_IMODE(old.mode) != stat.S_IMODE(new.mode):
        return TreeChange(
            path, "mode_changed", f"mode {stat.S_IMODE(old.mode):o} → {stat.S_IMODE(new.mode):o}"
        )
    return None
