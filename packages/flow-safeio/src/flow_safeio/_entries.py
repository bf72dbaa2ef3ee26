"""What :class:`flow_safeio.Workspace` reports about entries: :class:`Entry` and :class:`Listing`.

Nothing here follows a link; a symbolic link is described as ``kind="symlink"``
(``docs/architecture.md``, "File I/O").
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = ["Entry", "EntryKind", "Listing", "entry"]

EntryKind: TypeAlias = Literal["file", "dir", "symlink", "other"]


@dataclass(frozen=True, slots=True)
class Entry:
    """What :meth:`Workspace.stat` and :meth:`Workspace.list_dir` report about one entry.

    Nothing is followed: a symbolic link is reported as ``kind="symlink"``.

    Attributes:
        name: The last component (``"."`` for the root).
        path: The normalised workspace-relative path (``"."`` for the root).
        kind: ``"file"`` (regular), ``"dir"``, ``"symlink"`` or ``"other"`` (FIFO, socket,
            device).
        size: Size in bytes for regular files; 0 for every other kind.
        mode: Permission bits (``stat.S_IMODE``), e.g. ``0o644``.
        mtime_ns: Modification time, nanoseconds since the epoch.
    """

    name: str
    path: str
    kind: EntryKind
    size: int
    mode: int
    mtime_ns: int


class Listing(list[Entry]):
    """The result of :meth:`Workspace.list_dir`: a list of :class:`Entry`, plus a cap flag.

    Attributes:
        truncated: ``True`` when the directory held more listable entries than the limit,
            so some (the names sorting last) were left out.
    """

    truncated: bool

    def __init__(self, entries: Sequence[Entry] = (), *, truncated: bool = False) -> None:
        super().__init__(entries)
        self.truncated = truncated


def _kind(mode: int) -> EntryKind:
    if stat_mod.S_ISREG(mode):
        return "file"
    if stat_mod.S_ISDIR(mode):
        return "dir"
    if stat_mod.S_ISLNK(mode):
        return "symlink"
    return "other"


def entry(name: str, path: str, st: os.stat_result) -> Entry:
    """The :class:`Entry` for ``st``, the ``lstat`` of ``path`` (sizes only for files)."""
    kind = _kind(st.st_mode)
    return Entry(
        name=name,
        path=path,
        kind=kind,
        size=st.st_size if kind == "file" else 0,
        mode=stat_mod.S_IMODE(st.st_mode),
        mtime_ns=st.st_mtime_ns,
    )
