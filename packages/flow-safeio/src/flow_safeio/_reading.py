"""The reading half of :class:`flow_safeio.Workspace`: whole-file reads, metadata, listings and
the walk.

Source of the rules: ``docs/architecture.md``, sections "Trust" and "File I/O". Only regular
files with a single hard link are read, sizes are capped, nothing is followed, and generated
folders and ``.git`` are never listed.
"""

from __future__ import annotations

import heapq
import os
import stat as stat_mod
from collections.abc import Iterator

from flow_safeio._entries import Entry, Listing, entry
from flow_safeio._errors import (
    ClosedError,
    IsDirectoryError,
    NotDirectoryError,
    NotFoundError,
    NotTextError,
    SafeIOError,
    StaleRootError,
    TooLargeError,
)
from flow_safeio._generated import is_generated_dir
from flow_safeio._paths import _is_git_component, split_path
from flow_safeio._resolve import CLOEXEC, Root, close_unless
from flow_safeio._writing import TEMP_PREFIX

__all__ = ["Reader"]

_MAX_WALK_DEPTH = 64


class Reader(Root):
    """Reading below the root (the public methods are documented on each)."""

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
            close_unless(dir_fd, root_fd)
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
            return entry(".", ".", os.fstat(root_fd))
        dir_fd = self._open_dir(rel, root_fd, parts[:-1])
        try:
            st = self._leaf_stat(rel, dir_fd, parts[-1])
        finally:
            close_unless(dir_fd, root_fd)
        return entry(parts[-1], "/".join(parts), st)

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
        fd = self._listing_fd(rel, root_fd, parts)
        try:
            with os.scandir(fd) as it:
                names = heapq.nsmallest(limit + 1, (e.name for e in it if _listable(e, fd)))
            out = Listing(truncated=len(names) > limit)
            for name in names[:limit]:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue  # removed while we listed
                out.append(entry(name, f"{prefix}/{name}" if prefix else name, st))
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

    def _listing_fd(self, rel: str, root_fd: int, parts: tuple[str, ...]) -> int:
        """A private descriptor of the directory ``parts`` for ``scandir`` (which shares the
        offset of the descriptor it is given); the caller closes it."""
        dir_fd = self._open_dir(rel, root_fd, parts)
        try:
            return os.open(".", os.O_RDONLY | os.O_DIRECTORY | CLOEXEC, dir_fd=dir_fd)
        except OSError as err:
            raise self._error(rel, err) from err
        finally:
            close_unless(dir_fd, root_fd)

    def _scan(self, rel: str, root_fd: int, parts: tuple[str, ...]) -> tuple[list[str], list[str]]:
        fd = self._listing_fd(rel, root_fd, parts)
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


def _listable(e: os.DirEntry[str], dir_fd: int) -> bool:
    """Whether a listing shows ``e``: not ``.git``, not a temp file, not a generated folder."""
    if _is_git_component(e.name) or e.name.startswith(TEMP_PREFIX):
        return False
    try:
        is_dir = e.is_dir(follow_symlinks=False)
    except OSError:
        return False
    return not (is_dir and is_generated_dir(dir_fd, e.name))


def _valid_name(name: str) -> bool:
    try:
        return split_path(name) == (name,)
    except SafeIOError:
        return False
