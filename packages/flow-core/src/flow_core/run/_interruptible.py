"""Wait for a blocking call while staying interruptible (``docs/architecture.md``, "Runtime").

A model request is one blocking HTTP exchange that can take minutes; a thread that waits in
it cannot notice ``Runtime.interrupt()`` until the server answers. :func:`call_interruptibly`
runs the call on a short-lived daemon helper thread and waits for whichever comes first: the
call's outcome, or ``should_stop()`` turning true (polled every ``poll_s`` seconds). When it
stops early the caller gets :class:`Abandoned` at once and the helper's late outcome is
dropped (the helper ends when the server answers or the backend's own timeout fires).

No lock is shared with the code that asks to stop: ``should_stop`` reads a flag that a signal
handler may set (the CLI's Ctrl-C) without any risk of deadlock, and the waiting thread still
takes ``KeyboardInterrupt`` as before (``threading.Event.wait`` is interruptible on POSIX).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

__all__ = ["POLL_S", "Abandoned", "call_interruptibly"]

#: Seconds between two looks at ``should_stop`` while a call is in flight (20 ms).
POLL_S = 0.02


class Abandoned(Exception):
    """``should_stop()`` turned true before the call finished; its outcome will be dropped."""


class _Outcome(Generic[T]):
    __slots__ = ("done", "error", "value")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: T | None = None
        self.error: BaseException | None = None


def call_interruptibly(
    fn: Callable[[], T],
    should_stop: Callable[[], bool],
    *,
    poll_s: float = POLL_S,
    name: str = "flow-call",
) -> T:
    """Run ``fn()`` on a daemon helper thread; return its value or raise what it raised.

    Args:
        fn: the blocking call (a ``ChatBackend.chat`` bound to its arguments).
        should_stop: polled every ``poll_s`` seconds while ``fn`` runs; must not block.
        poll_s: the polling period in seconds (> 0).
        name: the helper thread's name (shown in debuggers and thread dumps).

    Raises:
        Abandoned: ``should_stop()`` was true before ``fn`` finished.
        BaseException: whatever ``fn`` raised, unchanged (``KeyboardInterrupt`` included).
    """
    if should_stop():
        raise Abandoned
    outcome: _Outcome[T] = _Outcome()
    # The helper runs in a copy of the caller's context, so context variables set around the
    # call (the stream meter, ``flow_core._protocols.STREAM_METER``) reach the backend.
    context = contextvars.copy_context()

    def target() -> None:
        try:
            outcome.value = context.run(fn)
        except BaseException as err:  # handed to the waiting thread, never lost
            outcome.error = err
        finally:
            outcome.done.set()

    threading.Thread(target=target, name=name, daemon=True).start()
    while not outcome.done.wait(poll_s):
        if should_stop():
            raise Abandoned
    if outcome.error is not None:
        raise outcome.error
    return outcome.value  # type: ignore[return-value]
