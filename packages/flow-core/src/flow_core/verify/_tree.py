"""The private check tree: a fresh copy of the workspace files a jailed check runs on.

A check runs code the model may have written. Whatever it writes (caches, a new ``.git``, a
file in the project's virtualenv, a setuid binary) must not reach the user's tree, where
programs outside the jail would read it later (``docs/architecture.md``, "Sandbox"). So the
jail binds a private copy of the workspace at the workspace's own path instead of the
workspace itself; the copy is removed after the check.

Two functions:

* :func:`plan_workspace` lists what a copy of a workspace holds: every regular file and
  symbolic link outside generated folders (``flow_safeio.is_generated_dir``: virtualenvs,
  ``node_modules``, build outputs, tool caches) and outside ``.git``; the generated folders
  that are dependencies (not caches) and ``.git`` are listed apart, to be bound read-only
  from the workspace over their (empty) places in the copy.
* :func:`build_tree` makes the copy: the given files from a source folder, then ``overlay``
  (bytes, or None to leave a path out) on top, every file and folder owned by ``owner``.

The copy is plain: contents, permission bits (never set-user-ID, set-group-ID or sticky),
modification times and link targets. Nothing is followed: a symbolic link is copied as a link
and a path whose folder is a link is skipped, so the copy never reads outside ``source``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from flow_core.verify._scratch import make_scratch, remove_scratch
from flow_safeio import is_generated_dir

__all__ = [
    "CACHE_DIRS",
    "PrivateTree",
    "TreeSpec",
    "WorkspacePlan",
    "build_tree",
    "build_unjailed",
    "plan_workspace",
]

#: Generated folders that are caches: left out of the copy and not bound (a check writes a
#: fresh one in its copy, which goes away with it).
CACHE_DIRS = frozenset(
    {"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis", ".cache"}
)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_DEPTH = 64
_CHUNK = 1 << 20
#: A tmpfs holds file content in whole pages.
_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class WorkspacePlan:
    """What a private copy of one workspace holds (:func:`plan_workspace`).

    Attributes:
        files: workspace-relative paths (``/``-separated) of regular files and links to copy.
        read_only: workspace-relative folders bound read-only from the workspace over their
            empty places in the copy: ``.git`` and the generated folders that are not caches.
    """

    files: tuple[str, ...]
    read_only: tuple[str, ...]


@dataclass(frozen=True)
class TreeSpec:
    """What the evidence run's tree holds (``docs/architecture.md``, "The evidence run").

    Attributes:
        plan: the workspace's files and read-only folders as they were at the baseline,
            before any check ran (:func:`plan_workspace`).
        overlay: path -> bytes written over the copy (None: the path is left out): exactly
            the changes Flow's tools made, with a pytest check's harness at its baseline
            bytes (``verify/_harness.py``). Paths in caches, ``.git`` or a read-only folder
            are never written.
    """

    plan: WorkspacePlan
    overlay: Mapping[str, bytes | None] = field(default_factory=dict)

    def usable_overlay(self) -> dict[str, bytes | None]:
        """``overlay`` without the paths no copy holds (caches, ``.git``, read-only folders)."""
        out: dict[str, bytes | None] = {}
        for rel, data in self.overlay.items():
            names = [p.rstrip(". ").casefold() for p in rel.split("/")]
            if any(n in CACHE_DIRS or n == ".git" for n in names):
                continue
            if any(rel == ro or rel.startswith(ro + "/") for ro in self.plan.read_only):
                continue
            out[rel] = data
        return out


@dataclass
class PrivateTree:
    """A private copy made by :func:`build_tree`; call :meth:`close` when the check is over.

    Attributes:
        root: absolute path of the copy's top folder (owned by ``owner``).
        files: how many files and links were written into it.
        bytes: how many bytes of file content were copied or written.
        space: what the files take on a tmpfs, in bytes: each file's size rounded up to whole
            pages, a page per link (``verify/_disk.JailDisk`` sizes the check's copy with it).
    """

    root: str
    files: int = 0
    bytes: int = 0
    space: int = 0
    _container: str = field(default="", repr=False)

    def close(self) -> None:
        """Remove the copy and everything a check wrote into it; never raises."""
        if self._container:
            remove_scratch(self._container)
            self._container = ""


def plan_workspace(workspace: str | Path) -> WorkspacePlan:
    """List the files of a private copy of ``workspace`` and the folders bound read-only.

    Generated folders are judged by ``flow_safeio.is_generated_dir`` (``docs/architecture.md``,
    "File I/O"); those named in :data:`CACHE_DIRS` are left out altogether. Folders that
    cannot be opened are skipped; nothing is followed.

    Args:
        workspace: the workspace root.

    Returns:
        A :class:`WorkspacePlan`, paths sorted.

    Raises:
        OSError: when ``workspace`` itself cannot be opened as a folder.
    """
    files: list[str] = []
    read_only: list[str] = []
    root = os.open(os.fspath(workspace), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _scan(root, "", 0, files, read_only)
    finally:
        os.close(root)
    return WorkspacePlan(tuple(sorted(files)), tuple(sorted(read_only)))


def _scan(dir_fd: int, prefix: str, depth: int, files: list[str], ro: list[str]) -> None:
    try:
        entries = list(os.scandir(dir_fd))
    except OSError:
        return
    for e in entries:
        rel = prefix + e.name
        try:
            mode = e.stat(follow_symlinks=False).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
            files.append(rel)
        elif not stat.S_ISDIR(mode):
            continue
        elif e.name.rstrip(". ").casefold() == ".git" or (
            is_generated_dir(dir_fd, e.name) and e.name.casefold() not in CACHE_DIRS
        ):
            ro.append(rel)
        elif e.name.casefold() not in CACHE_DIRS and depth < _MAX_DEPTH:
            try:
                sub = os.open(e.name, _DIR, dir_fd=dir_fd)
            except OSError:
                continue
            try:
                _scan(sub, rel + "/", depth + 1, files, ro)
            finally:
                os.close(sub)


def build_tree(
    source: str | Path,
    files: Iterable[str],
    *,
    owner: tuple[int, int] | None = None,
    overlay: Mapping[str, bytes | None] | None = None,
    mount_points: Iterable[str] = (),
    parent: str | Path | None = None,
) -> PrivateTree:
    """Copy ``files`` from ``source`` into a fresh private folder, then apply ``overlay``.

    Args:
        source: the folder the relative paths are read from (a workspace root).
        files: ``/``-separated paths relative to ``source`` of regular files or links; a path
            that is missing, is something else, or passes through a link is skipped.
        owner: ``(uid, gid)`` every file and folder of the copy gets (the check's user; needs
            root), or None to leave them owned by Flow's user.
        overlay: relative path -> content written after the copy (bytes, mode 0644), or None
            to leave that path out (e.g. a file that did not exist at baseline).
        mount_points: relative folders created empty (places the jail binds over read-only,
            ``WorkspacePlan.read_only``).
        parent: where the fresh folder is made (default: the system temporary folder, or
            ``/tmp`` when that lies inside ``source``). It is made with mode 0700; the copy's
            top folder inside it has the mode of ``source``.

    Returns:
        A :class:`PrivateTree`; its ``root`` is the copy of ``source``.

    Raises:
        OSError: when the fresh folder cannot be made, or a write into it fails (out of space).
            Nothing is left behind then.
    """
    src = os.path.realpath(source)
    base = os.fspath(parent) if parent is not None else tempfile.gettempdir()
    if parent is None and (os.path.realpath(base) + "/").startswith(src.rstrip("/") + "/"):
        base = "/tmp"  # noqa: S108 - the temp folder lies inside the workspace
    container = make_scratch("flow-tree-", base, sweep=parent is None)
    tree = PrivateTree(os.path.join(container, "tree"), _container=container)
    try:
        _fill(tree, src, files, owner=owner, overlay=overlay or {}, mount_points=mount_points)
    except BaseException:
        tree.close()
        raise
    return tree


def _fill(
    tree: PrivateTree,
    src: str,
    files: Iterable[str],
    *,
    owner: tuple[int, int] | None,
    overlay: Mapping[str, bytes | None],
    mount_points: Iterable[str],
) -> None:
    os.mkdir(tree.root, 0o700)
    _own(tree.root, owner)
    os.chmod(tree.root, stat.S_IMODE(os.stat(src).st_mode) & 0o777)
    made: set[str] = {""}
    for rel in sorted(mount_points):
        _folders(tree.root, rel.split("/"), owner, made)
    src_fd = os.open(src, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for rel in files:
            if rel in overlay:
                continue
            parts = rel.split("/")
            if not all(parts) or ".." in parts:
                continue
            copied = _copy_one(src_fd, parts, tree.root, owner, made)
            if copied is not None:
                tree.files += 1
                tree.bytes += copied
                tree.space += max(_PAGE, -(-copied // _PAGE) * _PAGE)
    finally:
        os.close(src_fd)
    for rel, content in sorted(overlay.items()):
        parts = rel.split("/")
        if content is None or not all(parts) or ".." in parts:
            continue
        _folders(tree.root, parts[:-1], owner, made)
        dest = os.path.join(tree.root, *parts)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(dest)
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            _write_all(fd, content)
            if owner is not None:
                os.fchown(fd, *owner)
        finally:
            os.close(fd)
        tree.files += 1
        tree.bytes += len(content)
        tree.space += max(_PAGE, -(-len(content) // _PAGE) * _PAGE)


def _own(path: str, owner: tuple[int, int] | None) -> None:
    if owner is not None:
        os.chown(path, *owner, follow_symlinks=False)


def _folders(root: str, parts: list[str], owner: tuple[int, int] | None, made: set[str]) -> None:
    """Create the folders ``parts`` below ``root`` (mode 0755, owned by ``owner``)."""
    for i in range(1, len(parts) + 1):
        rel = "/".join(parts[:i])
        if rel in made:
            continue
        path = os.path.join(root, *parts[:i])
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o755)
            _own(path, owner)
        made.add(rel)


def _copy_one(
    src_fd: int, parts: list[str], root: str, owner: tuple[int, int] | None, made: set[str]
) -> int | None:
    """Copy one file or link (not followed); return the bytes copied (None: skipped)."""
    opened: list[int] = []
    fd = src_fd
    try:
        for part in parts[:-1]:
            fd = os.open(part, _DIR, dir_fd=fd)
            opened.append(fd)
        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        _folders(root, parts[:-1], owner, made)
        dest = os.path.join(root, *parts)
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(parts[-1], dir_fd=fd), dest)
            _own(dest, owner)
            return 0
        if not stat.S_ISREG(st.st_mode):
            return None
        return _copy_file(fd, parts[-1], dest, owner)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    except OSError as err:
        if err.errno == errno.ELOOP:  # a folder on the way is a link
            return None
        raise
    finally:
        for o in opened:
            os.close(o)


def _copy_file(dir_fd: int, name: str, dest: str, owner: tuple[int, int] | None) -> int | None:
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        st = os.fstat(src)
        if not stat.S_ISREG(st.st_mode):
            return None
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            copied = _splice(src, out, st.st_size)
            if owner is not None:
                os.fchown(out, *owner)
            os.fchmod(out, stat.S_IMODE(st.st_mode) & 0o777)  # never setuid, setgid, sticky
            os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(out)
        return copied
    finally:
        os.close(src)


def _splice(src: int, out: int, size: int) -> int:
    """Copy ``src`` to ``out`` in the kernel where it can (``copy_file_range``, reflinks)."""
    copied = 0
    try:
        while True:
            n = os.copy_file_range(src, out, max(size - copied, _CHUNK))
            if n == 0:
                return copied
            copied += n
    except OSError:
        if copied:
            raise
    while chunk := os.read(src, _CHUNK):
        _write_all(out, chunk)
        copied += len(chunk)
    return copied


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def build_unjailed(workspace: str | Path, spec: TreeSpec) -> PrivateTree:
    """The evidence run's tree for a check that runs without a jail.

    The same copy a jail makes (:func:`build_tree` of ``spec``, owned by Flow's user), with
    each read-only folder of the plan (``.git``, virtualenvs, dependency folders) a symbolic
    link to the workspace's, so the check finds its interpreter and packages. Unjailed, the
    check can follow those links and write through them: ``mode = "off"`` protects nothing.

    Raises:
        OSError: the copy could not be made (nothing is left behind).
    """
    src = os.path.realpath(workspace)
    tree = build_tree(src, spec.plan.files, overlay=spec.usable_overlay())
    try:
        for rel in spec.plan.read_only:
            parts = rel.split("/")
            _folders(tree.root, parts[:-1], None, set())
            os.symlink(os.path.join(src, *parts), os.path.join(tree.root, *parts))
    except BaseException:
        tree.close()
        raise
    return tree
