"""In-process tests of the framing, session and tools layers (no subprocess)."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

import flow_mcp
from flow_core import EDITOR_TIMEOUT_DEFAULT, Event, Report
from flow_mcp import MAX_FRAME_BYTES
from flow_mcp._framing import (
    DescriptorFrameReader,
    FrameError,
    FrameReader,
    FrameWriter,
    decode,
    encode,
)
from flow_mcp._inputs import validate_arguments
from flow_mcp._server import parse_options
from flow_mcp._session import SUPPORTED_PROTOCOL_VERSIONS, JsonRpcError, Session
from flow_mcp._tools import FlowTools, ProgressRelay, tool_definitions


def test_public_names() -> None:
    # What a user calls; the layers stay in private modules.
    assert sorted(flow_mcp.__all__) == sorted(
        [
            "LATEST_PROTOCOL_VERSION",
            "MAX_FRAME_BYTES",
            "TOOL_NAMES",
            "ServerOptions",
            "__version__",
            "main",
            "run_server",
            "serve",
        ]
    )
    assert flow_mcp.LATEST_PROTOCOL_VERSION == "2025-11-25"
    assert SUPPORTED_PROTOCOL_VERSIONS == ("2025-11-25", "2025-06-18", "2025-03-26")


# --------------------------------------------------------------------------- framing


@pytest.mark.parametrize(
    "text", ["a\nb", "a\r\nb", "line\u2028sep\u2029para", "lone \udcff surrogate", "\x00\x1f", "é"]
)
def test_encode_is_one_ascii_line(text: str) -> None:
    data = encode({"jsonrpc": "2.0", "id": 1, "result": {"text": text}})
    assert data.endswith(b"\n")
    assert data.count(b"\n") == 1
    assert b"\r" not in data
    assert data.isascii()
    assert json.loads(data)["result"]["text"] == text


def test_reader_limits_and_blank_lines() -> None:
    frames = b"\n\r\n" + b"x" * 9 + b"\n" + b"y" * 10 + b"\n" + b"tail-without-newline"
    reader = FrameReader(io.BufferedReader(io.BytesIO(frames)), limit=10)  # type: ignore[arg-type]
    assert reader.read_line() == b"x" * 9
    with pytest.raises(FrameError) as info:
        reader.read_line()
    assert info.value.fatal
    assert info.value.code == -32600


def test_reader_returns_a_last_line_without_newline_then_eof() -> None:
    reader = FrameReader(io.BufferedReader(io.BytesIO(b"{}\r\nlast")))  # type: ignore[arg-type]
    assert reader.read_line() == b"{}"
    assert reader.read_line() == b"last"
    assert reader.read_line() is None


def _pipe_with(data: bytes) -> int:
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    return r


def test_descriptor_reader_has_the_same_line_contract() -> None:
    frames = b"\n\r\n" + b"x" * 9 + b"\n" + b"y" * 10 + b"\n"
    fd = _pipe_with(frames)
    try:
        reader = DescriptorFrameReader(fd, limit=10)
        assert reader.read_line() == b"x" * 9
        with pytest.raises(FrameError) as info:
            reader.read_line()
        assert (info.value.fatal, info.value.code) == (True, -32600)
    finally:
        os.close(fd)
    fd = _pipe_with(b"{}\r\nlast")
    try:
        reader = DescriptorFrameReader(fd)
        assert [reader.read_line(), reader.read_line(), reader.read_line()] == [
            b"{}",
            b"last",
            None,
        ]
    finally:
        os.close(fd)


def test_descriptor_reader_refuses_an_endless_line_before_buffering_it_all() -> None:
    fd = _pipe_with(b"z" * 64)
    try:
        with pytest.raises(FrameError):
            DescriptorFrameReader(fd, limit=10).read_line()
    finally:
        os.close(fd)


def test_descriptor_reader_wait_ends_on_the_signal_wakeup_descriptor() -> None:
    """A byte on the wakeup pipe (what the interpreter writes for every signal) ends the wait
    and is drained; input that is ready is then read as usual."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.write(wake_w, b"\x0f")
    fd = _pipe_with(b'{"id": 1}\n')
    try:
        reader = DescriptorFrameReader(fd, wakeup_fd=wake_r)
        assert reader.read_line() == b'{"id": 1}'
        with pytest.raises(BlockingIOError):
            os.read(wake_r, 1)  # drained
        assert reader.read_line() is None
    finally:
        for d in (fd, wake_r, wake_w):
            os.close(d)


