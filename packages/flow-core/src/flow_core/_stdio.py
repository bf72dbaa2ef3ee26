"""Taking over stdin and stdout at the file-descriptor level, for the CLI and the MCP server.

A front end whose stdout is a protocol (the MCP server: "Basic > Transports > stdio" of MCP
2025-11-25) or exactly one JSON report (``flow status|check|run``) must keep every other byte
off it: a check's output, a library's ``print`` or a C extension writing to descriptor 1.
Redirecting ``sys.stdout`` alone misses child processes and native code, so the takeover
works on descriptors, the way the MCP python-sdk's stdio server does:

1. descriptors 0, 1 and 2 that are closed are first opened on ``/dev/null``, so no file the
   process opens later can become "stdout" or "stderr" by accident (and ``sys.stderr``,
   which Python sets to ``None`` when descriptor 2 was closed at startup, writes there);
2. the real stdout (and, when asked, stdin) is duplicated *above descriptor 2* with
   ``fcntl(F_DUPFD_CLOEXEC, 3)``: close-on-exec, so no child inherits it, and never 0, 1 or 2,
   so step 3 cannot overwrite it (a plain ``os.dup`` returns the lowest free descriptor: with
   descriptor 0 closed it returned 0, which step 3 then pointed at ``/dev/null``);
3. descriptor 1 is pointed at descriptor 2 and, when stdin is taken, descriptor 0 at
   ``/dev/null``; ``sys.stdout`` is set to ``sys.stderr``;
4. on exit everything is put back: descriptors 0 and 1 name what they named before and the
   private duplicates are closed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from types import TracebackType
from typing import TextIO

__all__ = ["StdioTakeover"]

_FIRST_PRIVATE_FD = 3


def _is_open(fd: int) -> bool:
    try:
        fcntl.fcntl(fd, fcntl.F_GETFD)
    except OSError:
        return False
    return True


def _fill_closed_standard_fds() -> frozenset[int]:
    """Open ``/dev/null`` on each closed descriptor among 0, 1 and 2; return those filled."""
    filled: set[int] = set()
    for fd in (0, 1, 2):
        if _is_open(fd):
            continue
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:  # a lower one is open: place it explicitly
            os.dup2(null, fd, inheritable=True)
            os.close(null)
        filled.add(fd)
    return frozenset(filled)


def _private_copy(fd: int) -> int:
    """A close-on-exec duplicate of ``fd`` numbered 3 or above."""
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _FIRST_PRIVATE_FD)


def _flush_stdout() -> None:
    stream = sys.stdout
    if stream is not None:
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


class StdioTakeover:
    """Context manager that claims stdout (and optionally stdin) for the caller alone.

    Inside the ``with`` block, :attr:`stdout_fd` is the real stdout and (with
    ``stdin=True``) :attr:`stdin_fd` the real stdin, both private (>= 3, close-on-exec);
    descriptor 1 writes to stderr and descriptor 0 reads ``/dev/null``. Not reentrant; use it
    from the main thread, around the whole session.

    Args:
        stdin: also take over descriptor 0 (the MCP server reads requests from it; no child
            may read them).

    Attributes:
        stdout_fd: the private stdout descriptor (``-1`` outside the block).
        stdin_fd: the private stdin descriptor (``-1`` outside the block or without stdin).
        closed_at_start: which of descriptors 0, 1 and 2 were closed when the block began
            (they now read and write ``/dev/null``; a caller may refuse to serve when 1 was).

    Raises:
        OSError: the descriptors could not be duplicated (out of descriptors).
    """

    def __init__(self, *, stdin: bool = False) -> None:
        self._take_stdin = stdin
        self.stdout_fd = -1
        self.stdin_fd = -1
        self.closed_at_start: frozenset[int] = frozenset()
        self._saved_stdout: TextIO | None = None
        self._swapped = False

    def __enter__(self) -> StdioTakeover:
        _flush_stdout()
        self.closed_at_start = _fill_closed_standard_fds()
        if sys.stderr is None:
            # Started with descriptor 2 closed: Python set sys.stderr to None, and every
            # diagnostic would raise; it now writes to /dev/null like the descriptor does.
            sys.stderr = open(2, "w", closefd=False, errors="backslashreplace")
        self.stdout_fd = _private_copy(1)
        try:
            if self._take_stdin:
                self.stdin_fd = _private_copy(0)
            os.dup2(2, 1)
            if self._take_stdin:
                null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
                try:
                    os.dup2(null, 0)
                finally:
                    os.close(null)
        except BaseException:
            self._restore()
            raise
        self._saved_stdout = sys.stdout  # None when descriptor 1 was closed at startup
        self._swapped = True
        sys.stdout = sys.stderr
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _flush_stdout()
        if self._swapped:
            sys.stdout = self._saved_stdout
            self._saved_stdout = None
            self._swapped = False
        self._restore()

    def _restore(self) -> None:
        """Point descriptors 0 and 1 back at what they were; close the private copies."""
        for private, standard in ((self.stdout_fd, 1), (self.stdin_fd, 0)):
            if private < 0:
                continue
            with contextlib.suppress(OSError):
                os.dup2(private, standard)
            with contextlib.suppress(OSError):
                os.close(private)
        self.stdout_fd = -1
        self.stdin_fd = -1
