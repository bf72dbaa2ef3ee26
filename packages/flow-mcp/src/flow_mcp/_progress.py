"""Progress notifications for a tool call (MCP 2025-11-25, "Basic > Utilities > Progress").

A client that sent ``_meta.progressToken`` with ``tools/call`` gets ``notifications/progress``
while the call runs: one per runtime event, in the report's own words, and heartbeats while
nothing happens for a while, so that a client resetting its timeout on progress keeps waiting
for a long run (flow-mcp README, "Progress" and "Client timeouts").
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from flow_core import Event, describe_event
from flow_mcp._rpc import RequestId

#: Seconds without a notification before a heartbeat is sent (the promise is "at most 10").
HEARTBEAT_S: Final = 5.0

__all__ = ["HEARTBEAT_S", "ProgressRelay", "progress_message"]


def progress_message(event: Event) -> str | None:
    """One line a client can show for a runtime event, in the report's own words
    (``flow_core.describe_event``, shared with the CLI's progress log); None for an event
    that gets no notification of its own (``model_progress``, one per streamed token: the
    heartbeat still says that the turn is running)."""
    return describe_event(event)


class ProgressRelay:
    """Turns runtime events into ``notifications/progress`` ("Basic > Utilities > Progress").

    Pass it as ``on_event`` when building the runtime. It sends only while a request that
    carried ``_meta.progressToken`` runs: one notification per event, whose ``message`` is
    :func:`progress_message`, and, while no event comes (a long model reply, a slow check or
    review), a heartbeat every ``heartbeat_s`` seconds repeating the last event's words with
    the seconds it has lasted (``coder: model turn 2 (still running, 15 s)``). A client that
    resets its request timeout on progress (the TypeScript SDK's ``resetTimeoutOnProgress``)
    thus never times out a run that is still working. ``progress`` counts notifications, so
    it always increases.

    Args:
        send: writes one notification (the session's frame writer; thread-safe).
        heartbeat_s: seconds without a notification before a heartbeat (at most 10, so a
            client with a 10 s reset window is served).
    """

    def __init__(
        self, send: Callable[[dict[str, Any]], None], *, heartbeat_s: float = HEARTBEAT_S
    ) -> None:
        self._send = send
        self.heartbeat_s = heartbeat_s
        self.token: RequestId | None = None
        self._count = 0
        self._last = "working"
        self._last_at = 0.0
        self._sent_at = 0.0
        self._closed = False
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        #: Called with every event before it is relayed (``FlowTools`` re-asserts a
        #: cancellation that arrived before the runtime reset its stop flag).
        self.watch: Callable[[Event], None] | None = None

    def start(self, token: RequestId | None, what: str = "working") -> None:
        """Begin relaying for one request (``None``: stay silent, heartbeats stop); ``what``
        is what heartbeats say until the first event (``flow_run: starting``)."""
        with self._wake:
            self.token = token
            self._count = 0
            self._last = what
            self._last_at = self._sent_at = time.monotonic()
            self._wake.notify_all()
            if token is not None and not self._closed and self._thread is None:
                self._thread = threading.Thread(
                    target=self._beat, name="flow-mcp-progress", daemon=True
                )
                self._thread.start()

    def close(self) -> None:
        """Stop the heartbeat thread (the session ended)."""
        with self._wake:
            self._closed = True
            self.token = None
            self._wake.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)

    def __call__(self, event: Event, /) -> None:
        watch = self.watch
        if watch is not None:
            with contextlib.suppress(Exception):
                watch(event)
        message = progress_message(event)
        if message is None:
            return
        with self._wake:
            self._last, self._last_at = message, time.monotonic()
            note = self._note(message)
        if note is not None:
            self._deliver(note)

    def _note(self, message: str) -> dict[str, Any] | None:
        """The next notification (call with the lock held), or None when silent."""
        if self.token is None:
            return None
        self._count += 1
        self._sent_at = time.monotonic()
        params = {"progressToken": self.token, "progress": self._count, "message": message}
        return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}

    def _deliver(self, note: dict[str, Any]) -> None:
        with contextlib.suppress(Exception):  # an EventSink must never raise (flow_core)
            self._send(note)

    def _beat(self) -> None:
        with contextlib.suppress(AttributeError, OSError, ValueError):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        while True:
            with self._wake:
                if self._closed:
                    return
                now = time.monotonic()
                due = self._sent_at + self.heartbeat_s
                if self.token is None or now < due:
                    self._wake.wait(None if self.token is None else due - now)
                    continue
                lasted = int(now - self._last_at)
                note = self._note(f"{self._last} (still running, {lasted} s)")
            if note is not None:
                self._deliver(note)
