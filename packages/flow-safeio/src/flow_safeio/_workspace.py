"""The :class:`Workspace`: descriptor-relative file I/O confined to one root directory.

Source of the rules: ``docs/architecture.md``, sections "Trust" and "File I/O". In short: the
root is held open by descriptor; every path is checked syntactically first
(:func:`flow_safeio.validate_path`), then resolved from that descriptor without ever following a
symbolic link (Linux ``openat2`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
RESOLVE_NO_MAGICLINKS`` where available, else a component-by-component walk with
``O_NOFOLLOW``); only regular files with a single hard link are read or replaced; sizes are
capped; writes are atomic renames of a temporary file in the same directory.
"""

from __future__ import annotations

import contextlib
import errno
import heapq
import os
import stat as stat_mod
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Literal, TypeAlias

from flow_safeio import _openat2
from flow_safeio._errors import (
    ClosedError,
    GeneratedPathError,
    HardLinkError,
    IsDirectoryError,
    NotDirectoryError,
    NotFoundError,
    NotRegularFileError,
    NotTextError,
    PathEscapeError,
    ProtectedPathError,
    RootError,
    SafeIOError,
    StaleRootError,
    SymlinkError,
    TooLargeError,
)
from flow_safeio._generated import holds_venv_marker, is_generated_dir, is_generated_name
from flow_safeio._paths import _is_git_component, split_path

__all__ = ["DEFAULT_MAX_BYTES", "Entry", "EntryKind", "Listing", "Resolver", "Workspace"]

#: Default cap on a single read or write, in bytes (256 KiB; ``docs/architecture.md``, "File I/O").
DEFAULT_MAX_BYTES = 262_144

EntryKind: TypeAlias = Literal["file", "dir", "symlink", "other"]
#: ``"auto"`` uses ``openat2`` where the kernel offers it, else the walk.
Resolver: TypeAlias = Literal["auto", "openat2", "walk"]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | _CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NOCTTY | _CLOEXEC
_TEMP_PREFIX = ".flowtmp-"
_OPENAT2_RETRIES = 8
_MAX_WALK_DEPTH = 64


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


def _entry(name: str, path: str, st: os.stat_result) -> Entry:
    kind = _kind(st.st_mode)
    return Entry(
        name=name,
        path=path,
        kind=kind,
        size=st.st_size if kind == "file" else 0,
        mode=stat_mod.S_IMODE(st.st_mode),
        mtime_ns=st.st_mtime_ns,
    )


def _close(fd: int, keep: int) -> None:
    if fd != keep:
        os.close(fd)


