"""ScriptedBackend: deterministic replies, recorded requests, exhaustion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from flow_core import (
    BackendError,
    ChatBackend,
    ChatMessage,
    ChatResponse,
    ScriptedBackend,
    ScriptedRequest,
    ToolCall,
)

MSG = [ChatMessage("user", "hello")]
TOOLS = [{"type": "function", "function": {"name": "read_file"}}]


def test_is_a_chat_backend() -> None:
    assert isinstance(ScriptedBackend([]), ChatBackend)


def test_replies_in_order_and_records_requests() -> None:
    b = ScriptedBackend([ChatResponse("one"), ChatResponse("two", model="other")])
    assert b.chat("m1", MSG, tools=TOOLS).content == "one"
    second = b.chat("m2", MSG, format={"type": "object"})
    assert (second.content, second.model) == ("two", "other")
    assert b.requests == [
        ScriptedRequest("m1", tuple(MSG), tuple(TOOLS), None),
        ScriptedRequest("m2", tuple(MSG), (), {"type": "object"}),
    ]
    model, messages, tools, fmt = b.requests[0]
    assert (model, messages, tools, fmt) == ("m1", tuple(MSG), tuple(TOOLS), None)


def test_reply_without_model_gets_the_requested_one() -> None:
    b = ScriptedBackend([ChatResponse("x")])
    assert b.chat("coder-model", MSG).model == "coder-model"


def test_callable_step_sees_messages_and_tools() -> None:
    seen: list[tuple[list[ChatMessage], Sequence[Mapping[str, Any]]]] = []

    def step(messages: list[ChatMessage], tools: Sequence[Mapping[str, Any]]) -> ChatResponse:
        seen.append((messages, tools))
        return ChatResponse(
            "", tool_calls=(ToolCall("t1", "read_file", {"path": messages[-1].content}),)
        )

    b = ScriptedBackend([step])
    reply = b.chat("m", [ChatMessage("user", "a.py")], tools=TOOLS)
    assert reply.tool_calls[0].arguments == {"path": "a.py"}
    assert seen == [([ChatMessage("user", "a.py")], tuple(TOOLS))]


def test_callable_may_raise_a_backend_error() -> None:
    def fail(messages: list[ChatMessage], tools: Sequence[Mapping[str, Any]]) -> ChatResponse:
        raise BackendError("boom", code="backend_timeout")

    b = ScriptedBackend([fail, ChatResponse("after")])
    with pytest.raises(BackendError) as err:
        b.chat("m", MSG)
    assert err.value.code == "backend_timeout"
    assert b.chat("m", MSG).content == "after"


def test_generator_script() -> None:
    b = ScriptedBackend(ChatResponse(str(i)) for i in range(3))
    assert [b.chat("m", MSG).content for _ in range(3)] == ["0", "1", "2"]


def test_exhausted_script() -> None:
    b = ScriptedBackend([ChatResponse("only")])
    b.chat("m", MSG)
    with pytest.raises(BackendError) as err:
        b.chat("m", MSG)
    assert err.value.code == "script_exhausted"
    assert len(b.requests) == 2  # the failing request is recorded too


def test_list_models_and_close() -> None:
    b = ScriptedBackend([ChatResponse("x")], models=("a", "b"))
    assert b.list_models() == ["a", "b"]
    b.close()
    b.close()
    assert b.closed
    with pytest.raises(BackendError) as err:
        b.chat("m", MSG)
    assert err.value.code == "backend_closed"


def test_callable_returning_wrong_type_is_a_bug() -> None:
    b = ScriptedBackend([lambda m, t: "not a response"])  # type: ignore[list-item,arg-type,return-value]
    with pytest.raises(TypeError, match="ChatResponse"):
        b.chat("m", MSG)
