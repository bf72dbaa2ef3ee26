"""A loopback server that speaks Ollama's native API, answered by a real model.

Ollama itself cannot be installed on the machines that run Flow's tests, but Flow's
``OllamaBackend`` must still meet real model output. This shim serves the documented Ollama
endpoints and forwards each chat to an OpenAI-compatible server (llama.cpp's, see
``modelserver.py``), translating both ways:

* ``POST /api/chat``: ``messages`` (with ``tool_calls`` whose ``arguments`` are objects, and
  ``tool`` messages), ``tools``, ``format`` (``"json"`` or a JSON Schema), ``stream``
  (default true). Streaming replies are NDJSON: content fragments with ``"done": false``, a
  line with the ``tool_calls``, and a final ``"done": true`` line with ``done_reason``,
  ``total_duration`` (ns), ``prompt_eval_count`` and ``eval_count``. Non-streaming replies are
  one object of the same final shape with the whole ``message``.
* ``GET /api/tags``: the one model, with ``name``, ``model``, ``size``, ``digest`` and
  ``details``.
* ``POST /api/show``: ``details``, ``model_info`` (with the context length) and
  ``capabilities``.
* An unknown model gets HTTP 404 ``{"error": "model 'NAME' not found"}``, as Ollama answers.

The upstream request is not streamed (llama.cpp's tool calling answers whole); the shim then
splits the real reply into fragments so the client's stream reader is exercised. Arguments
the model wrote as invalid JSON are passed on as the raw string (real Ollama would fail the
request instead), which lets Flow's reply classifier see them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

#: ``done_reason`` for each OpenAI ``finish_reason`` (Ollama says "stop" after tool calls too).
_DONE_REASON = {"stop": "stop", "length": "length", "tool_calls": "stop", "function_call": "stop"}
#: Largest request body accepted, in bytes.
MAX_REQUEST_BYTES = 8_000_000


class OllamaShim:
    """``with OllamaShim(upstream_base_url, model) as shim:`` serves ``shim.url``.

    Args:
        upstream: the OpenAI-compatible API root (``http://127.0.0.1:PORT/v1``).
        models: published Ollama model name → the upstream model name to request (one
            entry per "installed" model).
        n_ctx: the context length reported by ``/api/show``.
        timeout: seconds for one upstream request.

    Attributes:
        url: ``http://127.0.0.1:PORT`` once started (Flow's ``[ollama] base_url``).
        requests: ``(method, path, body)`` of every request served, for assertions.
    """

    def __init__(
        self,
        upstream: str,
        models: Mapping[str, str],
        *,
        n_ctx: int = 8192,
        timeout: float = 900.0,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.models = dict(models)
        self.n_ctx = n_ctx
        self.timeout = timeout
        self.requests: list[tuple[str, str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def start(self) -> OllamaShim:
        shim = self

        class Handler(_Handler):
            owner = shim

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="ollama-shim", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> OllamaShim:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, method: str, path: str, body: Any) -> None:
        with self._lock:
            self.requests.append((method, path, body))

    # -- translation ----------------------------------------------------------------------

    def upstream_name(self, name: Any) -> str | None:
        """The upstream model for a requested Ollama name (``NAME`` or ``NAME:latest``)."""
        if not isinstance(name, str):
            return None
        return self.models.get(name) or self.models.get(name.removesuffix(":latest"))

    def tags(self) -> dict[str, Any]:
        return {
            "models": [
                {
                    "name": name,
                    "model": name,
                    "modified_at": _now(),
                    "size": 0,
                    "digest": hashlib.sha256(name.encode()).hexdigest(),
                    "details": _details(),
                }
                for name in self.models
            ]
        }

    def show(self) -> dict[str, Any]:
        return {
            "modelfile": f"# served by Flow's e2e shim from {self.upstream}\n",
            "parameters": f"num_ctx {self.n_ctx}",
            "template": "{{ .Prompt }}",
            "details": _details(),
            "model_info": {
                "general.architecture": "llama",
                "general.parameter_count": 134515008,
                "llama.context_length": self.n_ctx,
            },
            "capabilities": ["completion", "tools"],
            "modified_at": _now(),
        }

    def chat(self, body: Mapping[str, Any]) -> tuple[dict[str, Any], float]:
        """Forward one ``/api/chat`` body; returns the final Ollama message object and ns."""
        upstream: dict[str, Any] = {
            "model": self.upstream_name(body.get("model")),
            "messages": _openai_messages(body.get("messages") or []),
            "stream": False,
        }
        tools = body.get("tools")
        if tools:
            upstream["tools"] = tools
            upstream["tool_choice"] = "auto"
        fmt = body.get("format")
        if fmt == "json":
            upstream["response_format"] = {"type": "json_object"}
        elif isinstance(fmt, Mapping):
            upstream["response_format"] = {"type": "json_object", "schema": fmt}
        options = body.get("options")
        if isinstance(options, Mapping):
            for src, dst in (
                ("temperature", "temperature"),
                ("num_predict", "max_tokens"),
                ("seed", "seed"),
            ):
                if src in options:
                    upstream[dst] = options[src]
        started = time.monotonic_ns()
        with httpx.Client(timeout=self.timeout, trust_env=False) as client:
            response = client.post(self.upstream + "/chat/completions", json=upstream)
        elapsed = time.monotonic_ns() - started
        if response.status_code != 200:
            raise _UpstreamError(response.status_code, response.text)
        data = response.json()
        choice = data["choices"][0]
        message = choice.get("message") or {}
        calls = []
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            args = fn.get("arguments")
            if isinstance(args, str):
                with contextlib.suppress(ValueError):
                    args = json.loads(args) if args.strip() else {}
            calls.append({"function": {"name": fn.get("name"), "arguments": args}})
        usage = data.get("usage") or {}
        final = {
            "model": body.get("model"),
            "created_at": _now(),
            "message": {"role": "assistant", "content": message.get("content") or ""},
            "done_reason": _DONE_REASON.get(choice.get("finish_reason") or "stop", "stop"),
            "done": True,
            "total_duration": elapsed,
            "load_duration": 0,
            "prompt_eval_count": usage.get("prompt_tokens", 0),
            "eval_count": usage.get("completion_tokens", 0),
        }
        if calls:
            final["message"]["tool_calls"] = calls
        return final, elapsed


class _UpstreamError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"upstream HTTP {status}: {text[:500]}")
        self.status = status


class _Handler(BaseHTTPRequestHandler):
    owner: OllamaShim
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, status: int, data: Any) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_REQUEST_BYTES:
            raise ValueError("request too large")
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw else {}

    def do_GET(self) -> None:
        self.owner.record("GET", self.path, None)
        if self.path == "/api/tags":
            self._json(200, self.owner.tags())
        elif self.path == "/api/version":
            self._json(200, {"version": "0.0.0-flow-e2e-shim"})
        elif self.path == "/":
            self._text(200, "Ollama is running")
        else:
            self._json(404, {"error": "not found"})

    def _text(self, status: int, text: str) -> None:
        raw = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:
        try:
            body = self._body()
        except ValueError as err:
            self._json(400, {"error": f"invalid request body: {err}"})
            return
        self.owner.record("POST", self.path, body)
        if not isinstance(body, dict):
            self._json(400, {"error": "request body must be a JSON object"})
            return
        if self.path == "/api/show":
            name = body.get("model", body.get("name"))
            if self.owner.upstream_name(name) is None:
                self._json(404, {"error": f"model '{name}' not found"})
                return
            self._json(200, self.owner.show())
            return
        if self.path != "/api/chat":
            self._json(404, {"error": "not found"})
            return
        name = body.get("model")
        if self.owner.upstream_name(name) is None:
            self._json(404, {"error": f"model '{name}' not found, try pulling it first"})
            return
        try:
            final, _ = self.owner.chat(body)
        except _UpstreamError as err:
            self._json(500, {"error": str(err)})
            return
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as err:
            self._json(500, {"error": f"upstream failed: {type(err).__name__}: {err}"})
            return
        if body.get("stream", True) is False:
            self._json(200, final)
            return
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        for line in _stream_lines(final):
            self.wfile.write(json.dumps(line).encode() + b"\n")
            self.wfile.flush()


def _stream_lines(final: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The final reply cut into Ollama stream lines (fragments, tool calls, done line)."""
    message = final["message"]
    base = {"model": final["model"]}
    content = message.get("content") or ""
    for piece in _fragments(content):
        yield {
            **base,
            "created_at": _now(),
            "message": {"role": "assistant", "content": piece},
            "done": False,
        }
    if message.get("tool_calls"):
        yield {
            **base,
            "created_at": _now(),
            "message": {"role": "assistant", "content": "", "tool_calls": message["tool_calls"]},
            "done": False,
        }
    last = dict(final)
    last["message"] = {"role": "assistant", "content": ""}
    last["created_at"] = _now()
    yield last


def _fragments(text: str, size: int = 16) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i : i + size]


