"""Which request runs and which wait: the bookkeeping cancellation needs (thread-safe).

MCP 2025-11-25, "Basic > Utilities > Cancellation": a cancelled request gets no response;
a cancellation that names an unknown or finished request, or ``initialize`` (2026-07-28
adds ``server/discover``), is ignored. The reader thread records each queued request and
applies cancellations; the main thread starts and finishes requests. One lock guards both.

When the client is gone (stdin ended, or a write to it failed), :meth:`InFlight.end_input`
marks the session ended: the running request is told to stop and every queued request that
would do work (``work=True``: a ``flow_check`` or ``flow_run`` call) is refused by
:meth:`InFlight.start`, so no check, model request or edit starts for a client that cannot
receive its answer (flow-mcp README, "End of input"). Because both happen under the same
lock, such a request is either running when the end comes (and is stopped) or never starts.
"""

from __future__ import annotations

import threading
from typing import Any, Final, Literal

RequestId = str | int

#: Requests a client must not cancel; a cancellation naming one is ignored.
NOT_CANCELLABLE: Final = frozenset({"initialize", "server/discover"})

Cancelled = Literal["running", "queued", "ignored", "again"]

#: The tools whose calls run checks, model requests or edits (dropped once the client is gone).
WORK_TOOLS: Final = frozenset({"flow_check", "flow_run"})

__all__ = ["NOT_CANCELLABLE", "WORK_TOOLS", "Cancelled", "InFlight", "does_work"]


def does_work(method: str, params: Any) -> bool:
    """Whether a request would run checks, a model or edits (a flow_check/flow_run call)."""
    return method == "tools/call" and isinstance(params, dict) and params.get("name") in WORK_TOOLS


class InFlight:
    """The running request (at most one) and the requests queued behind it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: RequestId | None = None
        self._method: str | None = None
        self._cancelled = False
        self._reason: str | None = None
        self.ended = False
        self._queued: dict[RequestId, int] = {}
        self._dropped: dict[RequestId, int] = {}

    def queued(self, rid: RequestId) -> None:
        """The reader thread queued a request with this id for the main thread."""
        with self._lock:
            self._queued[rid] = self._queued.get(rid, 0) + 1

    def start(self, rid: RequestId, method: str, *, work: bool = False) -> bool:
        """The main thread takes the request; False when it was cancelled while queued, or
        when it would do ``work`` and the client is gone (:attr:`ended`)."""
        with self._lock:
            _take(self._queued, rid)
            if _take(self._dropped, rid) or (work and self.ended):
                return False
            self._current, self._method, self._cancelled = rid, method, False
            self._reason = None
            return True

    def finish(self) -> None:
        """The main thread is done with the running request."""
        with self._lock:
            self._current = self._method = None
            self._cancelled = False
            self._reason = None

    def end_input(self, reason: str) -> str | None:
        """The client is gone: refuse every later :meth:`start` of work and stop the running
        request. Returns the running request's method (None when idle or already ended)."""
        with self._lock:
            if self.ended:
                return None
            self.ended = True
            if self._current is None:
                return None
            if self._reason is None:
                self._reason = reason
            return self._method

    def stop_reason(self) -> str | None:
        """Why the running request must stop (cancelled, or the client is gone), or None."""
        with self._lock:
            return self._reason

    def cancelled(self) -> bool:
        """Whether the running request was cancelled (its answer must not be sent)."""
        with self._lock:
            return self._cancelled

    def running_method(self) -> str | None:
        """The method of the running request, if any."""
        with self._lock:
            return self._method if self._current is not None else None

    def cancel(
        self, rid: RequestId, reason: str = "cancelled by the client"
    ) -> tuple[Cancelled, str | None]:
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
                if self._reason is None:
                    self._reason = reason
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
