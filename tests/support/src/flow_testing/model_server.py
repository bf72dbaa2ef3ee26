"""The one fake model server of the test suites: a loopback HTTP server in a thread.

It listens on 127.0.0.1 with an OS-chosen port and answers in two ways:

- **replay**: a queue of canned :class:`Reply` objects per ``(method, path)``, written with
  chunked transfer encoding, for wire-format tests (Ollama's documented ``/api/chat`` replies,
  OpenAI's ``/v1/*``, broken bodies, redirects, a held reply that provokes a client timeout);
- **script**: ``script(request) -> (content, tool_calls)`` answers every ``POST /api/chat``
  that has no queued reply, the way Ollama would (NDJSON when ``stream`` is true, else one
  object); ``GET /api/tags`` lists :attr:`FakeModelServer.models` and ``POST /api/show``
  reports tool support. A scripted run of Flow (planner, coder, reviewer) needs nothing else.

A request that neither answers gets Ollama's plain-text ``404 page not found``. Every request
is recorded in :attr:`FakeModelServer.received`; the bodies of ``/api/chat`` requests also in
:attr:`FakeModelServer.requests`.

The helpers ``chat_lines`` / ``chat_object`` build bodies shaped like Ollama's ``/api/chat``
replies: streamed NDJSON fragments ending in a ``"done": true`` line with ``done_reason``,
durations and token counts, or a single JSON object when ``stream`` is false.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CREATED_AT = "2025-05-27T22:54:57.641643Z"


@dataclass
class Reply:
    """One canned HTTP response.

    ``chunks`` are written one by one with chunked transfer encoding (as Ollama streams);
    ``hold`` (an Event) makes the server wait until it is set before answering, so a test can
    provoke a client timeout without sleeping; with ``hold_at = N`` the wait comes after the
    first N chunks instead (a stream that stalls mid-way).
    """

    status: int = 200
    chunks: Sequence[bytes] = ()
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json; charset=utf-8"
    hold: threading.Event | None = None
    hold_at: int | None = None


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


def ndjson(objs: Iterable[Any]) -> list[bytes]:
    """One chunk per JSON object, each ending in a newline."""
    return [json.dumps(o).encode() + b"\n" for o in objs]


def chat_lines(
    parts: Sequence[str],
    *,
    model: str = "qwen2.5-coder:7b",
    tool_calls: Sequence[dict[str, Any]] = (),
    done_reason: str = "stop",
    prompt_eval_count: int = 26,
    eval_count: int = 12,
) -> list[dict[str, Any]]:
    """The lines of a streamed ``/api/chat`` reply: one per content part, tool calls in their
    own fragment, then the final statistics line."""
    out: list[dict[str, Any]] = [
        {
            "model": model,
            "created_at": CREATED_AT,
            "message": {"role": "assistant", "content": p},
            "done": False,
        }
        for p in parts
    ]
    if tool_calls:
        out.append(
            {
                "model": model,
                "created_at": CREATED_AT,
                "message": {"role": "assistant", "content": "", "tool_calls": list(tool_calls)},
                "done": False,
            }
        )
    out.append(
        {
            "model": model,
            "created_at": CREATED_AT,
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": done_reason,
            "total_duration": 4883583458,
            "load_duration": 1334875,
            "prompt_eval_count": prompt_eval_count,
            "prompt_eval_duration": 342546000,
            "eval_count": eval_count,
            "eval_duration": 4535599000,
        }
    )
    return out


def chat_object(
    content: str,
    *,
    model: str = "qwen2.5-coder:7b",
    tool_calls: Sequence[dict[str, Any]] = (),
    done_reason: str = "stop",
) -> dict[str, Any]:
    """A non-streamed ``/api/chat`` reply (``"stream": false``)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = list(tool_calls)
    return {
        "model": model,
        "created_at": CREATED_AT,
        "message": message,
        "done": True,
        "done_reason": done_reason,
        "total_duration": 5191566416,
        "load_duration": 2154458,
        "prompt_eval_count": 26,
        "prompt_eval_duration": 383809000,
        "eval_count": 298,
        "eval_duration": 4799921000,
    }