def _openai_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """Ollama chat messages in the OpenAI format llama.cpp's server accepts."""
    out: list[dict[str, Any]] = []
    pending: list[tuple[str, str]] = []  # (call id, tool name) not answered yet
    counter = 0
    for m in messages:
        role = m.get("role")
        content = m.get("content") or ""
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            for call in m["tool_calls"]:
                fn = call.get("function") or {}
                counter += 1
                ident = call.get("id") or f"call_{counter}"
                args = fn.get("arguments", {})
                calls.append(
                    {
                        "id": ident,
                        "type": "function",
                        "function": {
                            "name": fn.get("name", ""),
                            "arguments": args if isinstance(args, str) else json.dumps(args),
                        },
                    }
                )
                pending.append((ident, fn.get("name", "")))
            # llama.cpp's server answers HTTP 500 when this content is null or absent.
            out.append({"role": "assistant", "content": content, "tool_calls": calls})
        elif role == "tool":
            name = m.get("tool_name") or m.get("name")
            match = next((p for p in pending if name is None or p[1] == name), None)
            if match is not None:
                pending.remove(match)
            ident = match[0] if match else f"call_{counter + 1}"
            out.append({"role": "tool", "content": content, "tool_call_id": ident})
        else:
            out.append({"role": role, "content": content})
    return out


def _details() -> dict[str, Any]:
    return {
        "parent_model": "",
        "format": "gguf",
        "family": "llama",
        "families": ["llama"],
        "parameter_size": "135M",
        "quantization_level": "Q4_1",
    }


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")
