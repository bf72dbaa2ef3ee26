"""Model options reach the server in each backend's wire form; the window sets the budget."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from flow_core import ChatMessage, OllamaBackend, Runtime
from flow_core.models import HTTPSettings
from flow_core.models.openai import OpenAIBackend
from flow_testing import model_server as replay


def test_options_for_merges_role_over_backend(flow_config: Any) -> None:
    config = flow_config(
        ollama={"options": {"temperature": 0.2, "seed": 7, "context_tokens": 8192}},
        models={"options": {"coder": {"temperature": 0.0, "max_reply_tokens": 512}}},
    )
    assert config.options_for("coder") == {
        "temperature": 0.0,
        "seed": 7,
        "context_tokens": 8192,
        "max_reply_tokens": 512,
    }
    planner = config.options_for("planner")
    assert planner["temperature"] == 0.2
    assert planner["max_reply_tokens"] == 1024  # finite by default


@pytest.mark.parametrize(
    "bad",
    [
        {"ollama": {"options": {"temperature": "hot"}}},
        {"ollama": {"options": {"num_ctx": 4}}},
        {"models": {"options": {"tester": {"seed": 1}}}},
        {"openai": {"options": {"max_reply_tokens": 0}}},
    ],
)
def test_bad_options_are_refused(flow_config: Any, bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        flow_config(**bad)


def test_ollama_wire_form() -> None:
    seen: list[dict[str, Any]] = []

    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=replay.chat_object("ok", model="m"))

    opts = {
        "context_tokens": 8192,
        "temperature": 0.1,
        "seed": 3,
        "max_reply_tokens": 256,
        "keep_alive": "10m",
    }
    backend = OllamaBackend(
        HTTPSettings("http://127.0.0.1:11434", timeout=5, options=opts),
        stream=False,
        transport=httpx.MockTransport(reply),
    )
    backend.chat("m", [ChatMessage("user", "hi")])
    assert seen[0]["options"] == {
        "num_ctx": 8192,
        "temperature": 0.1,
        "seed": 3,
        "num_predict": 256,
    }
    assert seen[0]["keep_alive"] == "10m"
    assert backend.context_window("m") == 8192


def test_openai_wire_form() -> None:
    seen: list[dict[str, Any]] = []

    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        body = {"choices": [{"message": {"role": "assistant", "content": "ok"}}]}
        return httpx.Response(200, json=body)

    opts = {"temperature": 0.0, "seed": 1, "max_reply_tokens": 300, "cache_prompt": True}
    backend = OpenAIBackend(
        HTTPSettings("http://127.0.0.1:8080/v1", timeout=5, options=opts),
        transport=httpx.MockTransport(reply),
    )
    backend.chat("m", [ChatMessage("user", "hi")])
    body = seen[0]
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 1, 300)
    assert body["cache_prompt"] is True
    assert "num_ctx" not in body
    assert "keep_alive" not in body


def test_llama_server_props_give_the_window() -> None:
    def reply(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/props":
            return httpx.Response(200, json={"default_generation_settings": {"n_ctx": 4096}})
        return httpx.Response(404, json={"error": "nope"})

    backend = OpenAIBackend(
        HTTPSettings("http://127.0.0.1:8080/v1", timeout=5), transport=httpx.MockTransport(reply)
    )
    assert backend.context_window("m") == 4096


def test_role_options_and_the_window_on_a_real_run(flow_config: Any) -> None:
    with replay.FakeModelServer(lambda _req: ("1. Read app.py", []), models=("m",)) as server:
        server.queue_json(
            "POST",
            "/api/show",
            {"parameters": "num_ctx 2048", "capabilities": ["completion", "tools"]},
        )
        config = flow_config(
            ollama={"base_url": server.url, "model": "m", "options": {"seed": 5}},
            models={"options": {"planner": {"temperature": 0.3, "max_reply_tokens": 100}}},
        )
        with Runtime(config, trusted=False) as rt:
            report = rt.run("plan something")
    (request,) = server.requests
    assert request["options"] == {"seed": 5, "temperature": 0.3, "num_predict": 100}
    usage = report.roles["planner"]
    assert usage.context_window == 2048
    assert report.status == "read_only"


def test_a_prompt_beyond_the_window_is_never_sent(flow_config: Any) -> None:
    with replay.FakeModelServer(lambda _req: ("plan", []), models=("m",)) as server:
        server.queue_json("POST", "/api/show", {"parameters": "num_ctx 1100"})
        config = flow_config(
            ollama={"base_url": server.url, "model": "m", "options": {"max_reply_tokens": 1000}}
        )
        with Runtime(config, trusted=False) as rt:
            report = rt.run("plan " + "word " * 400)
    assert server.requests == []
    assert [e.code for e in report.errors] == ["context_budget"]
    assert "window" in report.errors[0].message


def test_a_missing_model_is_named_before_any_model_request(flow_config: Any) -> None:
    with replay.FakeModelServer(lambda _req: ("plan", []), models=("m", "other:7b")) as server:
        config = flow_config(ollama={"base_url": server.url, "model": "nope"})
        with Runtime(config, trusted=False) as rt:
            report = rt.run("plan something")
    assert server.requests == []  # no chat request was made
    assert report.status == "error"
    (error,) = report.errors
    assert error.code == "preflight_model_missing"
    assert "'nope'" in error.message
    assert "installed: m, other:7b" in error.message
    from flow_core import exit_code_for

    assert exit_code_for(report) == 2
