"""The writing half of :class:`flow_safeio.Workspace`: atomic replacement, removal, and the
write-target rules (protected paths, generated folders).

Source of the rules: ``docs/architecture.md``, sections "Trust" and "File I/O". Writes are
atomic renames of a temporary file in the same directory; only regular files with a single hard
link are replaced; sizes are capped.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_mod

from flow_safeio._errors import (
    ClosedError,
    GeneratedPathError,
    IsDirectoryError,
    NotTextError,
    SafeIOError,
    TooLargeError,
)
from flow_safeio._generated import holds_venv_marker, is_generated_name
from flow_safeio._paths import split_path
from flow_safeio._resolve import CLOEXEC, DIR_FLAGS, Root, close_unless, fsync_dir

__all__ = ["TEMP_PREFIX", "Writer"]

#: Temporary files of an atomic write start with this; listings never show them.
TEMP_PREFIX = ".flowtmp-"
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NOCTTY | CLOEXEC


class Writer(Root):
    """Writing below the root (the public methods are documented on each)."""

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
                    next_fd = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
                except OSError:
                    return  # missing (a new directory holds no marker), a file or a link
                close_unless(dir_fd, root_fd)
                dir_fd = next_fd
                if holds_venv_marker(dir_fd):
                    raise _generated(rel, parts[:depth])
        finally:
            close_unless(dir_fd, root_fd)

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
            keep_mode = self._existing_mode(rel, dir_fd, name)
            tmp, fd = self._create_temp(rel, dir_fd)
            try:
                _fill(fd, view, mode if mode is not None else keep_mode)
                os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException as exc:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dir_fd)
                if isinstance(exc, OSError) and not isinstance(exc, SafeIOError):
                    raise self._error(rel, exc) from exc
                raise
            fsync_dir(dir_fd)
        finally:
            close_unless(dir_fd, root_fd)

    def _existing_mode(self, rel: str, dir_fd: int, name: str) -> int | None:
        """The permission bits of the file ``name`` (in ``dir_fd``) that a write replaces;
        None when there is none yet.

        Raises:
            SymlinkError, IsDirectoryError, NotRegularFileError, HardLinkError: the target
                cannot be replaced (``_require_file``); SafeIOError: it cannot be examined.
        """
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as err:
            raise self._error(rel, err) from err
        self._require_file(rel, st)
        return stat_mod.S_IMODE(st.st_mode)

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
            fsync_dir(dir_fd)
        finally:
            close_unless(dir_fd, root_fd)

    def _create_temp(self, rel: str, dir_fd: int) -> tuple[str, int]:
        for _ in range(16):
            tmp = TEMP_PREFIX + os.urandom(8).hex()
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


def _generated(rel: str, folder: tuple[str, ...]) -> GeneratedPathError:
    return GeneratedPathError(
        rel,
        f"inside {'/'.join(folder)}/, a generated or environment folder (dependencies, caches, "
        "build output or a virtual environment); files there are never written",
    )


def _fill(fd: int, view: memoryview, mode: int | None) -> None:
    """Write all of ``view`` to the new file ``fd``, set its permission bits to ``mode``
    when given, ``fsync`` it and close it (even on failure).

    Raises:
        OSError: a write, ``fchmod`` or ``fsync`` failed.
    """
    try:
        written = 0
        while written < view.nbytes:
            written += os.write(fd, view[written:])
        if mode is not None:
            os.fchmod(fd, stat_mod.S_IMODE(mode))
        os.fsync(fd)
    finally:
        os.close(fd)
