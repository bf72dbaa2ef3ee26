"""Stdout discipline for ``flow status|check|run``: exactly one JSON object on stdout.

While a command runs, stdout is taken over with ``flow_core.StdioTakeover``: descriptor 1
points at stderr, so anything a check, a library or a C extension prints lands there, and the
final JSON goes to the private (close-on-exec, above descriptor 2) copy of the real stdout.
Redirecting at the descriptor level (not only ``sys.stdout``) also covers child processes
and native code.
"""

from __future__ import annotations

import contextlib
import os
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flow_core import StdioTakeover


class StdoutGuard:
    """Context manager that sends fd 1 to fd 2 and keeps the real stdout for one JSON value.

    Use ``emit`` once, with the final JSON text; it is written with a trailing newline.
    ``StdoutGuard.emitted`` becomes true for the rest of the process once a report went out,
    so a late interrupt cannot add a second object.
    """

    emitted = False

    def __init__(self) -> None:
        self._stdio: StdioTakeover | None = None

    def __enter__(self) -> StdoutGuard:
        from flow_core import StdioTakeover

        self._stdio = StdioTakeover().__enter__()
        return self

    def emit(self, text: str) -> None:
        """Write ``text`` and a newline to the real stdout.

        Args:
            text: the JSON document (one line).
        """
        StdoutGuard.emitted = True
        fd = self._stdio.stdout_fd if self._stdio is not None else 1
        view = memoryview((text + "\n").encode("utf-8"))
        # A reader that went away (a pipe closed, a terminal hung up: EPIPE, EIO) loses the
        # report; the run's record already holds it.
        with contextlib.suppress(OSError):
            while view:
                written = os.write(fd, view)
                view = view[written:]

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._stdio is not None:
            self._stdio.__exit__(exc_type, exc, tb)
            self._stdio = None
