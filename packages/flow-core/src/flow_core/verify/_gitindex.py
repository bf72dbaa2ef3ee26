"""Git's index as the whole-tree watch's cache: tracked files git already vouches for.

A tracked file whose ``lstat`` equals what git's index recorded for it (change and
modification time to the nanosecond, device, inode, owner, group and size, each as the index
stores it: 32 bits) holds the blob the index names, by the same rule git itself uses for
``git status`` ("racy git": an entry recorded in the same clock tick as the index was written
is not trusted; ``Documentation/technical/racy-git.txt`` in git's sources). The watch then
takes the blob id instead of reading the file, so the first fingerprint of a large repository
reads only its untracked and changed files. Source of the rule: ``docs/architecture.md``,
section "Evidence".

Everything git is run through :func:`flow_core._git.run_git` (no hook, filter or fsmonitor
runs). Any failure (no git, no repository, an unreadable or unparsable index) gives ``None``
and the watch hashes every file, as without a repository.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from flow_core._git import run_git

__all__ = ["GIT_TIMEOUT", "GitIndex", "IndexEntry", "blob_hasher", "read_blob", "read_index"]

#: Seconds each git command of the watch may take (a 165,000-file index lists in about one).
GIT_TIMEOUT = 300.0
_U32 = 0xFFFFFFFF
_NS = 1_000_000_000
#: One ``git ls-files --stage --debug -z`` entry (``git/builtin/ls-files.c``, print_debug).
_ENTRY = re.compile(
    rb"([0-7]+) ([0-9a-f]+) ([0-3])\t([^\0]*)\0"
    rb"(  ctime: \d+:\d+\n  mtime: \d+:\d+\n  dev: \d+\tino: \d+\n  uid: \d+\tgid: \d+\n"
    rb"  size: \d+)\tflags: [0-9a-f]+\n"
)
#: The same stat block, from an ``lstat`` (every field truncated to 32 bits, as git stores it).
_BLOCK = b"  ctime: %d:%d\n  mtime: %d:%d\n  dev: %d\tino: %d\n  uid: %d\tgid: %d\n  size: %d"
_REGULAR = (b"100644", b"100755")


@dataclass(frozen=True)
class IndexEntry:
    """One stage-0 regular-file entry: its blob id and the stat data git recorded, as
    ``ls-files --debug`` prints it (change and modification time, device, inode, owner,
    group, size)."""

    oid: str
    stat: bytes


@dataclass(frozen=True)
class GitIndex:
    """The index as the watch uses it.

    Attributes:
        entries: workspace-relative ``/`` path -> entry (regular files at stage 0 only).
        written_ns: the index file's modification time (nanoseconds) read *before* it was
            listed; an entry whose times are not older is racy and not trusted.
        algorithm: ``sha1`` or ``sha256`` (the repository's object format).
    """

    entries: dict[str, IndexEntry]
    written_ns: int
    algorithm: str

    def vouches(self, rel: str, st: os.stat_result) -> str | None:
        """The blob id of ``rel`` when its ``lstat`` ``st`` is the recorded one and not racy."""
        entry = self.entries.get(rel)
        if entry is None:
            return None
        ctime_ns, mtime_ns = st.st_ctime_ns, st.st_mtime_ns
        if max(ctime_ns, mtime_ns) >= self.written_ns:
            return None
        now = _BLOCK % (
            (ctime_ns // _NS) & _U32,
            ctime_ns % _NS,
            (mtime_ns // _NS) & _U32,
            mtime_ns % _NS,
            st.st_dev & _U32,
            st.st_ino & _U32,
            st.st_uid & _U32,
            st.st_gid & _U32,
            st.st_size & _U32,
        )
        return entry.oid if now == entry.stat else None


def _git(root: str | Path, *args: str) -> bytes | None:
    try:
        done = run_git(root, *args, timeout=GIT_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _parse(listing: bytes) -> dict[str, IndexEntry] | None:
    """Entries from ``ls-files --stage --debug -z``; None if any part does not parse."""
    entries: dict[str, IndexEntry] = {}
    pos = 0
    for m in _ENTRY.finditer(listing):
        if m.start() != pos:
            return None
        pos = m.end()
        if m.group(3) != b"0" or m.group(1) not in _REGULAR:
            continue
        entries[os.fsdecode(m.group(4))] = IndexEntry(m.group(2).decode("ascii"), m.group(5))
    return entries if pos == len(listing) else None


def read_index(root: str | Path) -> GitIndex | None:
    """Git's index for the files under ``root`` (paths relative to ``root``).

    Args:
        root: the workspace root (the repository's top or a folder inside it).

    Returns:
        The index, or None when ``root`` is in no repository or git fails (see the module
        docstring).
    """
    where = _git(
        root, "rev-parse", "--path-format=absolute", "--git-path", "index", "--show-object-format"
    )
    if where is None:
        return None
    lines = os.fsdecode(where).splitlines()
    if len(lines) != 2 or lines[1] not in ("sha1", "sha256"):
        return None
    try:
        written_ns = os.stat(lines[0]).st_mtime_ns
    except OSError:
        return None
    listing = _git(root, "ls-files", "--stage", "--debug", "-z")
    entries = _parse(listing) if listing is not None else None
    if entries is None:
        return None
    return GitIndex(entries, written_ns, lines[1])


def blob_hasher(algorithm: str, size: int) -> hashlib._Hash:
    """A hash object primed with git's blob header: feed it the ``size`` content bytes and
    its ``hexdigest()`` is the blob id git gives that content."""
    h = hashlib.new(algorithm)
    h.update(b"blob %d\0" % size)
    return h


def read_blob(root: str | Path, oid: str) -> bytes | None:
    """The content of blob ``oid`` from the repository ``root`` is in (None: not there)."""
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", oid):
        return None
    return _git(root, "cat-file", "blob", oid)
