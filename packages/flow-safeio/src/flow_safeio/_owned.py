"""Whether anyone else can change what lies below a folder: the one walk both guards use.

A file is only as safe as the way to it: whoever can write, rename or replace a folder on the
way (or a symbolic link followed on the way) can put another file where the user expects
theirs. flow-core refuses an operator config reached that way and flow-rose a Neovim socket
(``docs/architecture.md``, sections "Evidence" and "Rose"); both ask :func:`owned_way`.

The rule, per step: a folder or a followed link belongs to the user or to root; a folder that
its group or others can write must carry the sticky bit (``/tmp``), where nobody can rename or
remove another user's entries. Links are followed one by one (never ``realpath``), so a link
into an unsafe folder is judged by where it leads.
"""

from __future__ import annotations

import os
import stat as stat_mod
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = ["WayProblem", "WayReason", "change_problem", "owned_way"]

#: ``"owner"``: another user owns it; ``"writable"``: group or others may write it (and it is
#: not a sticky folder); ``"link_owner"``: a followed link belongs to another user;
#: ``"link_loop"``: more than 40 links; ``"unresolvable"``: ``lstat`` failed;
#: ``"not_directory"``: a component is neither a folder nor a link.
WayReason: TypeAlias = Literal[
    "owner", "writable", "link_owner", "link_loop", "unresolvable", "not_directory"
]

#: Symbolic links followed on one way before giving up (as the kernel's ELOOP does).
_MAX_LINKS = 40


@dataclass(frozen=True, slots=True)
class WayProblem:
    """Why others could change ``path`` (a folder, link or file on the way).

    Attributes:
        path: the absolute path at fault, as reached (links before it followed).
        reason: see :data:`WayReason`.
        uid: its owner (-1 when it could not be examined).
        mode: its permission bits (``stat.S_IMODE``; 0 when it could not be examined).
        detail: the system's words for an ``unresolvable`` step (``strerror``), else ``""``.
    """

    path: str
    reason: WayReason
    uid: int = -1
    mode: int = 0
    detail: str = ""

    def describe(self) -> str:
        """The problem as a predicate for ``path``: ``"is owned by another user (uid 7)"``,
        ``"is writable by others (mode 757)"``, ``"cannot be examined (No such file ...)"``."""
        if self.reason == "owner":
            return f"is owned by another user (uid {self.uid})"
        if self.reason == "writable":
            return f"is writable by {_who(self.mode)} (mode {self.mode:o})"
        if self.reason == "link_owner":
            return f"is a symbolic link owned by another user (uid {self.uid})"
        if self.reason == "link_loop":
            return f"is reached through more than {_MAX_LINKS} symbolic links"
        if self.reason == "unresolvable":
            return f"cannot be examined ({self.detail})"
        return "is not a directory"


def _who(mode: int) -> str:
    both = stat_mod.S_IWGRP | stat_mod.S_IWOTH
    if mode & both == both:
        return "group and others"
    return "its group" if mode & stat_mod.S_IWGRP else "others"


def change_problem(path: str, st: os.stat_result, *, uid: int) -> WayProblem | None:
    """Why others could change the entry ``path`` whose ``stat`` is ``st``, or None.

    Owned by ``uid`` or root, and no group/other write bit unless it is a sticky folder.
    """
    if st.st_uid not in (uid, 0):
        return WayProblem(path, "owner", st.st_uid, stat_mod.S_IMODE(st.st_mode))
    writable = st.st_mode & (stat_mod.S_IWGRP | stat_mod.S_IWOTH)
    sticky_dir = stat_mod.S_ISDIR(st.st_mode) and st.st_mode & stat_mod.S_ISVTX
    if writable and not sticky_dir:
        return WayProblem(path, "writable", st.st_uid, stat_mod.S_IMODE(st.st_mode))
    return None


def owned_way(folder: str, *, uid: int | None = None) -> tuple[str, WayProblem | None]:
    """Walk from ``/`` to ``folder``, one component at a time, judging every step.

    Args:
        folder: an absolute path to a folder.
        uid: the user whose folder it must be (default: the effective uid).

    Returns:
        ``(resolved, None)`` when nobody but ``uid`` and root can change the way: ``resolved``
        is the folder reached, absolute, with no symbolic link in it. Otherwise
        ``(reached, problem)``: the first step at fault and where the walk stopped.

    Raises:
        ValueError: ``folder`` is not absolute.
    """
    if not os.path.isabs(folder):
        raise ValueError(f"not an absolute path: {folder!r}")
    me = os.geteuid() if uid is None else uid
    pending = [p for p in folder.split("/") if p]
    current = "/"
    links = 0
    problem = _step(current, me)
    while pending and problem is None:
        name = pending.pop(0)
        if name in (".", ".."):
            current = os.path.dirname(current) if name == ".." else current
            continue
        candidate = os.path.join(current, name)
        try:
            st = os.lstat(candidate)
        except OSError as err:
            return current, WayProblem(candidate, "unresolvable", detail=str(err.strerror))
        if stat_mod.S_ISLNK(st.st_mode):
            links += 1
            if st.st_uid not in (me, 0):
                return current, WayProblem(candidate, "link_owner", st.st_uid, 0)
            if links > _MAX_LINKS:
                return current, WayProblem(candidate, "link_loop", st.st_uid, 0)
            target = os.readlink(candidate)
            current = "/" if target.startswith("/") else current
            pending[:0] = [p for p in target.split("/") if p]
            continue
        if not stat_mod.S_ISDIR(st.st_mode):
            return current, WayProblem(candidate, "not_directory", st.st_uid, 0)
        problem = change_problem(candidate, st, uid=me)
        current = candidate
    return current, problem


def _step(path: str, uid: int) -> WayProblem | None:
    try:
        st = os.lstat(path)
    except OSError as err:
        return WayProblem(path, "unresolvable", detail=str(err.strerror))
    return change_problem(path, st, uid=uid)