@pytest.mark.parametrize(
    "raw", [b"NaN", b'{"x": Infinity}', b"[" * 200_000, b"\xc3\x28", b"Content-Length: 10"]
)
def test_decode_rejects_with_parse_error(raw: bytes) -> None:
    with pytest.raises(FrameError) as info:
        decode(raw)
    assert info.value.code == -32700
    assert not info.value.fatal


def test_default_limit_is_4_mib() -> None:
    assert MAX_FRAME_BYTES == 4 * 1024 * 1024


# --------------------------------------------------------------------------- session


class FakeHandler:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any], Any]] = []

    def list_tools(self) -> list[dict[str, Any]]:
        return [{"name": "t", "inputSchema": {"type": "object"}}]

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        progress_token: str | int | None,
        *,
        stopped: Any = None,
    ) -> dict[str, Any]:
        self.calls.append((name, dict(arguments), progress_token))
        if name == "boom":
            raise RuntimeError("kaboom")
        if name == "rpc":
            raise JsonRpcError(-32602, "nope", {"why": 1})
        return {"content": [], "isError": name == "bad"}


@pytest.fixture
def wired() -> Iterator[tuple[Session, FakeHandler, Any]]:
    r, w = os.pipe()
    handler = FakeHandler()
    logs: list[str] = []
    session = Session(handler, FrameWriter(w), server_version="9.9.9", log=logs.append)
    reader = os.fdopen(r, "rb")

    def replies() -> list[dict[str, Any]]:
        os.close(w)
        return [json.loads(line) for line in reader.read().splitlines()]

    session.replies = replies  # type: ignore[attr-defined]
    session.logs = logs  # type: ignore[attr-defined]
    yield session, handler, replies
    reader.close()


def _ready(session: Session) -> None:
    session.handle_message(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "x"}}
    )
    session.handle_message({"jsonrpc": "2.0", "method": "notifications/initialized"})