def tool_call(name: str, arguments: Any) -> dict[str, Any]:
    """A tool call as Ollama writes it in ``message.tool_calls``."""
    return {"function": {"name": name, "arguments": arguments}}


TAGS = {
    "models": [
        {
            "name": "qwen2.5-coder:7b",
            "model": "qwen2.5-coder:7b",
            "modified_at": "2025-05-04T17:37:44.706015396-07:00",
            "size": 4683075271,
            "digest": "dae161e27b0e90dd1856c8bb3209201fd6736d8eb66298e75ed87571486f4364",
            "details": {
                "parent_model": "",
                "format": "gguf",
                "family": "qwen2",
                "families": ["qwen2"],
                "parameter_size": "7.6B",
                "quantization_level": "Q4_K_M",
            },
        },
        {"name": "llama3.2:latest", "model": "llama3.2:latest", "size": 2019393189},
    ]
}

SHOW = {
    "modelfile": '# Modelfile generated by "ollama show"\nFROM qwen2.5-coder:7b\n',
    "parameters": 'stop "<|im_start|>"\nstop "<|im_end|>"',
    "template": "{{- if .Messages }}...",
    "details": {"format": "gguf", "family": "qwen2", "parameter_size": "7.6B"},
    "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768},
    "capabilities": ["completion", "tools", "insert"],
}


#: ``script(request) -> (content, tool_calls)``; each tool call is ``{"name", "arguments"}``.
Script = Callable[[dict[str, Any]], tuple[str, list[dict[str, Any]]]]


def _scripted_chat(script: Script, request: dict[str, Any]) -> Reply:
    """An Ollama ``/api/chat`` reply built from what ``script`` says for ``request``."""
    content, calls = script(request)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [tool_call(c["name"], c["arguments"]) for c in calls]
    model = request.get("model", "")
    final = {"model": model, "created_at": CREATED_AT, "done": True, "done_reason": "stop"}
    if request.get("stream", True):
        lines = [
            {"model": model, "created_at": CREATED_AT, "message": message, "done": False},
            {**final, "message": {"role": "assistant", "content": ""}},
        ]
        return Reply(200, ndjson(lines), content_type="application/x-ndjson")
    return Reply(200, [json.dumps({**final, "message": message}).encode()])


