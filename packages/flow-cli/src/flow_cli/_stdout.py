"""Stdout discipline for ``flow status|check|run``: exactly one JSON object on stdout.

While a command runs, file descriptor 1 is pointed at stderr (``dup2``), so anything a check,
a library or a C extension prints lands on stderr. The final JSON goes to a saved duplicate of
the real stdout descriptor. Redirecting at the descriptor level (not only ``sys.stdout``)
also covers child processes and native code.
"""

from __future__ import annotations

import contextlib
import os
import sys
from types import TracebackType


class StdoutGuard:
    """Context manager that sends fd 1 to fd 2 and keeps the real stdout for one JSON value.

    Use ``emit`` once, with the final JSON text; it is written with a trailing newline.
    ``StdoutGuard.emitted`` becomes true for the rest of the process once a report went out,
    so a late interrupt cannot add a second object.
    """

    emitted = False

    def __init__(self) -> None:
        self._saved: int | None = None

    def __enter__(self) -> StdoutGuard:
        _flush_stdout()
        self._saved = os.dup(1)
        os.dup2(2, 1)
        return self

    def emit(self, text: str) -> None:
        """Write ``text`` and a newline to the real stdout.

        Args:
            text: the JSON document (one line).
        """
        _flush_stdout()
        StdoutGuard.emitted = True
        fd = self._saved if self._saved is not None else 1
        view = memoryview((text + "\n").encode("utf-8"))
        with contextlib.suppress(BrokenPipeError):
            while view:
                written = os.write(fd, view)
                view = view[written:]

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _flush_stdout()
        if self._saved is not None:
            os.dup2(self._saved, 1)
            os.close(self._saved)
            self._saved = None


def _flush_stdout() -> None:
    stream = sys.stdout
    if stream is not None:
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