def _fsync_dir(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError as err:  # some file systems cannot fsync directories
        if err.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise


class Workspace:
    """Safe file access below one root directory, held open by descriptor.

    Args:
        root: An existing directory, as an absolute path (``str`` or path-like). Symbolic
            links in the root path itself are the operator's choice and are followed once,
            when the workspace is opened.
        max_bytes: Cap on one read or write, in bytes (default 262144 = 256 KiB).
        protected: Relative paths that may be read but never written (operator
            configuration). A protected directory protects everything beneath it. Compared
            after path normalisation, Unicode NFC and case folding.
        resolver: ``"auto"`` (default) resolves with Linux ``openat2`` where available and
            the ``O_NOFOLLOW`` walk elsewhere; ``"openat2"`` requires it; ``"walk"`` forces
            the walk. Both give the same answers; the switch exists so tests can run each.

    Raises:
        RootError: ``root`` is not absolute, does not exist or is not a directory; or
            ``resolver="openat2"`` where the kernel lacks it; or ``max_bytes`` < 0.
        InvalidPathError: A ``protected`` entry is not a valid relative path.

    Every method first checks that the workspace is open (:class:`ClosedError`) and that
    ``root`` still names the directory held open (:class:`StaleRootError`). Methods are safe
    to call from several threads at once, but not concurrently with :meth:`close`.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        protected: Sequence[str] = (),
        resolver: Resolver = "auto",
    ) -> None:
        root_str = os.fspath(root)
        if not isinstance(root_str, str):
            raise RootError(root_str, "root must be a str path")
        if not os.path.isabs(root_str):
            raise RootError(root_str, "root must be an absolute path")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise RootError(root_str, f"max_bytes must be a non-negative int, got {max_bytes!r}")
        if resolver not in ("auto", "openat2", "walk"):
            raise RootError(root_str, f"unknown resolver {resolver!r}")
        if resolver == "openat2" and not _openat2.available():
            raise RootError(root_str, "resolver 'openat2' requested but the kernel lacks it")
        if isinstance(protected, str):
            protected = (protected,)
        self._protected: tuple[tuple[str, ...], ...] = tuple(
            _fold(split_path(p)) for p in protected
        )
        self._root = root_str
        self._max_bytes = max_bytes
        self._use_openat2 = resolver != "walk" and _openat2.available()
        try:
            fd = os.open(root_str, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
        except FileNotFoundError as err:
            raise RootError(root_str, "root does not exist") from err
        except NotADirectoryError as err:
            raise RootError(root_str, "root is not a directory") from err
        except OSError as err:
            raise RootError(root_str, f"cannot open root: {err.strerror}") from err
        try:
            held = os.fstat(fd)
            named = os.stat(root_str)
        except OSError as err:
            os.close(fd)
            raise RootError(root_str, f"cannot stat root: {err.strerror}") from err
        if (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino):
            os.close(fd)
            raise StaleRootError(root_str, "root changed while it was being opened")
        self._fd: int = fd
        self._identity = (held.st_dev, held.st_ino)
        self._closed = False

    # ------------------------------------------------------------------ lifecycle

    @property
    def root(self) -> str:
        """The root path exactly as given (``str``)."""
        return self._root

    @property
    def max_bytes(self) -> int:
        """Cap on one read or write, in bytes."""
        return self._max_bytes

    @property
    def resolver(self) -> Literal["openat2", "walk"]:
        """Which resolver this workspace uses."""
        return "openat2" if self._use_openat2 else "walk"

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._closed

    def close(self) -> None:
        """Release the root descriptor. Idempotent; later operations raise ClosedError."""
        if not self._closed:
            self._closed = True
            os.close(self._fd)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else self.resolver
        return f"Workspace({self._root!r}, max_bytes={self._max_bytes}, {state})"

    # ------------------------------------------------------------------ checks

    def _check(self, rel: object) -> int:
        """Return the root fd after the closed and stale checks."""
        if self._closed:
            raise ClosedError(rel, "the workspace is closed")
        try:
            st = os.stat(self._root)
        except OSError as err:
            raise StaleRootError(
                rel, f"root {self._root!r} no longer resolves ({err.strerror})"
            ) from err
        if (st.st_dev, st.st_ino) != self._identity:
            raise StaleRootError(
                rel, f"root {self._root!r} now names a different directory (renamed or replaced)"
            )
        return self._fd

    def check_writable(self, rel: str) -> str:
        """Judge ``rel`` as a write target by the path rules alone, touching nothing on disk.

        For callers that write through another channel (flow-core's editor bridge writes
        through Rose's buffers) and must apply exactly this package's rules first: syntax,
        ``.git``, the root, and the protected paths (NFC-normalised, case-folded).

        Args:
            rel: a workspace-relative ``/`` path.

        Returns:
            The normalised relative path (as :func:`validate_path` gives it).

        Raises:
            InvalidPathError: ``rel`` breaks a path rule (see :func:`validate_path`).
            IsDirectoryError: ``rel`` names the workspace root.
            ProtectedPathError: ``rel`` is, or lies under, a protected path.
            ClosedError: the workspace was closed.
        """
        parts = split_path(rel)
        if self._closed:
            raise ClosedError(rel, "the workspace is closed")
        if not parts:
            raise IsDirectoryError(rel, "is the workspace root, not a file")
        self._check_writable(rel, parts)
        return "/".join(parts)

    def check_generated(self, rel: str) -> None:
        """Refuse ``rel`` as a write target when it lies inside a generated folder.

        The rule that also hides those folders from :meth:`list_dir` and :meth:`walk` (see
        ``flow_safeio._generated``): a parent whose name, NFC-normalised and case-folded, is
        in :data:`flow_safeio.SKIPPED_DIRS`, or a parent directory holding ``pyvenv.cfg``
        (a virtual environment, PEP 405). Parents are looked at from the root descriptor
        without following links; missing parents are fine (the write creates them, and
        new directories hold no marker).

        Args:
            rel: a workspace-relative ``/`` path.

        Raises:
            GeneratedPathError: ``rel`` lies inside a generated or environment folder.
            InvalidPathError, StaleRootError, ClosedError: as for :meth:`read_bytes`.
        """
        parts = split_path(rel)
        for depth, name in enumerate(parts[:-1], start=1):
            if is_generated_name(name):
                raise _generated(rel, parts[:depth])
        root_fd = self._check(rel)
        dir_fd = root_fd
        try:
            for depth, name in enumerate(parts[:-1], start=1):
                try:
                    next_fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
                except OSError:
                    return  # missing (a new directory holds no marker), a file or a link
                _close(dir_fd, root_fd)
                dir_fd = next_fd
                if holds_venv_marker(dir_fd):
                    raise _generated(rel, parts[:depth])
        finally:
            _close(dir_fd, root_fd)

    def _check_writable(self, rel: str, parts: tuple[str, ...]) -> None:
        folded = _fold(parts)
        for prot in self._protected:
            if folded[: len(prot)] == prot:
                raise ProtectedPathError(rel, "protected path: it may be read but not written")

    # ------------------------------------------------------------------ resolution

    def _error(self, rel: str, err: OSError, where: str = "") -> SafeIOError:
        """Translate an OSError from resolution into the matching SafeIOError."""
        code = err.errno
        at = f" ({where})" if where else ""
        if code == errno.ELOOP:
            return SymlinkError(rel, f"a component is a symbolic link{at}; links are not followed")
        if code == errno.EXDEV:
            return PathEscapeError(rel, f"resolution would leave the root{at}")
        if code == errno.ENOENT:
            return NotFoundError(rel, f"no such file or directory{at}")
        if code == errno.ENOTDIR:
            return NotDirectoryError(rel, f"a parent component is not a directory{at}")
        if code == errno.EISDIR:
            return IsDirectoryError(rel, f"is a directory{at}")
        if code in (errno.ENXIO, errno.EOPNOTSUPP, errno.ENODEV):
            return NotRegularFileError(rel, f"not a regular file (a socket or device){at}")
        return SafeIOError(rel, f"{err.strerror or 'I/O error'}{at}")

    def _classify_component(self, rel: str, dir_fd: int, name: str, err: OSError) -> SafeIOError:
        """After ELOOP/ENOTDIR on ``name``, say which it was.

        ``O_NOFOLLOW`` fails with ELOOP only on a link, so ELOOP is always a link (even if a
        concurrent swap has put something else there since). ENOTDIR is a link when
        ``O_DIRECTORY | O_NOFOLLOW`` met one, else a file in the way.
        """
        link = SymlinkError(rel, f"{name!r} is a symbolic link; links are not followed")
        if err.errno == errno.ELOOP:
            return link
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return self._error(rel, err, name)
        if stat_mod.S_ISLNK(st.st_mode):
            return link
        return NotDirectoryError(rel, f"{name!r} is not a directory")

    def _walk_dir(self, rel: str, root_fd: int, parts: Sequence[str], *, create: bool) -> int:
        """Open the directory ``parts`` one component at a time with O_NOFOLLOW."""
        fd = root_fd
        try:
            for name in parts:
                try:
                    nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(name, 0o777, dir_fd=fd)
                    except FileExistsError:
                        pass  # created concurrently; the O_NOFOLLOW open below judges it
                    else:
                        _fsync_dir(fd)
                    nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as err:
                    if err.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise self._classify_component(rel, fd, name, err) from err
                    raise
                _close(fd, root_fd)
                fd = nxt
        except SafeIOError:
            _close(fd, root_fd)
            raise
        except OSError as err:
            _close(fd, root_fd)
            raise self._error(rel, err) from err
        return fd

    def _open_dir(
        self, rel: str, root_fd: int, parts: Sequence[str], *, create: bool = False
    ) -> int:
        """A descriptor for the directory ``parts`` (``root_fd`` itself for no parts).

        The caller closes it unless it is ``root_fd``.
        """
        if not parts:
            return root_fd
        if self._use_openat2:
            for _ in range(_OPENAT2_RETRIES):
                try:
                    return _openat2.openat2(root_fd, "/".join(parts), _DIR_FLAGS)
                except OSError as err:
                    if err.errno == errno.EAGAIN:
                        continue  # a concurrent rename; the kernel asks us to retry
                    if err.errno == errno.ENOENT and create:
                        break  # create the missing components with the walk below
                    if err.errno in (errno.ELOOP, errno.ENOTDIR):
                        # Say which component it was (informational: the walk refuses too).
                        return self._walk_dir(rel, root_fd, parts, create=create)
                    raise self._error(rel, err) from err
        return self._walk_dir(rel, root_fd, parts, create=create)

    def _leaf_stat(self, rel: str, dir_fd: int, name: str) -> os.stat_result:
        try:
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as err:
            raise self._error(rel, err) from err

    def _require_file(self, rel: str, st: os.stat_result) -> None:
        mode = st.st_mode
        if stat_mod.S_ISLNK(mode):
            raise SymlinkError(rel, "the target is a symbolic link; links are not followed")
        if stat_mod.S_ISDIR(mode):
            raise IsDirectoryError(rel, "is a directory, not a file")
        if not stat_mod.S_ISREG(mode):
            raise NotRegularFileError(rel, f"is a {_describe(mode)}, not a regular file")
        if st.st_nlink > 1:
            raise HardLinkError(
                rel, f"has {st.st_nlink} hard links; it may alias a file outside the root"
            )

    # ------------------------------------------------------------------ reading

    def read_bytes(self, rel: str) -> bytes:
        """Read a whole regular file.

        Args:
            rel: Workspace-relative path (see :func:`flow_safeio.validate_path`).

        Returns:
            The file's bytes, at most ``max_bytes`` of them, exactly as stored.

        Raises:
            InvalidPathError: Bad syntax (incl. ``PathEscapeError``, ``GitPathError``).
            SymlinkError: A component or the file is a symbolic link.
            NotFoundError: Missing. NotDirectoryError: a parent is a file.
            IsDirectoryError: ``rel`` names a directory.
            NotRegularFileError: FIFO, socket or device (opened only with ``O_NONBLOCK``).
            HardLinkError: ``st_nlink > 1``.
            TooLargeError: Larger than ``max_bytes`` (checked by ``fstat`` and while reading).
            StaleRootError, ClosedError, SafeIOError: See the class docstring.
        """
        parts = split_path(rel)
        root_fd = self._check(rel)
        if not parts:
            raise IsDirectoryError(rel, "is the workspace root, not a file")
        fd = self._open_leaf(rel, root_fd, parts)
        try:
            st = os.fstat(fd)
            if not stat_mod.S_ISREG(st.st_mode) or st.st_nlink > 1:
                self._require_file(rel, st)  # raises the precise refusal
            limit = self._max_bytes
            if st.st_size > limit:
                raise TooLargeError(rel, f"is {st.st_size} bytes; the limit is {limit} bytes")
            # Ask for one byte more than fstat promised: a short read of a regular file
            # means end of file, so the common case is a single read(2).
            want = st.st_size + 1
            data = os.read(fd, want)
            if len(data) < want:
                return data
            chunks = [data]
            total = len(data)
            while total <= limit:  # the file grew after fstat: keep going, capped
                chunk = os.read(fd, min(65_536, limit + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            if total > limit:
                raise TooLargeError(rel, f"grew past the limit of {limit} bytes while read")
            return b"".join(chunks)
        except SafeIOError:
            raise
        except OSError as err:
            raise self._error(rel, err) from err
        finally:
            os.close(fd)

    def _open_leaf(self, rel: str, root_fd: int, parts: tuple[str, ...]) -> int:
        """Open an existing entry for reading: never following links, never blocking.

        ``O_NONBLOCK`` keeps FIFOs and devices from blocking the open; the caller judges the
        result with ``fstat`` (``docs/architecture.md``, "File I/O").
        """
        if self._use_openat2:
            for _ in range(_OPENAT2_RETRIES):
                try:
                    return _openat2.openat2(root_fd, "/".join(parts), _READ_FLAGS)
                except OSError as err:
                    if err.errno == errno.EAGAIN:
                        continue
                    if err.errno in (errno.ELOOP, errno.ENOTDIR):
                        break  # the walk below names the offending component (and refuses)
                    raise self._error(rel, err) from err
        dir_fd = self._open_dir(rel, root_fd, parts[:-1])
        try:
            return os.open(parts[-1], _READ_FLAGS, dir_fd=dir_fd)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENOTDIR):
                raise self._classify_component(rel, dir_fd, parts[-1], err) from err
            raise self._error(rel, err) from err
        finally:
            _close(dir_fd, root_fd)

    def read_text(self, rel: str, encoding: str = "utf-8") -> str:
        """Read a regular file and decode it; line endings are kept exactly (no translation).

        Args:
            rel: Workspace-relative path.
            encoding: A codec name (default UTF-8), strict errors.

        Returns:
            The decoded text.

        Raises:
            NotTextError: The bytes are not valid in ``encoding``.
            SafeIOError: Everything :meth:`read_bytes` raises.
        """
        data = self.read_bytes(rel)
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as err:
            raise NotTextError(rel, f"not valid {encoding} text at byte {err.start}") from err

    # ------------------------------------------------------------------ writing

    def write_bytes(self, rel: str, data: bytes, *, mode: int | None = None) -> None:
        """Replace (or create) a regular file atomically.

        A temporary file is created in the target's directory (``O_EXCL``), written in full,
        ``fsync``-ed, renamed over the target with ``renameat`` and the directory is
        ``fsync``-ed. A reader sees either the old content or the new, never a mix. An existing
        file keeps its permission bits; a new one gets ``0o666`` less the umask; ``mode``
        (hosts putting back a recorded file) sets them instead, before the rename. Missing
        parent directories are created one component at a time, never through a link. A
        symbolic link at the target is refused, and the rename would replace the link itself
        rather than write through it.

        Args:
            rel: Workspace-relative path of the file.
            data: The complete new content (``bytes``-like), at most ``max_bytes`` bytes.
            mode: Permission bits for the result (``0o7777`` at most), or None.

        Raises:
            ProtectedPathError: ``rel`` is (under) a protected path.
            TooLargeError: ``len(data) > max_bytes``.
            SymlinkError: A component or the existing target is a symbolic link.
            IsDirectoryError: The target is a directory (or the root).
            NotRegularFileError: The existing target is a FIFO, socket or device.
            HardLinkError: The existing target has ``st_nlink > 1``.
            NotDirectoryError: A parent component is a file.
            InvalidPathError, StaleRootError, ClosedError, SafeIOError: See
                :meth:`read_bytes`.
        """
        parts = split_path(rel)
        root_fd = self._check(rel)
        if not parts:
            raise IsDirectoryError(rel, "is the workspace root, not a file")
        self._check_writable(rel, parts)
        view = memoryview(data).cast("B")
        if view.nbytes > self._max_bytes:
            raise TooLargeError(
                rel, f"data is {view.nbytes} bytes; the limit is {self._max_bytes} bytes"
            )
        name = parts[-1]
        dir_fd = self._open_dir(rel, root_fd, parts[:-1], create=True)
        try:
            keep_mode: int | None = None
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                pass
            except OSError as err:
                raise self._error(rel, err) from err
            else:
                self._require_file(rel, st)
                keep_mode = stat_mod.S_IMODE(st.st_mode)
            tmp, fd = self._create_temp(rel, dir_fd)
            try:
                try:
                    written = 0
                    while written < view.nbytes:
                        written += os.write(fd, view[written:])
                    if mode is not None:
                        os.fchmod(fd, stat_mod.S_IMODE(mode))
                    elif keep_mode is not None:
                        os.fchmod(fd, keep_mode)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException as exc:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dir_fd)
                if isinstance(exc, OSError) and not isinstance(exc, SafeIOError):
                    raise self._error(rel, exc) from exc
                raise
            _fsync_dir(dir_fd)
        finally:
            _close(dir_fd, root_fd)

    def remove(self, rel: str) -> None:
        """Delete one regular file (for hosts undoing their own writes, never a model tool).

        The same rules as a write apply: the path rules, protected paths, no symlink anywhere
        on the way, the target must be a regular file with a single link. ``unlinkat`` never
        follows a link, so a name swapped for a symlink at the last moment removes only that
        link. The directory is fsynced afterwards.

        Args:
            rel: Workspace-relative path of an existing regular file.

        Raises:
            NotFoundError: There is no such file.
            ProtectedPathError, SymlinkError, IsDirectoryError, NotRegularFileError,
            HardLinkError, InvalidPathError, StaleRootError, ClosedError, SafeIOError: As for
                :meth:`write_bytes`.
        """
        parts = split_path(rel)
        root_fd = self._check(rel)
        if not parts:
            raise IsDirectoryError(rel, "is the workspace root, not a file")
        self._check_writable(rel, parts)
        dir_fd = self._open_dir(rel, root_fd, parts[:-1])
        try:
            try:
                st = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False)
                self._require_file(rel, st)
                os.unlink(parts[-1], dir_fd=dir_fd)
            except OSError as err:
                if isinstance(err, SafeIOError):
                    raise
                raise self._error(rel, err) from err
            _fsync_dir(dir_fd)
        finally:
            _close(dir_fd, root_fd)

    def _create_temp(self, rel: str, dir_fd: int) -> tuple[str, int]:
        for _ in range(16):
            tmp = _TEMP_PREFIX + os.urandom(8).hex()
            try:
                return tmp, os.open(tmp, _TEMP_FLAGS, 0o666, dir_fd=dir_fd)
            except FileExistsError:
                continue
            except OSError as err:
                raise self._error(rel, err, "creating the temporary file") from err
        raise SafeIOError(rel, "could not create a unique temporary file")

    def write_text(self, rel: str, text: str, encoding: str = "utf-8") -> None:
        """Encode ``text`` and write it with :meth:`write_bytes` (no newline translation).

        Args:
            rel: Workspace-relative path.
            text: The complete new content; ``max_bytes`` applies to the encoded bytes.
            encoding: A codec name (default UTF-8), strict errors.

        Raises:
            NotTextError: ``text`` cannot be encoded in ``encoding``.
            SafeIOError: Everything :meth:`write_bytes` raises.
        """
        try:
            data = text.encode(encoding)
        except UnicodeEncodeError as err:
            raise NotTextError(rel, f"text cannot be encoded as {encoding}") from err
        self.write_bytes(rel, data)

    # ------------------------------------------------------------------ metadata

    def exists(self, rel: str) -> bool:
        """Whether an entry (of any kind, links included, never followed) exists at ``rel``.

        Refusals still raise: a path with bad syntax, or one that runs through a symbolic
        link, raises instead of answering ``False``.

        Args:
            rel: Workspace-relative path.

        Returns:
            ``True`` if the entry exists; ``False`` if it or a parent is missing, or a
            parent is not a directory.

        Raises:
            InvalidPathError: Bad syntax (incl. ``PathEscapeError``, ``GitPathError``).
            SymlinkError: A parent component is a symbolic link.
            StaleRootError, ClosedError, SafeIOError: See the class docstring.
        """
        parts = split_path(rel)
        root_fd = self._check(rel)
        if not parts:
            return True
        try:
            dir_fd = self._open_dir(rel, root_fd, parts[:-1])
        except (NotFoundError, NotDirectoryError):
            return False
        try:
            os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as err:
            raise self._error(rel, err) from err
        finally:
            _close(dir_fd, root_fd)
        return True

    def stat(self, rel: str) -> Entry:
        """Describe the entry at ``rel`` without following it.

        Args:
            rel: Workspace-relative path; ``"."`` describes the root.

        Returns:
            An :class:`Entry` (size in bytes, mode bits, mtime in nanoseconds); a symbolic
            link is reported as ``kind="symlink"`` (its target is never looked at).

        Raises:
            NotFoundError: The entry or a parent is missing.
            SymlinkError: A *parent* component is a symbolic link.
            NotDirectoryError: A parent component is not a directory.
            InvalidPathError, StaleRootError, ClosedError, SafeIOError: As for
                :meth:`read_bytes`.
        """
        parts = split_path(rel)
        root_fd = self._check(rel)
        if not parts:
            return _entry(".", ".", os.fstat(root_fd))
        dir_fd = self._open_dir(rel, root_fd, parts[:-1])
        try:
            st = self._leaf_stat(rel, dir_fd, parts[-1])
        finally:
            _close(dir_fd, root_fd)
        return _entry(parts[-1], "/".join(parts), st)

    def list_dir(self, rel: str = ".", *, limit: int = 1000) -> Listing:
        """List one directory, sorted by name, capped, skipping generated folders.

        Generated folders (named in :data:`flow_safeio.SKIPPED_DIRS` in any case or Unicode
        normal form, or holding ``pyvenv.cfg``; see :meth:`check_generated`) and any ``.git``
        spelling are left out. Entries are never followed (links appear as ``kind="symlink"``).

        Args:
            rel: Workspace-relative directory (default the root).
            limit: Most entries returned (>= 0). Memory stays proportional to ``limit``.

        Returns:
            A :class:`Listing` (a ``list[Entry]``); ``listing.truncated`` says whether more
            entries existed.

        Raises:
            NotDirectoryError: ``rel`` is not a directory.
            SymlinkError: ``rel`` or a parent is a symbolic link.
            NotFoundError, InvalidPathError, StaleRootError, ClosedError: As for
                :meth:`read_bytes`.
            ValueError: ``limit`` is negative (a programming error, not a refusal).
        """
        if limit < 0:
            raise ValueError("limit must be >= 0")
        parts = split_path(rel)
        root_fd = self._check(rel)
        prefix = "/".join(parts)
        dir_fd = self._open_dir(rel, root_fd, parts)
        try:
            # A private descriptor: scandir() shares the offset of the one it is given.
            fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC, dir_fd=dir_fd)
        except OSError as err:
            raise self._error(rel, err) from err
        finally:
            _close(dir_fd, root_fd)
        try:
            with os.scandir(fd) as it:
                names = heapq.nsmallest(limit + 1, (e.name for e in it if _listable(e, fd)))
            out = Listing(truncated=len(names) > limit)
            for name in names[:limit]:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue  # removed while we listed
                out.append(_entry(name, f"{prefix}/{name}" if prefix else name, st))
            return out
        except OSError as err:
            raise self._error(rel, err) from err
        finally:
            os.close(fd)

    def walk(self, rel: str = ".", *, limit: int = 10_000) -> Iterator[str]:
        """Yield the relative paths of regular files below ``rel``, depth first, sorted.

        Symbolic links are never followed (nor yielded); generated folders
        (the rule of :meth:`check_generated`) and names the path rules refuse are skipped, so
        every yielded path is valid input for the other methods. No descriptor is held
        between yields. Directories deeper than 64 levels are not entered.

        Args:
            rel: Workspace-relative directory to start from (default the root).
            limit: Most paths yielded (>= 0).

        Yields:
            Normalised workspace-relative paths of regular files (``str``).

        Raises:
            NotDirectoryError, SymlinkError, NotFoundError, InvalidPathError: For ``rel``
                itself. Subdirectories that become unusable while walking are skipped.
            StaleRootError, ClosedError: At any step.
            ValueError: ``limit`` is negative (a programming error, not a refusal).
        """
        if limit < 0:
            raise ValueError("limit must be >= 0")
        start = split_path(rel)
        stack: list[tuple[str, ...]] = [start]
        produced = 0
        first = True
        while stack and produced < limit:
            parts = stack.pop()
            root_fd = self._check(rel)
            try:
                files, dirs = self._scan(rel, root_fd, parts)
            except (StaleRootError, ClosedError):
                raise
            except SafeIOError:
                if first:
                    raise
                continue
            first = False
            for name in files:
                if produced >= limit:
                    return
                produced += 1
                yield "/".join((*parts, name))
            if len(parts) < _MAX_WALK_DEPTH:
                stack.extend((*parts, d) for d in reversed(dirs))

    def _scan(self, rel: str, root_fd: int, parts: tuple[str, ...]) -> tuple[list[str], list[str]]:
        dir_fd = self._open_dir(rel, root_fd, parts)
        try:
            fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC, dir_fd=dir_fd)
        except OSError as err:
            raise self._error(rel, err) from err
        finally:
            _close(dir_fd, root_fd)
        files: list[str] = []
        dirs: list[str] = []
        try:
            with os.scandir(fd) as it:
                for e in it:
                    if not _listable(e, fd) or not _valid_name(e.name):
                        continue
                    if e.is_dir(follow_symlinks=False):
                        dirs.append(e.name)
                    elif e.is_file(follow_symlinks=False):
                        files.append(e.name)
        except OSError as err:
            raise self._error(rel, err) from err
        finally:
            os.close(fd)
        files.sort()
        dirs.sort()
        return files, dirs


def _fold(parts: tuple[str, ...]) -> tuple[str, ...]:
    # Protected paths must also hold on case-insensitive or normalising file systems
    # (macOS stores "e" + U+0301 and U+00E9 as one name), so compare NFC-casefolded forms.
    return tuple(unicodedata.normalize("NFC", c).casefold() for c in parts)


def _listable(e: os.DirEntry[str], dir_fd: int) -> bool:
    """Whether a listing shows ``e``: not ``.git``, not a temp file, not a generated folder."""
    if _is_git_component(e.name) or e.name.startswith(_TEMP_PREFIX):
        return False
    try:
        is_dir = e.is_dir(follow_symlinks=False)
    except OSError:
        return False
    return not (is_dir and is_generated_dir(dir_fd, e.name))


def _generated(rel: str, folder: tuple[str, ...]) -> GeneratedPathError:
    return GeneratedPathError(
        rel,
        f"inside {'/'.join(folder)}/, a generated or environment folder (dependencies, caches, "
        "build output or a virtual environment); files there are never written",
    )


def _valid_name(name: str) -> bool:
    try:
        return split_path(name) == (name,)
    except SafeIOError:
        return False


def _describe(mode: int) -> str:
    if stat_mod.S_ISFIFO(mode):
        return "FIFO"
    if stat_mod.S_ISSOCK(mode):
        return "socket"
    if stat_mod.S_ISCHR(mode):
        return "character device"
    if stat_mod.S_ISBLK(mode):
        return "block device"
    return "non-regular file"
