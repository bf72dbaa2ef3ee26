"""Tool results reach the model: native tool role, delimited user message, auto probe.

The fake servers below count prompt tokens the way a chat template would render them: one
renders ``tool`` messages (native support), one drops them (llama-cpp-python's plain
``chatml``), one renders them as an empty line (its ``chatml-function-calling``). The count is
what ``tool_results = "auto"`` reads, as it reads ``usage.prompt_tokens`` from a real server.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from flow_core import ChatMessage, ToolCall
from flow_core.models import HTTPSettings
from flow_core.models._delivery import as_user_message, choose, deliver
from flow_core.models.openai import OpenAIBackend

BASE = "http://127.0.0.1:8080/v1"


class TemplateServer:
    """An OpenAI-compatible server whose template renders or drops the tool role."""

    def __init__(self, *, renders_tool: bool) -> None:
        self.renders_tool = renders_tool
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        tokens = 0
        for message in body["messages"]:
            if message["role"] == "tool" and not self.renders_tool:
                tokens += 1  # the empty line
                continue
            tokens += 3 + len(str(message.get("content") or "").split())
        reply = {
            "choices": [
                {"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 1},
        }
        return httpx.Response(200, json=reply)


def history(result: str) -> list[ChatMessage]:
    call = ToolCall("call_1", "read_file", {"path": "a.py"})
    return [
        ChatMessage("system", "you are the coder"),
        ChatMessage("user", "fix a.py"),
        ChatMessage("assistant", "", tool_calls=(call,)),
        ChatMessage("tool", result, tool_call_id="call_1", name="read_file"),
    ]


def backend(server: TemplateServer, mode: str) -> OpenAIBackend:
    return OpenAIBackend(
        HTTPSettings(BASE, timeout=5, tool_results=mode), transport=httpx.MockTransport(server)
    )


RESULT = " ".join(f"word{i}" for i in range(500))


@pytest.mark.parametrize("renders_tool", [True, False])
def test_auto_delivers_every_result(renders_tool: bool) -> None:
    server = TemplateServer(renders_tool=renders_tool)
    be = backend(server, "auto")
    short = be.chat("m", history("x"))
    long = be.chat("m", history(RESULT))
    assert be.delivery == {"m": "native" if renders_tool else "user"}
    # The server's own count grew by the result's size: the model saw it.
    assert long.prompt_tokens is not None
    assert short.prompt_tokens is not None
    assert long.prompt_tokens - short.prompt_tokens >= 499
    # Probed once (two one-token requests), then never again for this model.
    probes = [b for b in server.bodies if b.get("max_tokens") == 1]
    assert len(probes) == 2
    assert len(server.bodies) == 4


def test_native_on_a_template_that_drops_tool_messages_loses_the_result() -> None:
    # Negative control: the bug the auto mode exists for.
    server = TemplateServer(renders_tool=False)
    be = backend(server, "native")
    short = be.chat("m", history("x"))
    long = be.chat("m", history(RESULT))
    assert long.prompt_tokens == short.prompt_tokens
    assert all(b.get("max_tokens") != 1 for b in server.bodies)  # no probe


def test_user_mode_sends_a_delimited_user_message() -> None:
    server = TemplateServer(renders_tool=False)
    be = backend(server, "user")
    be.chat("m", history("def f(): pass"))
    sent = server.bodies[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    text = sent[-1]["content"]
    assert text.startswith("[tool result call_1 (read_file)")
    assert "\ndef f(): pass\n" in text
    assert text.endswith("[end of tool result call_1]")
    assert "tool_call_id" not in sent[-1]


def test_deliver_keeps_every_other_message_unchanged() -> None:
    msgs = history("data")
    assert deliver(msgs, "native") == msgs
    out = deliver(msgs, "user")
    assert out[:3] == msgs[:3]
    assert out[3] == as_user_message(msgs[3])


def test_choose() -> None:
    assert choose(200, 100) == "native"
    assert choose(101, 100) == "user"
    assert choose(None, 100) == "native"


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="tool_results"):
        OpenAIBackend(HTTPSettings(BASE, timeout=5, tool_results="text"))