class FakeModelServer:
    """Serve canned or scripted replies on 127.0.0.1:<free port> from a background thread.

    Use as a context manager (or :meth:`start` / :meth:`close`); ``url`` is the base URL,
    ``queue(method, path, reply)`` adds a canned reply (used before the script), ``received``
    lists every request in arrival order, ``requests`` the bodies of the ``/api/chat`` ones.
    ``capabilities`` is what ``/api/show`` reports for every model (without ``"tools"``: a
    model whose template drops tool definitions).
    """

    def __init__(
        self,
        script: Script | None = None,
        *,
        models: Sequence[str] = ("fake-coder", "fake-small"),
        capabilities: Sequence[str] = ("completion", "tools"),
    ) -> None:
        self.script = script
        self.models = list(models)
        self.capabilities = list(capabilities)
        self._replies: dict[tuple[str, str], deque[Reply]] = defaultdict(deque)
        self._lock = threading.Lock()
        self.received: list[Received] = []
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                reply = server._answer(self.command, self.path, dict(self.headers.items()), body)
                if reply.hold is not None and reply.hold_at is None:
                    reply.hold.wait(10)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for index, chunk in enumerate(reply.chunks):
                        if reply.hold is not None and reply.hold_at == index:
                            reply.hold.wait(30)
                        if chunk:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                            self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    # the client stopped reading (size cap, timeout): expected
                    self.close_connection = True

            do_GET = _handle
            do_POST = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # a short poll interval keeps shutdown() (one per test) fast
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def _answer(self, method: str, path: str, headers: dict[str, str], body: Any) -> Reply:
        with self._lock:
            self.received.append(Received(method, path, headers, body))
            if (method, path) == ("POST", "/api/chat") and isinstance(body, dict):
                self.requests.append(body)
            queue = self._replies[(method, path)]
            reply = queue.popleft() if queue else None
        if reply is not None:
            return reply
        if self.script is not None:
            if (method, path) == ("POST", "/api/chat") and isinstance(body, dict):
                return _scripted_chat(self.script, body)
            if (method, path) == ("GET", "/api/tags"):
                tags = {"models": [{"name": m, "model": m} for m in self.models]}
                return Reply(200, [json.dumps(tags).encode()])
            if (method, path) == ("POST", "/api/show"):
                # A window of 32768 tokens (num_ctx), so a long scripted run fits it.
                show = {
                    "details": {},
                    "capabilities": self.capabilities,
                    "parameters": "num_ctx 32768",
                }
                return Reply(200, [json.dumps(show).encode()])
        return Reply(404, [b"404 page not found"], content_type="text/plain")

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def paths(self) -> list[str]:
        """The request paths received so far, in order."""
        with self._lock:
            return [r.path for r in self.received]

    def queue(self, method: str, path: str, reply: Reply) -> None:
        with self._lock:
            self._replies[(method, path)].append(reply)

    def queue_json(self, method: str, path: str, obj: Any, status: int = 200) -> None:
        self.queue(method, path, Reply(status, [json.dumps(obj).encode()]))

    def queue_stream(self, path: str, lines: Iterable[Any]) -> None:
        self.queue("POST", path, Reply(200, ndjson(lines), content_type="application/x-ndjson"))

    def start(self) -> FakeModelServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def model_servers() -> Iterator[Callable[..., FakeModelServer]]:
    """A server factory for one test: ``start(script=None, models=...)`` starts a server;
    every server it started is shut down on exit. A fixture is one line::

        @pytest.fixture
        def fake_ollama():
            with model_servers() as start:
                yield start
    """
    started: list[FakeModelServer] = []

    def start(script: Script | None = None, **kw: Any) -> FakeModelServer:
        server = FakeModelServer(script, **kw).start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.close()


def tool_names(request: dict[str, Any]) -> set[str]:
    """The names of the tools a chat request offers (empty when it offers none)."""
    return {t["function"]["name"] for t in request.get("tools") or []}


def coder_script(
    calls: Sequence[tuple[str, dict[str, Any]]],
    *,
    plan: str = "Plan: fix the bug.",
    approve: bool = True,
    done: str = "Done.",
    summary: str = "ok",
    findings: Sequence[str] = (),
    hooks: Mapping[str, Callable[[], None]] | None = None,
) -> Script:
    """A whole run's model: the planner says ``plan``; the coder (the role offered
    ``write_file``) makes ``calls`` (``(tool name, arguments)``), one per turn (the count of
    tool results in its request says which), then says ``done``; the reviewer (a request with
    a ``format``) gives ``{"approved": approve, "summary": summary, "findings": findings}``.

    ``hooks`` maps a phase to a callable run once, in the server's thread, before the reply of
    that phase: ``"plan"`` (the planner's request), ``"code"`` (the coder's request after its
    calls, before ``done``) or ``"review"`` (the reviewer's request). A test edits files there,
    or holds the run there (bounded) while it signals Flow, without any sleep.
    """
    pending = dict(hooks or {})

    def hook(phase: str) -> None:
        action = pending.pop(phase, None)
        if action is not None:
            action()

    def answer(request: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        if request.get("format"):
            hook("review")
            verdict = {"approved": approve, "summary": summary, "findings": list(findings)}
            return json.dumps(verdict), []
        if "write_file" not in tool_names(request):
            hook("plan")
            return plan, []
        turn = sum(1 for m in request["messages"] if m["role"] == "tool")
        if turn < len(calls):
            name, args = calls[turn]
            return "", [{"name": name, "arguments": args}]
        hook("code")
        return done, []

    return answer