def test_session_tool_calls_and_errors(wired: tuple[Session, FakeHandler, Any]) -> None:
    session, handler, replies = wired
    _ready(session)
    assert session.state == "ready"
    assert session.protocol_version == "2025-11-25"
    call = {"jsonrpc": "2.0", "method": "tools/call"}
    session.handle_message(
        {**call, "id": 1, "params": {"name": "ok", "_meta": {"progressToken": 7}}}
    )
    session.handle_message({**call, "id": 2, "params": {"name": "boom"}})
    session.handle_message({**call, "id": 3, "params": {"name": "rpc"}})
    session.handle_message({**call, "id": 4, "params": {"name": "bad", "arguments": None}})
    session.handle_message({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
    session.handle_message({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": None})
    out = replies()
    assert [r["id"] for r in out] == [0, 1, 2, 3, 4, 5, 6]
    assert out[1]["result"] == {"content": [], "isError": False}
    assert out[2]["error"]["code"] == -32603
    assert "kaboom" in out[2]["error"]["message"]
    assert out[3]["error"] == {"code": -32602, "message": "nope", "data": {"why": 1}}
    assert out[4]["result"]["isError"] is True
    assert out[5]["result"] == out[6]["result"] == {"tools": handler.list_tools()}
    assert handler.calls[0] == ("ok", {}, 7)
    logs = session.logs  # type: ignore[attr-defined]
    assert any("tools/call id=4" in line and "isError" in line for line in logs)
    assert any("tools/call id=2" in line and "-32603" in line for line in logs)


def test_session_stop_flag_ends_serve(wired: tuple[Session, FakeHandler, Any]) -> None:
    session, _, replies = wired
    stop = [False]
    session.stop_requested = lambda: stop[0]
    # tools/list is served on the main thread (ping would be answered by the reader thread).
    lines = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
    )
    stop[0] = True
    # A pipe kept open: end of input would drop the queued request (tested with a real server).
    r, w = os.pipe()
    os.write(w, lines)
    reader = DescriptorFrameReader(r)
    try:
        code = session.serve(reader)
    finally:
        reader.close()
        os.close(w)
        os.close(r)
    assert code == 0
    assert [r["id"] for r in replies()] == [1]  # stopped after the first frame


# --------------------------------------------------------------------------- tools


def test_tool_definitions_shape() -> None:
    tools = tool_definitions()
    assert [t["name"] for t in tools] == list(flow_mcp.TOOL_NAMES)
    for tool in tools:
        assert tool["inputSchema"]["additionalProperties"] is False
        assert tool["outputSchema"]["type"] == "object"
        assert set(tool["annotations"]) >= {"readOnlyHint", "openWorldHint"}
    tools[0]["name"] = "changed"
    assert tool_definitions()[0]["name"] == "flow_status"  # callers get copies


@pytest.mark.parametrize(
    ("name", "arguments", "problem"),
    [
        ("flow_status", {}, None),
        ("flow_check", {}, None),
        ("flow_check", {"name": "lint"}, None),
        ("flow_run", {"task": "t"}, None),
        ("flow_run", {}, "missing"),
        ("flow_run", {"task": None}, "string"),
        ("flow_check", {"name": ""}, "empty"),
        ("flow_status", {"a": 1}, "unexpected"),
    ],
)
def test_validate_arguments(name: str, arguments: dict[str, Any], problem: str | None) -> None:
    found = validate_arguments(name, arguments)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found


class FakeRuntime:
    def status(self) -> Report:
        return Report(kind="status", ok=True, status="ok", flow_version="0")

    def check(self, name: str | None = None) -> Report:
        from flow_core import UnknownCheckError

        raise UnknownCheckError(f"no check named {name!r}")

    def run(self, task: str) -> Report:
        return Report(kind="run", ok=False, status="unverified", flow_version="0", task=task)


def test_flow_tools_results_and_error_reports() -> None:
    tools = FlowTools(FakeRuntime(), workspace="/w", trusted=True)
    ok = tools.call_tool("flow_status", {}, None)
    assert ok["isError"] is False
    lean = {k: v for k, v in ok["structuredContent"].items() if k != "diff"}
    assert json.loads(ok["content"][1]["text"]) == lean
    failed = tools.call_tool("flow_check", {"name": "zzz"}, None)
    assert failed["isError"] is True
    report = failed["structuredContent"]
    assert (report["kind"], report["status"], report["workspace"]) == ("check", "error", "/w")
    assert report["errors"][0]["code"] == "check_unknown"
    unverified = tools.call_tool("flow_run", {"task": "do"}, None)
    assert unverified["isError"] is True
    assert unverified["structuredContent"]["task"] == "do"
    with pytest.raises(JsonRpcError) as info:
        tools.call_tool("flow_nope", {}, None)
    assert info.value.code == -32602


def test_progress_relay_counts_up_only_with_a_token() -> None:
    sent: list[dict[str, Any]] = []
    relay = ProgressRelay(sent.append)
    relay(Event(kind="run_started"))
    assert sent == []
    relay.start("tok")
    relay(Event(kind="turn", role="coder", cycle=1, turn=2))
    relay(Event(kind="check_finished", name="lint", ok=False, status="timeout"))
    relay(Event(kind="run_finished", ok=False, status="interrupted"))
    relay.start(None)
    relay(Event(kind="run_finished"))
    assert [m["params"]["progress"] for m in sent] == [1, 2, 3]
    assert all(m["params"]["progressToken"] == "tok" for m in sent)
    # Messages a client can show, in the report's status words.
    assert [m["params"]["message"] for m in sent] == [
        "coder: model turn 2 (cycle 1)",
        "check lint: timeout",
        "run finished: interrupted",
    ]
    assert all(m["method"] == "notifications/progress" for m in sent)


def test_progress_relay_says_a_reply_and_skips_streamed_tokens() -> None:
    # A model reply is a turn's end, not the run's: before the wording was shared with the
    # CLI (flow_core.describe_event) both fell through to "run finished: failed".
    sent: list[dict[str, Any]] = []
    relay = ProgressRelay(sent.append)
    relay.start("tok")
    relay(Event(kind="model_progress", role="coder", cycle=1, turn=1, tokens=3, chars=9))
    relay(Event(kind="model_reply", role="coder", cycle=1, turn=1, duration_ms=1500.0))
    assert [m["params"]["message"] for m in sent] == ["coder: model replied in 1.5 s (cycle 1)"]
    assert [m["params"]["progress"] for m in sent] == [1]
    relay.close()


def test_a_signal_during_a_write_is_deferred_until_the_frame_is_whole() -> None:
    import signal

    from flow_mcp._server import _Stop

    r, w = os.pipe()
    try:
        writer = FrameWriter(w)
        stop = _Stop(writer)
        writer.busy = True  # as if the signal arrived in the middle of os.write
        stop.handler(signal.SIGTERM, None)
        assert stop.code == 130
        writer.busy = False
        with pytest.raises(KeyboardInterrupt):
            writer.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})
        assert json.loads(os.read(r, 1000))["method"] == "notifications/progress"
        writer.send({"jsonrpc": "2.0", "id": 1, "result": {}})  # delivered once only
        with pytest.raises(KeyboardInterrupt):
            stop.handler(signal.SIGINT, None)  # a second signal forces, even mid-cleanup
        assert stop.code == 130
    finally:
        os.close(r)
        os.close(w)


def test_run_server_refuses_an_out_of_range_editor_timeout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = flow_mcp.run_server(flow_mcp.ServerOptions(editor_timeout=700.0), stdin_fd=0)
    assert code == 2
    assert "--editor-timeout" in capsys.readouterr().err


def test_parse_options_maps_every_flag() -> None:
    options = parse_options(
        [
            "--workspace",
            "/w",
            "--config",
            "/c.toml",
            "--trusted",
            "--model",
            "m",
            "--nvim",
            "/s",
            "--editor-timeout",
            "0.1",
        ]
    )
    assert options == flow_mcp.ServerOptions(
        workspace="/w",
        config_file="/c.toml",
        trusted=True,
        model="m",
        nvim_socket="/s",
        editor_timeout=0.1,
    )
    assert parse_options([]).editor_timeout == EDITOR_TIMEOUT_DEFAULT == 120.0


ARGUMENT_SAMPLES: list[dict[str, Any]] = [
    {},
    {"name": "lint"},
    {"name": ""},
    {"name": None},
    {"name": 5},
    {"name": ["a"]},
    {"task": "t"},
    {"task": ""},
    {"task": None},
    {"task": 3.5},
    {"task": "t", "force": True},
    {"verbose": True},
]


@pytest.mark.parametrize("tool", list(flow_mcp.TOOL_NAMES))
def test_input_schema_and_validation_come_from_one_model(tool: str) -> None:
    # The advertised inputSchema and the server's validation agree on every sample, judged
    # by an independent JSON Schema validator (the one the MCP SDK uses).
    import jsonschema

    from flow_mcp._inputs import ARGUMENT_MODELS

    schema = next(t["inputSchema"] for t in tool_definitions() if t["name"] == tool)
    assert schema == ARGUMENT_MODELS[tool].model_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    for sample in ARGUMENT_SAMPLES:
        by_schema = jsonschema.Draft202012Validator(schema).is_valid(sample)
        by_model = validate_arguments(tool, sample) is None
        assert by_schema == by_model, (tool, sample)


def test_the_reader_reads_at_most_max_queued_messages_ahead() -> None:
    """A client sending faster than requests are served is read no further ahead than
    MAX_QUEUED messages (memory stays bounded); nothing is lost once the main thread drains."""
    import threading

    from flow_mcp._framing import DescriptorFrameReader
    from flow_mcp._inbox import EOF, MAX_QUEUED, Inbox

    total = MAX_QUEUED * 2
    frames = b"".join(
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}\n' % i for i in range(total)
    )
    fd = _pipe_with(frames)
    routed: list[int] = []

    def route(message: Any) -> bool:
        routed.append(message["id"])
        return False

    inbox = Inbox(DescriptorFrameReader(fd), route=route, on_eof=lambda: None)
    try:
        inbox.start()
        settled = threading.Event()
        for _ in range(500):  # bounded: the reader fills the queue, then must stop
            if len(routed) > MAX_QUEUED:
                break
            settled.wait(0.01)
        assert MAX_QUEUED < len(routed) <= MAX_QUEUED + 1
        got = [inbox.get() for _ in range(total)]
        assert [m["id"] for m in got] == list(range(total))
        assert inbox.get() is EOF
    finally:
        inbox.close()
        os.close(fd)


def test_progress_heartbeats_repeat_the_last_words_while_nothing_happens() -> None:
    import threading

    sent: list[dict[str, Any]] = []
    beat = threading.Event()

    def send(note: dict[str, Any]) -> None:
        sent.append(note["params"])
        if "(still running," in note["params"]["message"]:
            beat.set()

    relay = ProgressRelay(send, heartbeat_s=0.05)
    try:
        relay.start("tok")
        relay(Event(kind="check_started", name="tests", cycle=1))
        assert beat.wait(60)  # a safety net only: a heartbeat comes after 0.05 s
    finally:
        relay.close()
    assert sent[0]["message"] == "check tests: running (cycle 1)"
    assert sent[1]["message"].startswith("check tests: running (cycle 1) (still running, ")
    assert [p["progress"] for p in sent] == list(range(1, len(sent) + 1))
    assert {p["progressToken"] for p in sent} == {"tok"}
