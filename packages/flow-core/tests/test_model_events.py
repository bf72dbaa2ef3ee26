"""Progress events around each model request, through OllamaBackend on a loopback server."""

from __future__ import annotations

from typing import Any

from flow_core import Event, OllamaBackend, Runtime
from flow_core.models import HTTPSettings
from flow_testing import model_server as replay


def test_streamed_fragments_and_the_reply_become_events(flow_config: Any) -> None:
    events: list[Event] = []
    with replay.FakeModelServer() as server:
        server.queue_stream(
            "/api/chat",
            replay.chat_lines(
                ["1. ", "Read ", "app.py"], model="m", prompt_eval_count=31, eval_count=3
            ),
        )
        config = flow_config(ollama={"base_url": server.url, "model": "m"})
        backend = OllamaBackend(HTTPSettings(server.url, timeout=5))
        with Runtime(config, trusted=False, backend=backend, on_event=events.append) as rt:
            report = rt.run("plan something")
    assert report.status == "read_only"
    progress = [e for e in events if e.kind == "model_progress"]
    assert [e.tokens for e in progress] == [1, 2, 3]
    assert progress[-1].chars == len("1. Read app.py")
    assert {e.role for e in progress} == {"planner"}
    (reply,) = [e for e in events if e.kind == "model_reply"]
    assert reply.role == "planner"
    assert reply.turn == 1
    assert reply.prompt_tokens == 31
    assert reply.completion_tokens == 3
    assert reply.finish_reason == "stop"
    assert reply.duration_ms >= 0
    kinds = [e.kind for e in events]
    assert kinds.index("turn") < kinds.index("model_progress") < kinds.index("model_reply")


def test_a_backend_used_alone_streams_without_a_meter() -> None:
    with replay.FakeModelServer() as server:
        server.queue_stream("/api/chat", replay.chat_lines(["a", "b"], model="m"))
        with OllamaBackend(HTTPSettings(server.url, timeout=5)) as backend:
            from flow_core import ChatMessage

            reply = backend.chat("m", [ChatMessage("user", "hi")])
    assert reply.content == "ab"


def test_tool_call_events_carry_capped_arguments_and_the_error(flow_config: Any) -> None:
    from flow_core import ChatResponse, ScriptedBackend, ToolCall

    long_path = "../" + "x" * 500
    backend = ScriptedBackend(
        [
            ChatResponse("plan"),
            ChatResponse("", tool_calls=(ToolCall("c1", "read_file", {"path": long_path}),)),
            ChatResponse("done"),
        ]
    )
    events: list[Event] = []
    config = flow_config(checks={"t": {"cmd": ["true"], "kind": "test"}})
    with Runtime(config, trusted=True, backend=backend, on_event=events.append) as rt:
        rt.run("read it")
    (call,) = [e for e in events if e.kind == "tool_call"]
    assert call.ok is False
    assert call.error == "path_outside"
    assert call.arguments["path"].endswith(f"… [{len(long_path)} chars]")
    assert len(call.arguments["path"]) < 260
    assert "refused" in call.message
