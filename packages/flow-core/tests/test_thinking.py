"""Thinking models: the reasoning comes apart from the answer, is kept and counted, never run,
and a reply of reasoning alone is ``reasoning_only``, not ``empty_reply``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flow_core import (
    ChatMessage,
    ChatResponse,
    FlowConfig,
    OllamaBackend,
    Runtime,
    ScriptedBackend,
    parse_reply,
)
from flow_core.models import HTTPSettings
from flow_core.models.openai import OpenAIBackend
from flow_testing import model_server as replay

USER = [ChatMessage(role="user", content="Fix the bug in a.py")]
TOOLS = frozenset({"read_file"})
THOUGHT = 'Let me think. <tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}'


@pytest.fixture
def server() -> Iterator[replay.FakeModelServer]:
    with replay.FakeModelServer() as srv:
        yield srv


def _line(content: str, thinking: str, done: bool) -> dict[str, object]:
    line: dict[str, object] = {
        "model": "qwen3",
        "message": {"role": "assistant", "content": content, "thinking": thinking},
        "done": done,
    }
    if done:
        line.update(done_reason="stop", prompt_eval_count=12, eval_count=40)
    return line


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "single"])
def test_ollama_thinking_is_reasoning_not_an_empty_reply(
    server: replay.FakeModelServer, streaming: bool
) -> None:
    if streaming:
        half = len(THOUGHT) // 2
        lines = [_line("", THOUGHT[:half], False), _line("", THOUGHT[half:], False)]
        server.queue_stream("/api/chat", [*lines, _line("", "", True)])
    else:
        server.queue_json("POST", "/api/chat", _line("", THOUGHT, True))
    options = {"think": True}
    with OllamaBackend(HTTPSettings(server.url, timeout=5, options=options), stream=streaming) as b:
        reply = b.chat("qwen3", USER)
    assert reply.reasoning == THOUGHT
    assert reply.content == ""
    assert server.received[0].body["think"] is True
    parsed = parse_reply(reply, TOOLS, max_chars=10_000)
    assert parsed.codes == ("reasoning_only",)
    assert parsed.tool_calls == ()  # a call written in the reasoning is never run


def test_openai_reasoning_content_and_the_think_switch(server: replay.FakeModelServer) -> None:
    completion = {
        "choices": [
            {
                "message": {"role": "assistant", "content": "", "reasoning_content": THOUGHT},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 9},
    }
    server.queue_json("POST", "/v1/chat/completions", completion)
    backend = OpenAIBackend(HTTPSettings(server.url + "/v1", timeout=5, options={"think": False}))
    try:
        reply = backend.chat("m", USER)
    finally:
        backend.close()
    assert reply.reasoning == THOUGHT
    body = next(r.body for r in server.received if r.path == "/v1/chat/completions")
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert parse_reply(reply, TOOLS, max_chars=10_000).codes == ("reasoning_only",)


def test_an_inline_think_block_alone_is_reasoning_only() -> None:
    reply = ChatResponse("<think>The fix is in a.py</think>")
    assert parse_reply(reply, TOOLS, max_chars=10_000).codes == ("reasoning_only",)
    assert parse_reply(ChatResponse("  "), TOOLS, max_chars=10_000).codes == ("empty_reply",)


def test_a_run_keeps_and_counts_the_reasoning(
    flow_config: Callable[..., FlowConfig], tmp_path: Path
) -> None:
    from flow_core.store import RunStore

    thinking = ChatResponse("", reasoning="I should read a.py first.")
    plan = ChatResponse("Plan: fix a.py.", reasoning="Now I know.")
    config = flow_config({}, models={"options": {"planner": {"think": True}}})
    store = RunStore(tmp_path / "runs")
    report = Runtime(config, backend=ScriptedBackend([thinking, plan]), store=store).run("t")
    assert report.plan == "Plan: fix a.py."
    assert [e.code for e in report.errors if e.role == "planner"] == ["reasoning_only"]
    usage = report.roles["planner"]
    assert usage.reasoning_chars == len(thinking.reasoning) + len(plan.reasoning)
    assert report.run_id is not None
    record = store.open(store.get(report.run_id))
    replies = [x for x in record.transcript_lines() if x["type"] == "model_reply"]
    assert [x["reasoning"] for x in replies] == [thinking.reasoning, plan.reasoning]
    assert json.dumps(report.to_dict())  # the report stays JSON
