"""Property-based: any wire body from a server, through either backend and the parser, then the
next request and the tool boundary, ends in a result or a classified error, never a crash.

Bodies are fed through ``httpx.MockTransport`` (the real decoders run). What must hold:
``chat`` returns a ``ChatResponse`` or raises ``BackendError`` with a catalogued code;
``parse_reply`` never raises; sending the echoed calls and the text back (the next request)
never raises anything but ``BackendError``; the tool boundary answers every call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from flow_core import (
    BACKEND_ERROR_CODES,
    ERROR_CODES,
    BackendError,
    ChatMessage,
    ChatResponse,
    OllamaBackend,
    ToolCall,
    parse_reply,
)
from flow_core.models import HTTPSettings
from flow_core.models.openai import OpenAIBackend
from flow_core.tools._toolbox import ToolBox, ToolLedger
from flow_safeio import Workspace

#: Many generated wire replies per property.
pytestmark = pytest.mark.slow

NAMES = ("read_file", "write_file", "edit_file", "search_text", "outline", "list_files")

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["\ud83d", "a\udcffb", "NaN", "{", "read_file", "length"])
)
json_shapes = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["name", "arguments", "id", "function", "content", "path", "x"])
            | st.text(max_size=6),
            inner,
            max_size=5,
        )
    ),
    max_leaves=25,
)
names = st.sampled_from([*NAMES, "run_shell", "", "\ud800"])
call_shapes = st.fixed_dictionaries(
    {},
    optional={
        "id": st.sampled_from(["c1", "c1", "", "\udcff"]) | json_shapes,
        "type": st.just("function"),
        "function": st.fixed_dictionaries(
            {}, optional={"name": names | json_shapes, "arguments": json_shapes}
        )
        | json_shapes,
    },
)
messages = st.fixed_dictionaries(
    {},
    optional={
        "role": st.just("assistant"),
        "content": st.text(max_size=40) | json_shapes,
        "tool_calls": st.lists(call_shapes, max_size=3) | json_shapes,
    },
)
finish = st.sampled_from(["stop", "length", "tool_calls", "max_tokens", None]) | json_shapes


def dumps(value: Any) -> bytes:
    # Servers may send lone-surrogate escapes ("\ud83d"): ensure_ascii writes them that way.
    return json.dumps(value, ensure_ascii=True).encode("ascii")


ollama_bodies = st.one_of(
    st.binary(max_size=60),
    json_shapes.map(dumps),
    st.builds(
        lambda m, r, done: dumps({"model": "m", "message": m, "done": done, "done_reason": r}),
        messages,
        finish,
        st.sampled_from([True, True, False]) | json_shapes,
    ),
    st.lists(
        st.builds(lambda m, d: dumps({"message": m, "done": d}), messages, st.booleans()),
        max_size=4,
    ).map(lambda lines: b"\n".join(lines)),
)
openai_bodies = st.one_of(
    st.binary(max_size=60),
    json_shapes.map(dumps),
    st.builds(
        lambda m, r, extra: dumps({"choices": [{"message": m, "finish_reason": r}], **extra}),
        messages,
        finish,
        st.dictionaries(st.sampled_from(["usage", "model", "error"]), json_shapes, max_size=2),
    ),
)
statuses = st.sampled_from([200, 200, 200, 400, 404, 500])


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    root = tmp_path_factory.mktemp("wire") / "ws"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    return 1\n")
    with Workspace(str(root)) as w:
        yield w


def round_trip(make: Any, body: bytes, status: int, ws: Workspace) -> None:
    sent: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/show":  # asked once for tool-result delivery
            return httpx.Response(404, json={"error": "not here"})
        sent.append(request.content)
        return httpx.Response(status, content=body)

    backend = make(httpx.MockTransport(handler))
    tools = [{"type": "function", "function": {"name": n}} for n in NAMES]
    try:
        try:
            reply: ChatResponse | BackendError = backend.chat(
                "m", [ChatMessage("user", "go")], tools=tools
            )
        except BackendError as err:
            reply = err
        if isinstance(reply, BackendError):
            assert reply.code in ERROR_CODES
            assert len(reply.message) < 2_000
            return
        parsed = parse_reply(reply, NAMES, max_chars=5_000)
        box = ToolBox(role="planner", workspace=ws, ledger=ToolLedger(limit=100), trusted=False)
        answers = [
            ChatMessage("tool", box.call(c.name, c.arguments).content, tool_call_id=c.id)  # type: ignore[arg-type]
            for c in parsed.tool_calls
        ]
        follow = [
            ChatMessage("user", "go"),
            ChatMessage("assistant", parsed.text, tool_calls=parsed.echo_calls),
            *answers,
        ]
        code = None
        try:
            backend.chat("m", follow, tools=tools)
        except BackendError as err:
            code = err.code
        assert code is None or code in BACKEND_ERROR_CODES
        assert len(sent) == 2
        sent[1].decode("utf-8")  # strict UTF-8 on the wire
        json.loads(sent[1])
    finally:
        backend.close()


@given(ollama_bodies, statuses, st.booleans())
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_ollama_body(ws: Workspace, body: bytes, status: int, stream: bool) -> None:
    round_trip(
        lambda t: OllamaBackend(
            HTTPSettings("http://127.0.0.1:1", timeout=5), transport=t, stream=stream
        ),
        body,
        status,
        ws,
    )


@given(openai_bodies, statuses)
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_openai_body(ws: Workspace, body: bytes, status: int) -> None:
    round_trip(
        lambda t: OpenAIBackend(
            HTTPSettings("http://127.0.0.1:1/v1", timeout=5, tool_results="native"), transport=t
        ),
        body,
        status,
        ws,
    )


@given(st.dictionaries(st.text(max_size=8), json_shapes, max_size=5), st.sampled_from(NAMES))
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_tool_boundary_takes_any_arguments(ws: Workspace, args: dict[str, Any], name: str) -> None:
    ledger = ToolLedger(limit=1000)
    box = ToolBox(role="coder", workspace=ws, ledger=ledger, trusted=False)
    out = box.call(name, args)
    assert out.error is None or out.error in ERROR_CODES
    record = ledger.records[-1]
    json.dumps(record.model_dump(mode="json"), ensure_ascii=False, allow_nan=False).encode()


def test_deep_nesting_from_the_server_is_malformed_not_a_crash(ws: Workspace) -> None:
    deep = (
        b'{"message": {"content": "", "tool_calls": [{"function": '
        b'{"name": "read_file", "arguments": ' + b"[" * 5000 + b"]" * 5000 + b'}}]}, "done": true}'
    )
    round_trip(
        lambda t: OllamaBackend(
            HTTPSettings("http://127.0.0.1:1", timeout=5), transport=t, stream=False
        ),
        deep,
        200,
        ws,
    )


def test_request_that_cannot_be_json_is_refused_without_the_request_in_the_message(
    tmp_path: Path,
) -> None:
    backend = OpenAIBackend(
        HTTPSettings("http://127.0.0.1:1/v1", timeout=5),
        transport=httpx.MockTransport(lambda r: httpx.Response(200, content=b"{}")),
    )
    secret = "S" * 10_000
    with pytest.raises(BackendError) as err:
        backend.chat("m", [ChatMessage("user", secret)], format={"x": object()})
    assert err.value.code == "request_unencodable"
    assert "SSSS" not in err.value.message
    backend.close()


def test_lone_surrogates_in_a_request_go_out_as_replacement_characters() -> None:
    body = {"messages": [{"role": "user", "content": "fix \udcff it \ud83d"}]}
    # Negative control: httpx's own JSON encoding raises on this body.
    with pytest.raises(UnicodeEncodeError):
        httpx.Request("POST", "http://127.0.0.1:1/", json=body)
    sent: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return httpx.Response(
            200, content=json.dumps({"message": {"content": "ok"}, "done": True}).encode()
        )

    with OllamaBackend(
        HTTPSettings("http://127.0.0.1:1", timeout=5),
        transport=httpx.MockTransport(handler),
        stream=False,
    ) as b:
        assert b.chat("m", [ChatMessage("user", "fix \udcff it \ud83d")]).content == "ok"
    assert json.loads(sent[0])["messages"][0]["content"] == "fix \ufffd it \ufffd"


def test_nan_in_a_request_goes_out_as_null() -> None:
    sent: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return httpx.Response(200, content=b'{"message": {"content": "ok"}, "done": true}')

    with OllamaBackend(
        HTTPSettings("http://127.0.0.1:1", timeout=5),
        transport=httpx.MockTransport(handler),
        stream=False,
    ) as b:
        calls = (ToolCall("c", "read_file", '{"path": "a", "n": NaN}'),)
        b.chat("m", [ChatMessage("assistant", "", tool_calls=calls)], format={"x": float("inf")})
    body = json.loads(sent[0])
    assert body["format"] == {"x": None}
    assert body["messages"][0]["tool_calls"][0]["function"]["arguments"] == {}
