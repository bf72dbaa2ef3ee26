"""Which request runs and which wait: the bookkeeping cancellation needs (thread-safe).

MCP 2025-11-25, "Basic > Utilities > Cancellation": a cancelled request gets no response;
a cancellation that names an unknown or finished request, or ``initialize`` (2026-07-28
adds ``server/discover``), is ignored. The reader thread records each queued request and
applies cancellations; the main thread starts and finishes requests. One lock guards both.
"""

from __future__ import annotations

import threading
from typing import Final, Literal

RequestId = str | int

#: Requests a client must not cancel; a cancellation naming one is ignored.
NOT_CANCELLABLE: Final = frozenset({"initialize", "server/discover"})

Cancelled = Literal["running", "queued", "ignored", "again"]

__all__ = ["NOT_CANCELLABLE", "Cancelled", "InFlight"]


class InFlight:
    """The running request (at most one) and the requests queued behind it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: RequestId | None = None
        self._method: str | None = None
        self._cancelled = False
        self._queued: dict[RequestId, int] = {}
        self._dropped: dict[RequestId, int] = {}

    def queued(self, rid: RequestId) -> None:
        """The reader thread queued a request with this id for the main thread."""
        with self._lock:
            self._queued[rid] = self._queued.get(rid, 0) + 1

    def start(self, rid: RequestId, method: str) -> bool:
        """The main thread takes the request; False when it was cancelled while queued."""
        with self._lock:
            _take(self._queued, rid)
            if _take(self._dropped, rid):
                return False
            self._current, self._method, self._cancelled = rid, method, False
            return True

    def finish(self) -> None:
        """The main thread is done with the running request."""
        with self._lock:
            self._current = self._method = None
            self._cancelled = False

    def cancelled(self) -> bool:
        """Whether the running request was cancelled (its answer must not be sent)."""
        with self._lock:
            return self._cancelled

    def running_method(self) -> str | None:
        """The method of the running request, if any."""
        with self._lock:
            return self._method if self._current is not None else None

    def cancel(self, rid: RequestId) -> tuple[Cancelled, str | None]:
        """Apply a cancellation; returns what it hit and the running request's method.

        ``running``: the running request is now cancelled (the caller stops its work);
        ``again``: it already was; ``queued``: a queued request with this id will be dropped
        when its turn comes; ``ignored``: unknown, finished, or not cancellable.
        """
        with self._lock:
            if rid == self._current and self._method not in NOT_CANCELLABLE:
                if self._cancelled:
                    return "again", self._method
                self._cancelled = True
                return "running", self._method
            if self._queued.get(rid, 0) > self._dropped.get(rid, 0):
                self._dropped[rid] = self._dropped.get(rid, 0) + 1
                return "queued", None
            return "ignored", None


def _take(counts: dict[RequestId, int], rid: RequestId) -> bool:
    if counts.get(rid, 0) <= 0:
        return False
    counts[rid] -= 1
    if not counts[rid]:
        del counts[rid]
    return True
