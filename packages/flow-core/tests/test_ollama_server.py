"""OllamaBackend against a real loopback HTTP server replaying Ollama's wire format."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator

import pytest

from flow_core import BackendError, ChatMessage, OllamaBackend, parse_reply
from flow_core.models import HTTPSettings
from flow_testing import model_server as replay

TOOLS = ["read_file", "write_file"]
USER = [ChatMessage("user", "Fix the bug in a.py")]


@pytest.fixture
def server() -> Iterator[replay.FakeModelServer]:
    with replay.FakeModelServer() as srv:
        yield srv


@pytest.fixture(params=[True, False], ids=["stream", "single"])
def streaming(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def queue_chat(
    srv: replay.FakeModelServer,
    streaming: bool,
    parts: list[str],
    **kw: object,
) -> None:
    if streaming:
        srv.queue_stream("/api/chat", replay.chat_lines(parts, **kw))
    else:
        srv.queue_json("POST", "/api/chat", replay.chat_object("".join(parts), **kw))


def test_plain_reply(server: replay.FakeModelServer, streaming: bool) -> None:
    queue_chat(server, streaming, ["The bug ", "is in ", "parse()."])
    with OllamaBackend(HTTPSettings(server.url, timeout=5), stream=streaming) as b:
        reply = b.chat("qwen2.5-coder:7b", USER)
    assert reply.content == "The bug is in parse()."
    assert reply.finish_reason == "stop"
    assert reply.model == "qwen2.5-coder:7b"
    assert reply.completion_tokens is not None
    (req,) = server.received
    assert (req.method, req.path) == ("POST", "/api/chat")
    assert req.body["stream"] is streaming
    assert req.body["messages"] == [{"role": "user", "content": "Fix the bug in a.py"}]


def test_structured_tool_call(server: replay.FakeModelServer, streaming: bool) -> None:
    queue_chat(
        server, streaming, [""], tool_calls=[replay.tool_call("read_file", {"path": "a.py"})]
    )
    with OllamaBackend(HTTPSettings(server.url, timeout=5), stream=streaming) as b:
        reply = b.chat("m", USER, tools=[{"type": "function", "function": {"name": "read_file"}}])
    parsed = parse_reply(reply, TOOLS, max_chars=10_000)
    assert parsed.issues == ()
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("read_file", {"path": "a.py"})]
    assert server.received[0].body["tools"][0]["function"]["name"] == "read_file"


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "read_file", "arguments": {"path": "a.py"}}',
        '```json\n{"name": "read_file", "arguments": {"path": "a.py"}}\n```',
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>',
        "<function=read_file>\n<parameter=path>\na.py\n</parameter>\n</function>",
    ],
    ids=["bare-json", "fenced", "tool_call-tag", "function-tag"],
)
def test_tool_call_written_as_text(
    server: replay.FakeModelServer, streaming: bool, text: str
) -> None:
    # streamed token by token, as a model would emit it
    queue_chat(server, streaming, [text[i : i + 7] for i in range(0, len(text), 7)])
    with OllamaBackend(HTTPSettings(server.url, timeout=5), stream=streaming) as b:
        reply = b.chat("m", USER)
    assert reply.tool_calls == ()
    assert reply.content == text
    parsed = parse_reply(reply, TOOLS, max_chars=10_000)
    assert parsed.codes == ("text_tool_call",)
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("read_file", {"path": "a.py"})]


def test_arguments_as_json_string(server: replay.FakeModelServer, streaming: bool) -> None:
    queue_chat(
        server, streaming, [""], tool_calls=[replay.tool_call("read_file", '{"path": "a.py"}')]
    )
    with OllamaBackend(HTTPSettings(server.url, timeout=5), stream=streaming) as b:
        parsed = parse_reply(b.chat("m", USER), TOOLS, max_chars=10_000)
    assert parsed.codes == ("arguments_as_string",)
    assert parsed.tool_calls[0].arguments == {"path": "a.py"}


def test_unknown_tool(server: replay.FakeModelServer, streaming: bool) -> None:
    queue_chat(server, streaming, [""], tool_calls=[replay.tool_call("run_shell", {"cmd": "ls"})])
    with OllamaBackend(HTTPSettings(server.url, timeout=5), stream=streaming) as b:
        parsed = parse_reply(b.chat("m", USER), TOOLS, max_chars=10_000)
    assert parsed.codes == ("unknown_tool",)
    assert parsed.tool_calls == ()
    assert parsed.issues[0].tool_call_id


def test_empty_reply(server: replay.FakeModelServer, streaming: bool) -> None:
    queue_chat(server, streaming, [""])
    with OllamaBackend(HTTPSettings(server.url, timeout=5), stream=streaming) as b:
        parsed = parse_reply(b.chat("m", USER), TOOLS, max_chars=10_000)
    assert parsed.codes == ("empty_reply",)


def test_reply_cut_by_context(server: replay.FakeModelServer, streaming: bool) -> None:
    queue_chat(server, streaming, ["def f(", "x):\n    return"], done_reason="length")
    with OllamaBackend(HTTPSettings(server.url, timeout=5), stream=streaming) as b:
        reply = b.chat("m", USER)
    assert reply.finish_reason == "length"
    assert parse_reply(reply, TOOLS, max_chars=10_000).codes == ("context_overflow",)


def test_oversize_reply(server: replay.FakeModelServer, streaming: bool) -> None:
    queue_chat(server, streaming, ["z" * 1000] * 20)
    with (
        OllamaBackend(
            HTTPSettings(server.url, timeout=5, max_response_bytes=8_000), stream=streaming
        ) as b,
        pytest.raises(BackendError) as err,
    ):
        b.chat("m", USER)
    assert err.value.code == "response_too_large"


def test_reply_over_char_cap_but_under_byte_cap(
    server: replay.FakeModelServer, streaming: bool
) -> None:
    queue_chat(server, streaming, ["z" * 1000] * 5)
    with OllamaBackend(HTTPSettings(server.url, timeout=5), stream=streaming) as b:
        parsed = parse_reply(b.chat("m", USER), TOOLS, max_chars=1200)
    assert parsed.codes == ("reply_too_large",)
    assert len(parsed.text) == 1200


def test_malformed_json_line(server: replay.FakeModelServer) -> None:
    lines = replay.ndjson(replay.chat_lines(["ok"]))
    lines.insert(1, b'{"model": "m", "message": {"content": "trunc\n')
    server.queue("POST", "/api/chat", replay.Reply(200, lines))
    with (
        OllamaBackend(HTTPSettings(server.url, timeout=5)) as b,
        pytest.raises(BackendError) as err,
    ):
        b.chat("m", USER)
    assert err.value.code == "backend_malformed"


def test_malformed_single_object(server: replay.FakeModelServer) -> None:
    server.queue("POST", "/api/chat", replay.Reply(200, [b"<html>proxy error</html>"]))
    with (
        OllamaBackend(HTTPSettings(server.url, timeout=5), stream=False) as b,
        pytest.raises(BackendError) as err,
    ):
        b.chat("m", USER)
    assert err.value.code == "backend_malformed"
    assert "proxy error" in str(err.value)


def test_redirect_refused(server: replay.FakeModelServer) -> None:
    server.queue(
        "POST",
        "/api/chat",
        replay.Reply(307, [], headers={"Location": "http://198.51.100.7:11434/api/chat"}),
    )
    with (
        OllamaBackend(HTTPSettings(server.url, timeout=5)) as b,
        pytest.raises(BackendError) as err,
    ):
        b.chat("m", USER)
    assert err.value.code == "redirect_refused"
    assert len(server.received) == 1


def test_model_not_found(server: replay.FakeModelServer, streaming: bool) -> None:
    server.queue_json(
        "POST",
        "/api/chat",
        {"error": 'model "qwen9:99b" not found, try pulling it first'},
        status=404,
    )
    with (
        OllamaBackend(HTTPSettings(server.url, timeout=5), stream=streaming) as b,
        pytest.raises(BackendError) as err,
    ):
        b.chat("qwen9:99b", USER)
    assert err.value.code == "model_not_found"
    assert "ollama pull qwen9:99b" in str(err.value)


def test_unknown_route_is_http_error(server: replay.FakeModelServer) -> None:
    with (
        OllamaBackend(HTTPSettings(server.url, timeout=5)) as b,
        pytest.raises(BackendError) as err,
    ):
        b.chat("m", USER)  # nothing queued: Ollama's plain "404 page not found"
    assert err.value.code == "backend_http"
    assert "HTTP 404" in str(err.value)


def test_list_models_and_show(server: replay.FakeModelServer) -> None:
    server.queue_json("GET", "/api/tags", replay.TAGS)
    server.queue_json("POST", "/api/show", replay.SHOW)
    server.queue_json("POST", "/api/show", {"error": "model 'x' not found"}, status=404)
    with OllamaBackend(HTTPSettings(server.url, timeout=5)) as b:
        assert b.list_models() == ["qwen2.5-coder:7b", "llama3.2:latest"]
        assert "tools" in b.show("qwen2.5-coder:7b")["capabilities"]
        with pytest.raises(BackendError) as err:
            b.show("x")
    assert err.value.code == "model_not_found"
    assert server.received[1].body == {"model": "qwen2.5-coder:7b"}


def test_environment_proxies_are_ignored(
    server: replay.FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = _closed_port()
    for var in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(var, f"http://127.0.0.1:{dead}")
    monkeypatch.setenv("NO_PROXY", "")
    monkeypatch.setenv("no_proxy", "")
    server.queue_json("GET", "/api/tags", replay.TAGS)
    with OllamaBackend(HTTPSettings(server.url, timeout=5)) as b:
        assert len(b.list_models()) == 2


def test_timeout(server: replay.FakeModelServer) -> None:
    release = threading.Event()
    server.queue("POST", "/api/chat", replay.Reply(200, [b"{}"], hold=release))
    try:
        with (
            OllamaBackend(HTTPSettings(server.url, timeout=0.2)) as b,
            pytest.raises(BackendError) as err,
        ):
            b.chat("m", USER)
    finally:
        release.set()
    assert err.value.code == "backend_timeout"
    assert "within 0.2 s (ollama.timeout)" in str(err.value)


def _closed_port() -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


def test_connection_refused() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    with OllamaBackend(HTTPSettings(url, timeout=5)) as b, pytest.raises(BackendError) as err:
        b.chat("m", USER)
    assert err.value.code == "backend_unreachable"
    msg = str(err.value)
    assert url in msg
    assert "connection refused" in msg
    assert "ollama serve" in msg


def test_request_is_json_with_identity_encoding(server: replay.FakeModelServer) -> None:
    server.queue_stream("/api/chat", replay.chat_lines(["ok"]))
    with OllamaBackend(HTTPSettings(server.url, timeout=5)) as b:
        b.chat("m", USER, format={"type": "object"})
    headers = {k.lower(): v for k, v in server.received[0].headers.items()}
    assert headers["content-type"] == "application/json"
    assert headers["accept-encoding"] == "identity"
    assert server.received[0].body["format"] == {"type": "object"}
    assert json.dumps(server.received[0].body)
