"""OpenAIBackend against httpx.MockTransport: wire shapes, every error code, server quirks.

The reply shapes below are the ones ``python -m llama_cpp.server`` 0.3.36 sends with
``--chat_format chatml-function-calling`` (recorded by hand in this repository's e2e work).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from flow_core import BackendError, ChatMessage, ToolCall
from flow_core.models import HTTPSettings
from flow_core.models._http import BACKEND_ERROR_CODES
from flow_core.models.openai import OpenAIBackend
from flow_testing.model_server import FakeModelServer

BASE = "http://127.0.0.1:8080/v1"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]

Handler = Callable[[httpx.Request], httpx.Response]


def completion(
    message: dict[str, Any], finish: str | None = "stop", **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "smollm2",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {"prompt_tokens": 22, "completion_tokens": 5, "total_tokens": 27},
    }
    body.update(extra)
    return body


class Recorder:
    """A MockTransport handler that records requests and replies from a function."""

    def __init__(self, reply: Handler) -> None:
        self.reply = reply
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.reply(request)

    def body(self, i: int = -1) -> Any:
        return json.loads(self.requests[i].content)


def backend_for(reply: Handler, **kw: Any) -> tuple[OpenAIBackend, Recorder]:
    rec = Recorder(reply)
    settings = HTTPSettings(BASE, **{"timeout": 5.0, **kw})
    return OpenAIBackend(settings, transport=httpx.MockTransport(rec)), rec


def ok_json(data: Any, status: int = 200) -> Handler:
    return lambda _req: httpx.Response(status, json=data)


# -- wire shapes -------------------------------------------------------------------------


def test_plain_chat_request_and_reply() -> None:
    be, rec = backend_for(ok_json(completion({"role": "assistant", "content": "hello"})))
    resp = be.chat("smollm2", [ChatMessage("system", "be brief"), ChatMessage("user", "hi")])
    req = rec.requests[0]
    assert req.method == "POST"
    assert str(req.url) == "http://127.0.0.1:8080/v1/chat/completions"
    assert rec.body() == {
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
        ],
        "model": "smollm2",
        "stream": False,
    }
    assert resp.content == "hello"
    assert resp.tool_calls == ()
    assert resp.finish_reason == "stop"
    assert resp.model == "smollm2"
    assert resp.prompt_tokens == 22
    assert resp.completion_tokens == 5
    assert resp.duration_ms >= 0


def test_no_credentials_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-never-be-sent")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://example.com/v1")
    be, rec = backend_for(ok_json(completion({"role": "assistant", "content": "x"})))
    be.chat("m", [ChatMessage("user", "hi")])
    for req in rec.requests:
        assert req.url.host == "127.0.0.1"
        assert "authorization" not in req.headers
        assert "sk-should-never-be-sent" not in json.dumps(dict(req.headers))


@pytest.fixture
def two_servers() -> Any:
    """Two real loopback servers: ("proxy", "target"); only the target lists a model."""
    with FakeModelServer() as proxy, FakeModelServer() as target:
        target.queue_json("GET", "/v1/models", {"data": [{"id": "m"}]})
        yield proxy, target


def test_environment_proxies_are_ignored(two_servers: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # A client that trusted the environment would send this request to the "proxy" (httpx
    # proxies loopback too); Flow's must go straight to the target.
    proxy, target = two_servers
    for var in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(var, proxy.url)
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    be = OpenAIBackend(HTTPSettings(f"{target.url}/v1", timeout=5))
    try:
        assert be.list_models() == ["m"]
    finally:
        be.close()
    assert target.paths() == ["/v1/models"]
    assert proxy.paths() == []


def test_empty_model_name_is_not_sent() -> None:
    be, rec = backend_for(ok_json(completion({"role": "assistant", "content": "x"})))
    resp = be.chat("", [ChatMessage("user", "hi")])
    assert "model" not in rec.body()
    assert resp.model == "smollm2"  # the server's name


def test_tools_are_offered_with_tool_choice_auto() -> None:
    be, rec = backend_for(ok_json(completion({"role": "assistant", "content": "x"})))
    be.chat("m", [ChatMessage("user", "read it")], tools=TOOLS)
    body = rec.body()
    assert body["tools"] == TOOLS
    # "required" gives HTTP 500 on llama.cpp; without a tool_choice it hides the tools.
    assert body["tool_choice"] == "auto"


def test_no_tools_sends_no_tool_fields() -> None:
    be, rec = backend_for(ok_json(completion({"role": "assistant", "content": "x"})))
    be.chat("m", [ChatMessage("user", "hi")])
    assert "tools" not in rec.body()
    assert "tool_choice" not in rec.body()


def test_structured_output_uses_json_object_with_schema() -> None:
    schema = {"type": "object", "properties": {"approved": {"type": "boolean"}}}
    be, rec = backend_for(
        ok_json(completion({"role": "assistant", "content": '{"approved": true}'}))
    )
    resp = be.chat("m", [ChatMessage("user", "review")], format=schema)
    assert rec.body()["response_format"] == {"type": "json_object", "schema": schema}
    assert resp.content == '{"approved": true}'


def test_tool_call_reply_keeps_string_arguments() -> None:
    message = {
        "content": None,
        "tool_calls": [
            {
                "id": "call__0_read_file_cmpl-1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "calc.py"}'},
            }
        ],
        "role": "assistant",
        "function_call": {"name": "read_file:", "arguments": '{"path": "calc.py"}'},
    }
    be, _ = backend_for(ok_json(completion(message, "tool_calls")))
    resp = be.chat("m", [ChatMessage("user", "read")], tools=TOOLS)
    assert resp.content == ""
    assert resp.finish_reason == "tool_calls"
    # Only tool_calls is read (llama.cpp also sends a legacy function_call with a bad name).
    assert resp.tool_calls == (
        ToolCall(id="call__0_read_file_cmpl-1", name="read_file", arguments={"path": "calc.py"}),
    )


def test_tool_call_object_arguments_stay_a_dict_and_missing_ids_are_made_up() -> None:
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": "a", "arguments": {"x": 1}}},
            {"type": "function", "function": {"name": "b"}},
        ],
    }
    be, _ = backend_for(ok_json(completion(message, "tool_calls")))
    calls = be.chat("m", [ChatMessage("user", "go")], tools=TOOLS).tool_calls
    assert [c.name for c in calls] == ["a", "b"]
    assert calls[0].arguments == {"x": 1}
    assert calls[1].arguments == ""
    assert all(c.id for c in calls)
    assert calls[0].id != calls[1].id


def test_legacy_function_call_only() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "read_file", "arguments": '{"path": "a"}'},
    }
    be, _ = backend_for(ok_json(completion(message, "function_call")))
    resp = be.chat("m", [ChatMessage("user", "go")], tools=TOOLS)
    assert resp.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in resp.tool_calls] == [("read_file", {"path": "a"})]


@pytest.mark.parametrize("raw", ['{"path": "x"', "[1, 2]", '"text"', "[" * 100_000])
def test_arguments_that_are_not_a_json_object_stay_a_string(raw: str) -> None:
    """OpenAI's format encodes arguments as a JSON string: an object is decoded (protocol),
    anything else is handed on unchanged for parse_reply to classify as invalid_arguments."""
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c9", "type": "function", "function": {"name": "read_file", "arguments": raw}}
        ],
    }
    be, _ = backend_for(ok_json(completion(message, "tool_calls")))
    resp = be.chat("m", [ChatMessage("user", "go")], tools=TOOLS)
    assert [(c.id, c.arguments) for c in resp.tool_calls] == [("c9", raw)]


def test_tool_call_text_in_content_is_passed_through_unjudged() -> None:
    text = 'functions.read_file:\n{"path": "calc.py"}'
    be, _ = backend_for(ok_json(completion({"role": "assistant", "content": text})))
    resp = be.chat("m", [ChatMessage("user", "go")], tools=TOOLS)
    assert resp.content == text
    assert resp.tool_calls == ()


def test_history_with_tool_calls_and_results() -> None:
    be, rec = backend_for(
        ok_json(completion({"role": "assistant", "content": "done"})), tool_results="native"
    )
    history = [
        ChatMessage("user", "read calc.py"),
        ChatMessage(
            "assistant",
            "",
            tool_calls=(
                ToolCall("c1", "read_file", {"path": "calc.py"}),
                ToolCall("c2", "read_file", '{"path": "x"'),
            ),
        ),
        ChatMessage("tool", "def add(a, b): ...", tool_call_id="c1", name="read_file"),
        ChatMessage("assistant", "plain answer"),
    ]
    be.chat("m", history, tools=TOOLS)
    sent = rec.body()["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": "",  # null or absent gives HTTP 500 on llama.cpp
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "calc.py"}'},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "x"'},
            },
        ],
    }
    assert sent[2] == {"role": "tool", "content": "def add(a, b): ...", "tool_call_id": "c1"}
    assert sent[3] == {"role": "assistant", "content": "plain answer"}


@pytest.mark.parametrize(
    ("wire", "mapped"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("tool_calls", "tool_calls"),
        ("function_call", "tool_calls"),
        ("content_filter", None),
        (None, None),
        (7, None),
    ],
)
def test_finish_reason_mapping(wire: Any, mapped: str | None) -> None:
    be, _ = backend_for(ok_json(completion({"role": "assistant", "content": "x"}, wire)))
    assert be.chat("m", [ChatMessage("user", "hi")]).finish_reason == mapped


def test_bad_usage_fields_are_dropped() -> None:
    data = completion({"role": "assistant", "content": "x"})
    data["usage"] = {"prompt_tokens": "many", "completion_tokens": True}
    be, _ = backend_for(ok_json(data))
    resp = be.chat("m", [ChatMessage("user", "hi")])
    assert resp.prompt_tokens is None
    assert resp.completion_tokens is None


def test_list_models() -> None:
    data = {"object": "list", "data": [{"id": "/models/smol.gguf", "object": "model"}]}
    be, rec = backend_for(ok_json(data))
    assert be.list_models() == ["/models/smol.gguf"]
    assert rec.requests[0].method == "GET"
    assert str(rec.requests[0].url) == "http://127.0.0.1:8080/v1/models"


def test_base_url_trailing_slash_is_tolerated() -> None:
    rec = Recorder(ok_json({"data": []}))
    be = OpenAIBackend(HTTPSettings(BASE + "/", timeout=1), transport=httpx.MockTransport(rec))
    assert be.list_models() == []
    assert str(rec.requests[0].url) == "http://127.0.0.1:8080/v1/models"


# -- errors ------------------------------------------------------------------------------


def code_of(fn: Callable[[], object]) -> str:
    with pytest.raises(BackendError) as info:
        fn()
    assert info.value.code in BACKEND_ERROR_CODES
    return info.value.code


@pytest.mark.parametrize(
    "url", ["http://example.com/v1", "http://10.0.0.5:8080/v1", "http://[2001:db8::1]/v1"]
)
def test_remote_refused_unless_allowed(url: str) -> None:
    assert code_of(lambda: OpenAIBackend(HTTPSettings(url, timeout=1))) == "remote_refused"
    rec = Recorder(ok_json({"data": [{"id": "m"}]}))
    be = OpenAIBackend(
        HTTPSettings(url, timeout=1, allow_remote=True), transport=httpx.MockTransport(rec)
    )
    assert be.list_models() == ["m"]


@pytest.mark.parametrize(
    "url", ["ftp://127.0.0.1/v1", "http://user:pw@127.0.0.1/v1", "http://127.0.0.1/v1?x=1"]
)
def test_unusable_urls(url: str) -> None:
    assert code_of(lambda: OpenAIBackend(HTTPSettings(url, timeout=1))) == "backend_malformed"


def test_loopback_names_accepted() -> None:
    for url in ("http://localhost:1/v1", "http://127.0.0.2:1/v1", "http://[::1]:1/v1"):
        OpenAIBackend(HTTPSettings(url, timeout=1)).close()


def test_redirect_refused_and_not_followed() -> None:
    def reply(req: httpx.Request) -> httpx.Response:
        if req.url.host == "127.0.0.1":
            return httpx.Response(307, headers={"location": "http://evil.example/v1/models"})
        return httpx.Response(200, json={"data": [{"id": "evil"}]})

    be, rec = backend_for(reply)
    assert code_of(be.list_models) == "redirect_refused"
    assert code_of(lambda: be.chat("m", [ChatMessage("user", "x")])) == "redirect_refused"
    assert all(r.url.host == "127.0.0.1" for r in rec.requests)


def test_unreachable() -> None:
    def reply(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=req)

    be, _ = backend_for(reply)
    assert code_of(be.list_models) == "backend_unreachable"


def test_unreachable_for_real_on_a_closed_port() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # The port is free now (nothing listens on it): a real connection is refused.
    be = OpenAIBackend(HTTPSettings(f"http://127.0.0.1:{port}/v1", timeout=2))
    assert code_of(lambda: be.chat("m", [ChatMessage("user", "x")])) == "backend_unreachable"


def test_timeout() -> None:
    def reply(req: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=req)

    be, _ = backend_for(reply, timeout=3)
    with pytest.raises(BackendError) as err:
        be.chat("m", [ChatMessage("user", "x")])
    assert err.value.code == "backend_timeout"
    msg = str(err.value)
    assert "within 3 s (openai.timeout)" in msg
    assert "fix: raise openai.timeout (seconds)" in msg
    assert "ReadTimeout" not in msg


def test_http_error_names_status_and_server_message() -> None:
    be, _ = backend_for(
        ok_json({"error": {"message": "boom", "type": "internal_server_error"}}, 500)
    )
    with pytest.raises(BackendError) as info:
        be.chat("m", [ChatMessage("user", "x")])
    assert info.value.code == "backend_http"
    assert "500" in info.value.message
    assert "boom" in info.value.message


def test_model_not_found_openai_style() -> None:
    body = {
        "error": {
            "message": "The model `nope` does not exist.",
            "type": "invalid_request_error",
            "code": "model_not_found",
        }
    }
    be, _ = backend_for(ok_json(body, 404))
    assert code_of(lambda: be.chat("nope", [ChatMessage("user", "x")])) == "model_not_found"


def test_model_not_found_vllm_style_404() -> None:
    body = {"object": "error", "message": "The model `nope` does not exist.", "code": 404}
    be, _ = backend_for(ok_json(body, 404))
    assert code_of(lambda: be.chat("nope", [ChatMessage("user", "x")])) == "model_not_found"


def test_plain_404_is_http_error() -> None:
    be, _ = backend_for(ok_json({"detail": "Not Found"}, 404))
    assert code_of(lambda: be.chat("m", [ChatMessage("user", "x")])) == "backend_http"


def test_context_overflow_is_prompt_too_long() -> None:
    body = {
        "error": {
            "message": "This model's maximum context length is 4096 tokens. However, you "
            "requested 5015 tokens (5010 in the messages, 5 in the completion).",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    be, rec = backend_for(ok_json(body, 400))
    assert code_of(lambda: be.chat("m", [ChatMessage("user", "word " * 5000)])) == (
        "prompt_too_long"
    )
    assert len(rec.requests) == 1  # never resent


def test_llama_server_context_size_message_is_prompt_too_long() -> None:
    body = {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
        }
    }
    be, _ = backend_for(ok_json(body, 400))
    assert code_of(lambda: be.chat("m", [ChatMessage("user", "x")])) == "prompt_too_long"


def test_other_400_is_http_error() -> None:
    be, _ = backend_for(ok_json({"error": {"message": "bad", "code": "invalid"}}, 400))
    assert code_of(lambda: be.chat("m", [ChatMessage("user", "x")])) == "backend_http"


def test_error_object_with_status_200() -> None:
    be, _ = backend_for(ok_json({"error": {"message": "overloaded"}}))
    assert code_of(lambda: be.chat("m", [ChatMessage("user", "x")])) == "backend_http"


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",
        b"[1, 2]",
        b"{}",
        b'{"choices": []}',
        b'{"choices": ["x"]}',
        b'{"choices": [{"finish_reason": "stop"}]}',
        b'{"choices": [{"message": {"content": 5}}]}',
        b'{"choices": [{"message": {"content": "", "tool_calls": {"a": 1}}}]}',
        b'{"choices": [{"message": {"content": "", "tool_calls": ["x"]}}]}',
        b'{"choices": [{"message": {"content": "", "tool_calls": [{"function": "f"}]}}]}',
        b'{"choices": [{"message": {"content": "", "tool_calls": [{"function": {}}]}}]}',
        b'{"choices": [{"message": {"tool_calls": [{"function": {"name": "a", '
        b'"arguments": 3}}]}}]}',
    ],
)
def test_malformed_completions(payload: bytes) -> None:
    be, _ = backend_for(lambda _r: httpx.Response(200, content=payload))
    assert code_of(lambda: be.chat("m", [ChatMessage("user", "x")])) == "backend_malformed"


@pytest.mark.parametrize(
    "payload", [b"nope", b"[]", b"{}", b'{"data": {}}', b'{"data": [{"id": 3}]}', b'{"data": [1]}']
)
def test_malformed_model_lists(payload: bytes) -> None:
    be, _ = backend_for(lambda _r: httpx.Response(200, content=payload))
    assert code_of(be.list_models) == "backend_malformed"


def test_response_too_large() -> None:
    big = completion({"role": "assistant", "content": "x" * 5000})
    be, _ = backend_for(ok_json(big), max_response_bytes=1000)
    assert code_of(lambda: be.chat("m", [ChatMessage("user", "x")])) == "response_too_large"


def test_response_too_large_while_streaming_chunks() -> None:
    sent: list[int] = []

    def chunks() -> Any:
        for _ in range(100):
            sent.append(1)
            yield b"x" * 100

    be, _ = backend_for(lambda _r: httpx.Response(200, content=chunks()), max_response_bytes=1000)
    assert code_of(be.list_models) == "response_too_large"
    assert len(sent) < 100  # stopped reading once over the cap


def test_response_just_under_the_cap_is_read() -> None:
    raw = json.dumps(completion({"role": "assistant", "content": "y" * 500})).encode()
    be, _ = backend_for(lambda _r: httpx.Response(200, content=raw), max_response_bytes=len(raw))
    assert be.chat("m", [ChatMessage("user", "x")]).content == "y" * 500


def test_closed_backend() -> None:
    be, rec = backend_for(ok_json({"data": []}))
    be.close()
    be.close()  # idempotent
    assert code_of(be.list_models) == "backend_closed"
    assert code_of(lambda: be.chat("m", [ChatMessage("user", "x")])) == "backend_closed"
    assert rec.requests == []


def test_bad_constructor_arguments() -> None:
    with pytest.raises(ValueError, match="max_response_bytes"):
        OpenAIBackend(HTTPSettings(BASE, timeout=1, max_response_bytes=0))
    with pytest.raises(ValueError, match="timeout"):
        OpenAIBackend(HTTPSettings(BASE, timeout=0))


def test_is_a_chat_backend() -> None:
    from flow_core import ChatBackend

    be = OpenAIBackend(HTTPSettings(BASE, timeout=1))
    assert isinstance(be, ChatBackend)
    be.close()


def test_404_from_a_base_url_without_v1_hints_at_it() -> None:
    """A real loopback server that serves nothing at /chat/completions (only /v1 would)."""
    with FakeModelServer() as server:
        be = OpenAIBackend(HTTPSettings(server.url, timeout=5))
        with pytest.raises(BackendError) as chat:
            be.chat("m", [ChatMessage("user", "x")])
        with pytest.raises(BackendError) as models:
            be.list_models()
        be.close()
    for err in (chat.value, models.value):
        assert err.code == "backend_http"
        assert "HTTP 404" in err.message
        assert f'did you mean base_url = "{server.url}/v1"?' in err.message


def test_404_under_v1_gets_no_v1_hint() -> None:
    with FakeModelServer() as server:
        be = OpenAIBackend(HTTPSettings(server.url + "/v1", timeout=5))
        with pytest.raises(BackendError) as chat:
            be.chat("m", [ChatMessage("user", "x")])
        be.close()
    assert "did you mean" not in chat.value.message
