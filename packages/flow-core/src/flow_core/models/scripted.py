"""A deterministic ``ChatBackend`` that replays a script: for Flow's tests and for yours."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from flow_core._errors import BackendError
from flow_core._protocols import ChatMessage, ChatResponse

__all__ = ["ScriptedBackend", "ScriptedReply", "ScriptedRequest"]

#: One step of a script: a fixed reply, or a function of (messages, tools) that returns one
#: (it may also raise ``BackendError`` to play a failing server).
ScriptedReply = (
    ChatResponse | Callable[[list[ChatMessage], Sequence[Mapping[str, Any]]], ChatResponse]
)


class ScriptedRequest(NamedTuple):
    """One request the scripted backend received (copies, safe to keep)."""

    model: str
    messages: tuple[ChatMessage, ...]
    tools: tuple[Mapping[str, Any], ...]
    format: Mapping[str, Any] | None


class ScriptedBackend:
    """Answers each ``chat`` call with the next reply of a script.

    Args:
        replies: the script, consumed in order (any iterable, also a generator). A callable
            step is called with the messages (as a list) and the tool schemas.
        models: what ``list_models`` returns (default none: the run preflight then checks no
            model name).
        window: what ``context_window`` returns, in tokens (default None: unknown, so a run
            keeps ``agent.max_context_chars``).
        tool_results: what ``tool_results_in_use`` returns once a request carried a tool
            result (``"native"`` or ``"user"``; default None: not reported).
        tools_reach: what ``tool_definitions_reach`` returns (default True; False plays a
            server whose template drops tool definitions).

    Attributes:
        requests: every ``(model, messages, tools, format)`` received, in order, including the
            one that found the script exhausted.
        options: the ``options`` argument of each of those requests (a copy, or None).

    Raises:
        BackendError: code ``script_exhausted`` from ``chat`` when the script has no reply
            left; code ``backend_closed`` after ``close``.
    """

    def __init__(
        self,
        replies: Iterable[ScriptedReply],
        *,
        models: Sequence[str] = (),
        window: int | None = None,
        tool_results: str | None = None,
        tools_reach: bool = True,
    ) -> None:
        self._replies = iter(replies)
        self._models = list(models)
        self._window = window
        self._tool_results = tool_results
        self._tools_reach = tools_reach
        self._delivered: set[str] = set()
        self._lock = threading.Lock()
        self._closed = False
        self.requests: list[ScriptedRequest] = []
        self.options: list[dict[str, Any] | None] = []

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called."""
        return self._closed

    def chat(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        format: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> ChatResponse:
        """Record the request and return (or compute) the next scripted reply."""
        opts = None if options is None else dict(options)
        with self._lock:
            if self._closed:
                raise BackendError("the scripted backend is closed", code="backend_closed")
            self.requests.append(ScriptedRequest(model, tuple(messages), tuple(tools), format))
            self.options.append(opts)
            if any(m.role == "tool" for m in messages):
                self._delivered.add(model)
            step = next(self._replies, None)
            number = len(self.requests)
        if step is None:
            raise BackendError(
                f"the script has no reply left for request {number} (model {model!r}); "
                "add more replies to the ScriptedBackend",
                code="script_exhausted",
            )
        if isinstance(step, ChatResponse):
            reply = step
        else:
            reply = step(list(messages), tuple(tools))
            if not isinstance(reply, ChatResponse):
                raise TypeError(
                    f"scripted step {number} returned {type(reply).__name__}, not ChatResponse"
                )
        if not reply.model:
            reply = dataclasses.replace(reply, model=model)
        return reply

    def context_window(self, model: str, options: Mapping[str, Any] | None = None) -> int | None:
        """The ``window`` given at construction (the same for every model and options)."""
        return self._window

    def tool_results_in_use(self, model: str) -> str | None:
        """The ``tool_results`` given at construction, once ``model`` was sent a tool result."""
        return self._tool_results if model in self._delivered else None

    def tool_definitions_reach(self, model: str) -> bool:
        """The ``tools_reach`` given at construction (the same for every model)."""
        return self._tools_reach

    def list_models(self) -> list[str]:
        """The ``models`` given at construction."""
        return list(self._models)

    def close(self) -> None:
        """Mark the backend closed (idempotent)."""
        self._closed = True
