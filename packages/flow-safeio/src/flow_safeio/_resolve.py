"""The root a :class:`flow_safeio.Workspace` holds open, and resolution beneath it.

Source of the rules: ``docs/architecture.md``, sections "Trust" and "File I/O". The root is held
open by descriptor and re-checked on every call; every path is checked syntactically first
(:func:`flow_safeio.validate_path`), then resolved from that descriptor without ever following a
symbolic link (Linux ``openat2`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
RESOLVE_NO_MAGICLINKS`` where available, else a component-by-component walk with
``O_NOFOLLOW``). The reading and writing halves of the workspace build on :class:`Root`.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
import unicodedata
from collections.abc import Sequence
from types import TracebackType
from typing import Literal, Self, TypeAlias

from flow_safeio import _openat2
from flow_safeio._errors import (
    ClosedError,
    HardLinkError,
    IsDirectoryError,
    NotDirectoryError,
    NotFoundError,
    NotRegularFileError,
    PathEscapeError,
    ProtectedPathError,
    RootError,
    SafeIOError,
    StaleRootError,
    SymlinkError,
)
from flow_safeio._paths import split_path

__all__ = [
    "CLOEXEC",
    "DEFAULT_MAX_BYTES",
    "DIR_FLAGS",
    "Resolver",
    "Root",
    "close_unless",
    "fsync_dir",
]

#: Default cap on a single read or write, in bytes (256 KiB; ``docs/architecture.md``, "File I/O").
DEFAULT_MAX_BYTES = 262_144

#: ``"auto"`` uses ``openat2`` where the kernel offers it, else the walk.
Resolver: TypeAlias = Literal["auto", "openat2", "walk"]

CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | CLOEXEC
_OPENAT2_RETRIES = 8


def close_unless(fd: int, keep: int) -> None:
    """Close ``fd`` unless it is ``keep`` (the root descriptor, which stays open)."""
    if fd != keep:
        os.close(fd)


def fsync_dir(fd: int) -> None:
    """``fsync`` a directory; file systems that cannot are tolerated."""
    try:
        os.fsync(fd)
    except OSError as err:  # some file systems cannot fsync directories
        if err.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise


class Root:
    """The open root of a workspace and the resolution rules beneath it (see
    :class:`flow_safeio.Workspace` for the arguments and what they raise)."""

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
            fd = os.open(root_str, os.O_RDONLY | os.O_DIRECTORY | CLOEXEC)
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

    def __enter__(self) -> Self:
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
                    nxt = os.open(name, DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(name, 0o777, dir_fd=fd)
                    except FileExistsError:
                        pass  # created concurrently; the O_NOFOLLOW open below judges it
                    else:
                        fsync_dir(fd)
                    nxt = os.open(name, DIR_FLAGS, dir_fd=fd)
                except OSError as err:
                    if err.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise self._classify_component(rel, fd, name, err) from err
                    raise
                close_unless(fd, root_fd)
                fd = nxt
        except SafeIOError:
            close_unless(fd, root_fd)
            raise
        except OSError as err:
            close_unless(fd, root_fd)
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
                    return _openat2.openat2(root_fd, "/".join(parts), DIR_FLAGS)
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
            close_unless(dir_fd, root_fd)


def _fold(parts: tuple[str, ...]) -> tuple[str, ...]:
    # Protected paths must also hold on case-insensitive or normalising file systems
    # (macOS stores "e" + U+0301 and U+00E9 as one name), so compare NFC-casefolded forms.
    return tuple(unicodedata.normalize("NFC", c).casefold() for c in parts)


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
