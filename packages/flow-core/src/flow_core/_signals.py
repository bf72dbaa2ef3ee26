"""First signal interrupts, second forces: the one SIGINT/SIGTERM/SIGHUP rule of every front end.

The CLI, the TUI and the MCP server all follow it:

* the **first** signal asks the work in progress to stop cleanly: the caller's ``interrupt``
  callback runs (typically ``Runtime.interrupt``, which kills the check process groups and
  makes the run return an ``interrupted`` report, exit code 130);
* the **second** signal, or the first one when there is nothing to stop cleanly (the callback
  returns False), *forces*: ``KeyboardInterrupt`` is raised in the main thread at once.

A callback may also raise (the MCP server raises ``KeyboardInterrupt`` to unwind its request;
the TUI raises ``SystemExit(130)`` on SIGTERM to leave).

SIGHUP (the terminal was closed, or a supervisor asks to stop) is handled exactly like SIGTERM:
left at its default it would kill the process without a report, leaving a record that says
``running`` (``docs/architecture.md``, "Run store").
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["STOP_SIGNALS", "Interrupts"]

#: The signals that stop a command cleanly: Ctrl-C, ``kill``, and a closed terminal.
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupts:
    """Signal handler state: counts signals; the first interrupts, the second forces.

    Args:
        interrupt: called with the signal number on the first signal; returns True when it
            arranged a clean stop, False when there is nothing to stop (the signal then
            forces at once). None: every signal forces.
        signals: the signals handled (default ``STOP_SIGNALS``: SIGINT, SIGTERM, SIGHUP).

    Attributes:
        count: signals received so far.
        first_signal: the number of the first signal received (None before any).
    """

    def __init__(
        self,
        interrupt: Callable[[int], bool] | None = None,
        *,
        signals: Sequence[signal.Signals] = STOP_SIGNALS,
    ) -> None:
        self._interrupt = interrupt
        self._signals = tuple(signals)
        self.count = 0
        self.first_signal: int | None = None
        self._previous: dict[int, Any] = {}

    def handler(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler (installed by :meth:`install`; callable directly in tests).

        Raises:
            KeyboardInterrupt: on the second signal, or the first when ``interrupt`` is None
                or returns False.
        """
        self.count += 1
        if self.first_signal is None:
            self.first_signal = signum
        if self.count == 1 and self._interrupt is not None and self._interrupt(signum):
            return
        raise KeyboardInterrupt

    def install(self) -> None:
        """Install :meth:`handler` for the signals (main thread only); :meth:`restore` undoes."""
        for sig in self._signals:
            self._previous[sig] = signal.signal(sig, self.handler)

    def restore(self) -> None:
        """Put back the handlers that were there before :meth:`install`."""
        while self._previous:
            sig, old = self._previous.popitem()
            signal.signal(sig, old)

    @contextmanager
    def installed(self) -> Iterator[Interrupts]:
        """Install the handler for the ``with`` block, then restore the previous ones."""
        self.install()
        try:
            yield self
        finally:
            self.restore()
