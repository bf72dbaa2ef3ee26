"""OllamaBackend against httpx.MockTransport: request shape, reply parsing, error codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from flow_core import (
    BACKEND_ERROR_CODES,
    BackendError,
    ChatBackend,
    ChatMessage,
    OllamaBackend,
    ToolCall,
)
from flow_core.models import HTTPSettings

URL = "http://127.0.0.1:11434"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def final(**extra: Any) -> dict[str, Any]:
    line = {
        "model": "m",
        "created_at": "2025-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 7,
        "eval_count": 3,
    }
    line.update(extra)
    return line


def part(text: str, **message: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "created_at": "2025-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": text, **message},
        "done": False,
    }


def ndjson(*objs: Any) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


def backend(
    handler: Callable[[httpx.Request], httpx.Response], *, stream: bool = True, **kw: Any
) -> tuple[OllamaBackend, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    settings = HTTPSettings(URL, **{"timeout": 5, **kw})
    return OllamaBackend(settings, transport=httpx.MockTransport(record), stream=stream), seen


def test_is_a_chat_backend() -> None:
    b, _ = backend(lambda r: httpx.Response(200))
    assert isinstance(b, ChatBackend)


def test_request_body_follows_ollama_chat_format() -> None:
    b, seen = backend(lambda r: httpx.Response(200, content=ndjson(part("hi"), final())))
    schema = {"type": "object", "properties": {"approved": {"type": "boolean"}}}
    messages = [
        ChatMessage("system", "be brief"),
        ChatMessage("user", "read a.py"),
        ChatMessage(
            "assistant",
            "",
            tool_calls=(
                ToolCall("c1", "read_file", {"path": "a.py"}),
                ToolCall("c2", "read_file", '{"path": "b.py"}'),
            ),
        ),
        ChatMessage("tool", "print(1)", tool_call_id="c1", name="read_file"),
    ]
    b.chat("qwen2.5-coder:7b", messages, tools=TOOLS, format=schema)
    (request,) = [r for r in seen if r.url.path == "/api/chat"]
    assert request.method == "POST"
    assert request.url.path == "/api/chat"
    body = json.loads(request.content)
    assert body["model"] == "qwen2.5-coder:7b"
    assert body["stream"] is True
    assert body["tools"] == TOOLS
    assert body["format"] == schema
    assert "options" not in body
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert body["messages"][2]["tool_calls"] == [
        {"function": {"name": "read_file", "arguments": {"path": "a.py"}}},
        {"function": {"name": "read_file", "arguments": {"path": "b.py"}}},
    ]
    assert body["messages"][3] == {"role": "tool", "content": "print(1)", "tool_name": "read_file"}


def test_no_tools_and_no_format_are_left_out() -> None:
    b, seen = backend(lambda r: httpx.Response(200, content=ndjson(final())))
    b.chat("m", [ChatMessage("user", "hi")])
    body = json.loads(seen[0].content)
    assert "tools" not in body
    assert "format" not in body


def test_streamed_reply_is_joined_with_tool_calls_and_counts() -> None:
    call = {"function": {"name": "read_file", "arguments": {"path": "a.py"}}}
    stream = ndjson(
        part("Hel"),
        part("lo"),
        part("", tool_calls=[call]),
        final(done_reason="stop", model="qwen"),
    )
    b, _ = backend(lambda r: httpx.Response(200, content=stream))
    reply = b.chat("m", [ChatMessage("user", "x")], tools=TOOLS)
    assert reply.content == "Hello"
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("read_file", {"path": "a.py"})]
    assert reply.tool_calls[0].id
    assert reply.finish_reason == "stop"
    assert reply.prompt_tokens == 7
    assert reply.completion_tokens == 3
    assert reply.model == "qwen"
    assert reply.duration_ms >= 0


def test_tool_call_ids_are_kept_or_made_unique() -> None:
    calls = [
        {"id": "call_abc", "function": {"index": 0, "name": "a", "arguments": {}}},
        {"function": {"name": "b", "arguments": {}}},
        {"function": {"name": "c", "arguments": None}},
    ]
    b, _ = backend(
        lambda r: httpx.Response(200, content=ndjson(part("", tool_calls=calls), final()))
    )
    ids = [c.id for c in b.chat("m", []).tool_calls]
    assert ids[0] == "call_abc"
    assert len(set(ids)) == 3
    again = [c.id for c in b.chat("m", []).tool_calls]
    assert set(again[1:]).isdisjoint(ids[1:])


def test_arguments_given_as_a_string_are_passed_on_for_classification() -> None:
    calls = [{"function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]
    b, _ = backend(
        lambda r: httpx.Response(200, content=ndjson(part("", tool_calls=calls), final()))
    )
    (call,) = b.chat("m", []).tool_calls
    assert call.arguments == '{"path": "a.py"}'


def test_non_streaming_reply() -> None:
    obj = final(message={"role": "assistant", "content": "all done"}, done_reason="length")
    b, seen = backend(lambda r: httpx.Response(200, json=obj), stream=False)
    reply = b.chat("m", [ChatMessage("user", "x")])
    assert json.loads(seen[0].content)["stream"] is False
    assert reply.content == "all done"
    assert reply.finish_reason == "length"


def test_client_settings_refuse_proxies_and_redirects() -> None:
    b, seen = backend(lambda r: httpx.Response(200, content=ndjson(final())))
    b.chat("m", [])
    assert seen[0].headers["accept-encoding"] == "identity"
    assert seen[0].url.host == "127.0.0.1"


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_redirect_is_refused(status: int) -> None:
    b, seen = backend(
        lambda r: httpx.Response(status, headers={"location": "http://evil.example/api/chat"})
    )
    with pytest.raises(BackendError) as err:
        b.chat("m", [])
    assert err.value.code == "redirect_refused"
    assert "evil.example" in str(err.value)
    assert len(seen) == 1


def test_http_404_model_not_found() -> None:
    b, _ = backend(
        lambda r: httpx.Response(
            404, json={"error": "model 'nope:1b' not found, try pulling it first"}
        )
    )
    with pytest.raises(BackendError) as err:
        b.chat("nope:1b", [])
    assert err.value.code == "model_not_found"
    assert "ollama pull nope:1b" in str(err.value)


def test_plain_404_is_an_http_error_not_a_missing_model() -> None:
    b, _ = backend(lambda r: httpx.Response(404, text="404 page not found"))
    with pytest.raises(BackendError) as err:
        b.chat("m", [])
    assert err.value.code == "backend_http"
    assert "404" in str(err.value)


def test_http_500_names_status_and_body() -> None:
    b, _ = backend(
        lambda r: httpx.Response(500, json={"error": "llama runner process has terminated"})
    )
    with pytest.raises(BackendError) as err:
        b.chat("m", [])
    assert err.value.code == "backend_http"
    assert "HTTP 500" in str(err.value)
    assert "llama runner process has terminated" in str(err.value)


def test_error_line_inside_a_stream() -> None:
    b, _ = backend(
        lambda r: httpx.Response(200, content=ndjson(part("a"), {"error": "out of memory"}))
    )
    with pytest.raises(BackendError) as err:
        b.chat("m", [])
    assert err.value.code == "backend_http"
    assert "out of memory" in str(err.value)


def test_malformed_json_line() -> None:
    b, _ = backend(lambda r: httpx.Response(200, content=ndjson(part("a")) + b"{not json\n"))
    with pytest.raises(BackendError) as err:
        b.chat("m", [])
    assert err.value.code == "backend_malformed"
    assert "line 2" in str(err.value)


def test_deeply_nested_json_is_malformed_not_a_crash() -> None:
    b, _ = backend(lambda r: httpx.Response(200, content=b"[" * 100_000 + b"\n"))
    with pytest.raises(BackendError) as err:
        b.chat("m", [])
    assert err.value.code == "backend_malformed"


@pytest.mark.parametrize(
    "line",
    [
        [1, 2],
        {"message": "text", "done": False},
        {"message": {"content": 5}, "done": False},
        {"message": {"content": "", "tool_calls": [{"function": {"arguments": {}}}]}},
        {"message": {"content": "", "tool_calls": "x"}},
    ],
)
def test_unexpected_shapes_are_malformed(line: Any) -> None:
    b, _ = backend(lambda r: httpx.Response(200, content=ndjson(line, final())))
    with pytest.raises(BackendError) as err:
        b.chat("m", [])
    assert err.value.code == "backend_malformed"


def test_stream_without_done_line_is_malformed() -> None:
    b, _ = backend(lambda r: httpx.Response(200, content=ndjson(part("a"), part("b"))))
    with pytest.raises(BackendError) as err:
        b.chat("m", [])
    assert err.value.code == "backend_malformed"
    assert "done" in str(err.value)


def test_response_cap_counts_bytes_while_streaming() -> None:
    lines = [part("x" * 100) for _ in range(50)]
    b, _ = backend(
        lambda r: httpx.Response(200, content=ndjson(*lines, final())), max_response_bytes=2000
    )
    with pytest.raises(BackendError) as err:
        b.chat("m", [])
    assert err.value.code == "response_too_large"
    # the same reply fits under a larger cap
    b2, _ = backend(lambda r: httpx.Response(200, content=ndjson(*lines, final())))
    assert len(b2.chat("m", []).content) == 5000


def test_response_cap_applies_without_streaming() -> None:
    obj = final(message={"role": "assistant", "content": "y" * 5000})
    b, _ = backend(lambda r: httpx.Response(200, json=obj), stream=False, max_response_bytes=1000)
    with pytest.raises(BackendError) as err:
        b.chat("m", [])
    assert err.value.code == "response_too_large"


def test_timeout_is_backend_timeout() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    b, _ = backend(slow)
    with pytest.raises(BackendError) as err:
        b.chat("m", [])
    assert err.value.code == "backend_timeout"
    msg = str(err.value)
    # The seconds and the key that sets them, the fix, and no httpx class name.
    assert "within 5 s (ollama.timeout)" in msg
    assert "fix: raise ollama.timeout (seconds)" in msg
    assert "ReadTimeout" not in msg


@pytest.mark.parametrize(
    ("exc", "phase"),
    [(httpx.ConnectTimeout, "while connecting"), (httpx.WriteTimeout, "while sending")],
)
def test_timeout_message_names_the_phase_and_a_custom_key(
    exc: type[httpx.TimeoutException], phase: str
) -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise exc("timed out", request=request)

    b, _ = backend(slow, timeout_key="profiles.fast.timeout")
    with pytest.raises(BackendError) as err:
        b.list_models()
    msg = str(err.value)
    assert err.value.code == "backend_timeout"
    assert "within 5 s (profiles.fast.timeout)" in msg
    assert phase in msg
    assert "ollama.timeout" not in msg
    assert exc.__name__ not in msg


def test_connect_error_is_backend_unreachable_with_fix() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    b, _ = backend(refuse)
    with pytest.raises(BackendError) as err:
        b.list_models()
    assert err.value.code == "backend_unreachable"
    assert "connection refused" in str(err.value)
    assert "ollama serve" in str(err.value)
    assert "ollama.base_url" in str(err.value)


def test_list_models_uses_api_tags() -> None:
    tags = {"models": [{"name": "a:1b", "model": "a:1b"}, {"model": "b:2b"}]}
    b, seen = backend(lambda r: httpx.Response(200, json=tags))
    assert b.list_models() == ["a:1b", "b:2b"]
    assert (seen[0].method, seen[0].url.path) == ("GET", "/api/tags")


@pytest.mark.parametrize("body", [{"nothing": 1}, {"models": [{"size": 1}]}, {"models": "x"}])
def test_list_models_malformed(body: Any) -> None:
    b, _ = backend(lambda r: httpx.Response(200, json=body))
    with pytest.raises(BackendError) as err:
        b.list_models()
    assert err.value.code == "backend_malformed"


def test_show_posts_the_model_and_returns_details() -> None:
    info = {"details": {"family": "qwen2"}, "capabilities": ["completion", "tools"]}
    b, seen = backend(lambda r: httpx.Response(200, json=info))
    assert b.show("qwen2.5-coder:7b") == info
    assert seen[0].url.path == "/api/show"
    assert json.loads(seen[0].content) == {"model": "qwen2.5-coder:7b"}


def test_show_unknown_model() -> None:
    b, _ = backend(lambda r: httpx.Response(404, json={"error": "model 'zz' not found"}))
    with pytest.raises(BackendError) as err:
        b.show("zz")
    assert err.value.code == "model_not_found"


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.5:11434",
        "http://ollama.example.com",
        "http://evil.example:80",
        "http://[::2]",
    ],
)
def test_remote_url_refused_at_construction(url: str) -> None:
    with pytest.raises(BackendError) as err:
        OllamaBackend(HTTPSettings(url, timeout=1))
    assert err.value.code == "remote_refused"
    assert "ollama.base_url" in str(err.value)
    assert "ollama.allow_remote = true" in str(err.value)


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:11434", "http://127.1.2.3:1", "http://[::1]:11434", "http://localhost"],
)
def test_loopback_urls_accepted(url: str) -> None:
    OllamaBackend(HTTPSettings(url, timeout=1)).close()


def test_remote_url_allowed_explicitly() -> None:
    remote = OllamaBackend(
        HTTPSettings("http://10.0.0.5:11434", timeout=1, allow_remote=True),
        transport=httpx.MockTransport(lambda r: httpx.Response(200, json={"models": []})),
    )
    assert remote.list_models() == []


@pytest.mark.parametrize(
    "url",
    [
        "ftp://127.0.0.1",
        "127.0.0.1:11434",
        "http://127.0.0.1:99999",
        "http://127.0.0.1@evil.example:80",
        "http://127.0.0.1:11434/?x=1",
    ],
)
def test_unusable_url(url: str) -> None:
    with pytest.raises(BackendError) as err:
        OllamaBackend(HTTPSettings(url, timeout=1))
    assert err.value.code == "backend_malformed"
    # allow_remote would not make this URL usable, so the message must not suggest it.
    assert "allow_remote" not in str(err.value)
    assert "fix: correct ollama.base_url" in str(err.value)


def test_bad_numbers_rejected() -> None:
    with pytest.raises(ValueError, match="timeout"):
        OllamaBackend(HTTPSettings(URL, timeout=0))
    with pytest.raises(ValueError, match="max_response_bytes"):
        OllamaBackend(HTTPSettings(URL, timeout=1, max_response_bytes=0))


def test_error_codes_are_documented() -> None:
    for code in (
        "backend_unreachable",
        "backend_timeout",
        "backend_http",
        "model_not_found",
        "backend_malformed",
        "response_too_large",
        "redirect_refused",
        "remote_refused",
    ):
        assert BACKEND_ERROR_CODES[code]


def test_closed_backend_refuses_requests() -> None:
    b, seen = backend(lambda r: httpx.Response(200, json={"models": []}))
    b.close()
    b.close()
    with pytest.raises(BackendError) as err:
        b.list_models()
    assert err.value.code == "backend_closed"
    assert seen == []


def test_thinking_and_unknown_fields_are_ignored() -> None:
    lines = ndjson(
        part("", thinking="let me think"),
        part("answer", images=None),
        final(total_duration=1, something_new={"x": 1}),
    )
    b, _ = backend(lambda r: httpx.Response(200, content=lines))
    assert b.chat("m", []).content == "answer"
