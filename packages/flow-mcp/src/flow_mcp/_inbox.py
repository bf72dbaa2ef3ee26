"""The reader thread: stdin keeps being read while a request is served.

MCP 2025-11-25 lets a client send ``ping`` ("Basic > Utilities > Ping") and
``notifications/cancelled`` ("Basic > Utilities > Cancellation") while a request is in
progress; a server that reads its next frame only after answering the current one would see
both too late. :class:`Inbox` reads frames on a daemon thread and hands each decoded message
to ``route`` on that thread first: ``route`` answers what must not wait (``ping``) or acts on
it (a cancellation) and returns True; everything else is queued for the main thread, which
serves requests one at a time, in arrival order.

The thread blocks SIGINT, SIGTERM and SIGHUP, so the interpreter's signal handlers run on the main
thread, which waits on the queue with a short timeout to notice them promptly.
"""

from __future__ import annotations

import contextlib
import queue
import signal
import threading
from collections.abc import Callable
from typing import Any, Final

from flow_core import STOP_SIGNALS
from flow_mcp._framing import FrameError, FrameReader, decode

__all__ = ["EOF", "Inbox", "InboxItem"]


class _Eof:
    """The client closed stdin (or the session asked the reader to stop)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "EOF"


#: Queued once, last: no frame follows.
EOF: Final = _Eof()

#: What :meth:`Inbox.get` returns: a decoded message, a frame error to answer, or EOF.
InboxItem = Any

#: Seconds the main thread waits on the queue before looking for signals again.
_SIGNAL_CHECK_S: Final = 0.2

#: Messages read ahead of the main thread, at most. When that many wait, the reader stops
#: reading (as a sequential server would): a client cannot grow the server's memory without
#: bound by sending faster than requests are served (64 frames of at most 4 MiB each).
MAX_QUEUED: Final = 64


class Inbox:
    """Reads frames from ``reader`` on a daemon thread and queues what ``route`` leaves.

    Args:
        reader: where frames come from.
        route: called on the reader thread with each decoded message; returns True when it
            was fully handled there (it must be quick and must not raise).
        on_eof: called on the reader thread when stdin ends or an oversized frame closes
            the session, before EOF is queued (the session interrupts a running request).
    """

    def __init__(
        self,
        reader: FrameReader,
        *,
        route: Callable[[Any], bool],
        on_eof: Callable[[], None],
    ) -> None:
        self._reader = reader
        self._route = route
        self._on_eof = on_eof
        self._queue: queue.Queue[InboxItem] = queue.Queue(maxsize=MAX_QUEUED)
        self._closing = False
        prepare = getattr(reader, "prepare_stop", None)
        if callable(prepare):
            prepare()
        self._thread = threading.Thread(target=self._pump, name="flow-mcp-reader", daemon=True)

    def start(self) -> None:
        """Start the reader thread."""
        self._thread.start()

    def get(self) -> InboxItem:
        """The next queued item (blocks; signal handlers still run within 0.2 s)."""
        while True:
            with contextlib.suppress(queue.Empty):
                return self._queue.get(timeout=_SIGNAL_CHECK_S)

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the reader thread (when its reader can be stopped) and wait for it."""
        self._closing = True
        stop = getattr(self._reader, "stop", None)
        if callable(stop):
            stop()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _put(self, item: InboxItem) -> bool:
        """Queue ``item``, waiting while the queue is full; False once the inbox is closing."""
        while not self._closing:
            try:
                self._queue.put(item, timeout=_SIGNAL_CHECK_S)
            except queue.Full:
                continue
            return True
        return False

    def _pump(self) -> None:
        with contextlib.suppress(AttributeError, OSError, ValueError):
            signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_SIGNALS))
        try:
            while True:
                try:
                    line = self._reader.read_line()
                except FrameError as err:  # oversized: nothing after it can be trusted
                    self._ended()
                    self._put(err)
                    break
                if line is None:
                    self._ended()
                    break
                try:
                    message = decode(line)
                except FrameError as err:
                    if not self._put(err):
                        break
                    continue
                if not self._route(message) and not self._put(message):
                    break
        except OSError:  # stdin failed (EIO, EBADF): the same as EOF for the session
            self._ended()
        finally:
            self._put(EOF)

    def _ended(self) -> None:
        if not self._closing:
            self._on_eof()
