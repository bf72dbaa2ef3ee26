"""``OllamaBackend``: Ollama's native HTTP API over httpx.

Endpoints: ``POST /api/chat`` (``messages``, ``tools``, ``format``, ``stream``),
``GET /api/tags`` (installed models) and ``POST /api/show`` (one model's details). A streamed
chat reply is newline-delimited JSON: each line carries a ``message`` fragment, and the last one
has ``"done": true`` with ``done_reason``, ``prompt_eval_count`` and ``eval_count``.

Safety rules (``docs/architecture.md``, "Trust"): loopback unless ``allow_remote``, no environment
proxies, no redirects, the reply's bytes counted against a cap while they arrive, one timeout
in seconds.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flow_core._errors import BackendError
from flow_core._protocols import ChatMessage, ChatResponse, ToolCall, note_stream_fragment
from flow_core.models._base import HTTPBackend, HTTPSettings
from flow_core.models._delivery import deliver
from flow_core.models._http import (
    HTTPStatusError,
    excerpt,
    iter_lines_capped,
    make_client,
    monotonic_ms,
    read_capped,
    stream_request,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["OllamaBackend"]

#: The window Ollama gives a model when no ``num_ctx`` is set (tokens).
_OLLAMA_DEFAULT_CTX = 4096


class OllamaBackend(HTTPBackend):
    """A ``ChatBackend`` for an Ollama server.

    Args:
        settings: the server's URL (its root, e.g. ``http://127.0.0.1:11434``), timeout,
            reply cap, tool-result delivery and model options (``HTTPSettings``); under
            ``tool_results="auto"`` the backend asks ``/api/show`` once per model: a model
            without the ``tools`` capability, or whose template never mentions the tool role,
            gets results as user messages.
        transport: an ``httpx`` transport (tests: ``httpx.MockTransport``); None for the network.
        stream: ask Ollama to stream (NDJSON) rather than send one JSON object.

    Raises:
        BackendError: code ``remote_refused`` for a non-loopback URL without ``allow_remote``
            (checked here as well as at config load), ``backend_malformed`` for an unusable URL.
        ValueError: for a non-positive ``timeout`` or ``max_response_bytes``.

    Every request method raises ``BackendError`` with one of the codes in
    ``BACKEND_ERROR_CODES``: ``backend_unreachable``, ``backend_timeout``, ``backend_http``,
    ``model_not_found``, ``backend_malformed``, ``response_too_large``, ``redirect_refused``.
    """

    section = "ollama"

    def __init__(
        self,
        settings: HTTPSettings,
        *,
        transport: httpx.BaseTransport | None = None,
        stream: bool = True,
    ) -> None:
        super().__init__(settings)
        self.stream = stream
        self._server = f"Ollama at {self.base_url}"
        self._fix = "start `ollama serve` or fix ollama.base_url in the operator config"
        self._ids = itertools.count(1)
        self._closed = False
        self._shown: dict[str, dict[str, Any]] = {}
        self._client = make_client(self.base_url, timeout=self.timeout, transport=transport)

    # ----------------------------------------------------------------------------------------
    # ChatBackend

    def chat(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        format: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> ChatResponse:
        """``POST /api/chat``: one model turn.

        Args:
            model: an installed model name.
            messages: the whole context.
            tools: function-style tool schemas, sent as ``tools``.
            format: a JSON Schema for structured output, sent as ``format``.
            options: the request's model options (``ChatBackend.chat``); None: ``options``.

        Returns:
            The reply; streamed fragments are joined, tool calls collected, ``done_reason``
            becomes ``finish_reason``, ``prompt_eval_count``/``eval_count`` the token counts.

        Raises:
            BackendError: see the class docstring; ``model_not_found`` when Ollama says the
                model is not installed.
        """
        if any(m.role == "tool" for m in messages):
            messages = deliver(messages, self.tool_delivery(model))
        body: dict[str, Any] = {
            "model": model,
            "messages": [self._wire_message(m) for m in messages],
            "stream": self.stream,
        }
        if tools:
            body["tools"] = [dict(t) for t in tools]
        if format is not None:
            body["format"] = dict(format)
        body.update(self.wire_options(options))
        started = monotonic_ms()
        reply = self._post_chat(body, model)
        return ChatResponse(
            content=reply.content,
            tool_calls=reply.tool_calls,
            finish_reason=reply.finish_reason,
            model=reply.model or model,
            duration_ms=monotonic_ms() - started,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            reasoning=reply.reasoning,
        )

    def _post_chat(self, body: Mapping[str, Any], model: str) -> ChatResponse:
        """Send one ``/api/chat`` body and read the reply, streamed or whole (``model``
        names the model in errors).

        Raises:
            BackendError: see the class docstring.
        """
        try:
            with stream_request(
                self._open_client(),
                "POST",
                "/api/chat",
                json_body=body,
                peer=self._peer,
            ) as response:
                if self.stream:
                    return self._read_stream(response, model)
                raw = read_capped(response, self.max_response_bytes, server=self._server)
                return self._read_single(raw, model)
        except HTTPStatusError as err:
            raise self._recode(err, model) from err

    def list_models(self) -> list[str]:
        """``GET /api/tags``: names of the installed models.

        Raises:
            BackendError: see the class docstring.
        """
        data = self._json_request("GET", "/api/tags", None, model=None)
        models = data.get("models")
        if not isinstance(models, list):
            raise self._malformed("/api/tags", "no 'models' list", data)
        names: list[str] = []
        for item in models:
            name = item.get("name", item.get("model")) if isinstance(item, Mapping) else None
            if not isinstance(name, str):
                raise self._malformed("/api/tags", "a model entry without a name", item)
            names.append(name)
        return names

    def show(self, model: str) -> dict[str, Any]:
        """``POST /api/show``: a model's details (``details``, ``capabilities``, ...).

        Raises:
            BackendError: ``model_not_found`` for a model Ollama does not have; otherwise see
                the class docstring.
        """
        return self._json_request("POST", "/api/show", {"model": model}, model=model)

    def _details(self, model: str) -> dict[str, Any]:
        """``show(model)``, asked once per model for the window and the two probes (a failed
        answer is not kept).

        Raises:
            BackendError: as ``show``.
        """
        if model not in self._shown:
            self._shown[model] = self.show(model)
        return self._shown[model]

    def wire_options(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``options`` (None: the backend's own) in Ollama's form: ``options`` (``num_ctx``,
        ``temperature``, ``seed``, ``num_predict``) and a top-level ``keep_alive``."""
        opts = dict(self.request_options(options))
        wire = {
            ours: opts[key]
            for key, ours in (
                ("context_tokens", "num_ctx"),
                ("temperature", "temperature"),
                ("seed", "seed"),
                ("max_reply_tokens", "num_predict"),
            )
            if key in opts
        }
        out: dict[str, Any] = {"options": wire} if wire else {}
        if "keep_alive" in opts:
            out["keep_alive"] = opts["keep_alive"]
        if "think" in opts:  # a thinking model: reasoning apart, in message.thinking
            out["think"] = opts["think"]
        return out

    def _server_window(self, model: str) -> int | None:
        """``num_ctx`` from ``/api/show``'s ``parameters``, else Ollama's default of 4096, never
        more than the model's own ``*.context_length``; None when ``/api/show`` fails."""
        try:
            info = self._details(model)
        except BackendError:
            return None
        window = _OLLAMA_DEFAULT_CTX
        params = info.get("parameters")
        if isinstance(params, str):
            for line in params.splitlines():
                name, _, value = line.strip().partition(" ")
                if name == "num_ctx" and value.strip().isdigit():
                    window = int(value.strip())
        model_info = info.get("model_info")
        if isinstance(model_info, Mapping):
            for key, value in model_info.items():
                if str(key).endswith(".context_length") and isinstance(value, int) and value > 0:
                    window = min(window, value)
        return window

    def _probe_delivery(self, model: str) -> str:
        """``"user"`` when ``/api/show`` lists capabilities without ``tools`` or a template
        that never names the tool role; ``"native"`` otherwise, also when ``/api/show`` cannot
        be asked (the chat request then reports the real problem)."""
        try:
            info = self._details(model)
        except BackendError:
            info = {}
        caps = info.get("capabilities")
        template = info.get("template")
        no_tools = isinstance(caps, list) and "tools" not in caps
        blind = isinstance(template, str) and bool(template) and "tool" not in template
        return "user" if no_tools or blind else "native"

    def _probe_tools(self, model: str) -> bool:
        """False when ``/api/show`` lists capabilities without ``tools`` (Ollama then refuses a
        request with tools), or, where it lists none, a template that never renders
        ``.Tools``; True otherwise.

        Raises:
            BackendError: ``/api/show`` failed (``tool_definitions_reach`` then says True).
        """
        info = self._details(model)
        caps = info.get("capabilities")
        if isinstance(caps, list):
            return "tools" in caps
        template = info.get("template")
        return not (isinstance(template, str) and template and ".Tools" not in template)

    def close(self) -> None:
        """Close the HTTP client (idempotent); later requests raise ``backend_closed``."""
        self._closed = True
        self._client.close()

    def _open_client(self) -> httpx.Client:
        if self._closed:
            raise BackendError(f"{self._server}: the backend is closed", code="backend_closed")
        return self._client

    # ----------------------------------------------------------------------------------------
    # Wire format

    @staticmethod
    def _wire_message(m: ChatMessage) -> dict[str, Any]:
        out: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.role == "assistant" and m.tool_calls:
            out["tool_calls"] = [
                {"function": {"name": c.name, "arguments": _as_object(c.arguments)}}
                for c in m.tool_calls
            ]
        if m.role == "tool" and m.name:
            out["tool_name"] = m.name
        return out

    def _read_stream(self, response: httpx.Response, model: str) -> ChatResponse:
        parts: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCall] = []
        final: Mapping[str, Any] | None = None
        for number, line in enumerate(
            iter_lines_capped(response, self.max_response_bytes, server=self._server), start=1
        ):
            chunk = self._decode(line, f"/api/chat line {number}")
            self._raise_embedded_error(chunk, model)
            message = chunk.get("message")
            if message is not None:
                text, more = self._message_parts(message)
                parts.append(text)
                calls.extend(more)
                thinking = _thinking(message)
                thoughts.append(thinking)
                if text or more or thinking:  # the closing "done" line carries an empty message
                    note_stream_fragment(len(text) + len(thinking))
            if chunk.get("done") is True:
                final = chunk
                break
        if final is None:
            raise BackendError(
                f"{self._server} ended the /api/chat stream without a final "
                '"done": true line (the reply may be incomplete)',
                code="backend_malformed",
            )
        return self._response("".join(parts), calls, final, "".join(thoughts))

    def _read_single(self, raw: bytes, model: str) -> ChatResponse:
        data = self._decode(raw, "/api/chat")
        self._raise_embedded_error(data, model)
        message = data.get("message")
        if message is None:
            raise self._malformed("/api/chat", "no 'message' object", data)
        text, calls = self._message_parts(message)
        return self._response(text, calls, data, _thinking(message))

    @staticmethod
    def _response(
        text: str, calls: list[ToolCall], final: Mapping[str, Any], thinking: str = ""
    ) -> ChatResponse:
        reason = final.get("done_reason")
        model = final.get("model")
        return ChatResponse(
            content=text,
            tool_calls=tuple(calls),
            finish_reason=reason if isinstance(reason, str) and reason else None,
            model=model if isinstance(model, str) else "",
            prompt_tokens=_count(final.get("prompt_eval_count")),
            completion_tokens=_count(final.get("eval_count")),
            reasoning=thinking,
        )

    def _message_parts(self, message: Any) -> tuple[str, list[ToolCall]]:
        if not isinstance(message, Mapping):
            raise self._malformed("/api/chat", "'message' is not an object", message)
        content = message.get("content", "")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise self._malformed("/api/chat", "'message.content' is not a string", message)
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise self._malformed("/api/chat", "'message.tool_calls' is not a list", message)
        calls: list[ToolCall] = []
        for item in raw_calls:
            fn = item.get("function") if isinstance(item, Mapping) else None
            name = fn.get("name") if isinstance(fn, Mapping) else None
            if not isinstance(fn, Mapping) or not isinstance(name, str):
                raise self._malformed("/api/chat", "a tool call without a function name", item)
            args = fn.get("arguments")
            arguments: dict[str, Any] | str
            if args is None:
                arguments = {}
            elif isinstance(args, dict | str):
                arguments = args
            else:  # a list or a number: keep it as JSON text for parse_reply to classify
                arguments = json.dumps(args)
            given = item.get("id")
            call_id = given if isinstance(given, str) and given else f"ollama_{next(self._ids)}"
            calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
        return content, calls

    # ----------------------------------------------------------------------------------------
    # Errors

    def _json_request(
        self, method: str, path: str, body: Any, *, model: str | None
    ) -> dict[str, Any]:
        try:
            with stream_request(
                self._open_client(),
                method,
                path,
                json_body=body,
                peer=self._peer,
            ) as response:
                raw = read_capped(response, self.max_response_bytes, server=self._server)
        except HTTPStatusError as err:
            raise self._recode(err, model) from err
        return self._decode(raw, path)

    def _decode(self, raw: bytes, where: str) -> dict[str, Any]:
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as err:
            raise BackendError(
                f"{self._server} sent malformed JSON in {where}: {type(err).__name__}: "
                f"{excerpt(str(err), 120)}; "
                f"received: {excerpt(raw, 200)}",
                code="backend_malformed",
            ) from err
        if not isinstance(data, dict):
            raise self._malformed(where, "the reply is not a JSON object", data)
        return data

    def _malformed(self, where: str, what: str, data: Any) -> BackendError:
        return BackendError(
            f"{self._server} sent an unexpected reply to {where}: {what} "
            f"(received: {excerpt(json.dumps(data, default=str), 200)})",
            code="backend_malformed",
        )

    def _raise_embedded_error(self, data: Mapping[str, Any], model: str) -> None:
        err = data.get("error")
        if err is None:
            return
        text = str(err)
        if _says_model_missing(text):
            raise self._model_missing(model, text)
        raise BackendError(
            f"{self._server} reported an error: {excerpt(text)}", code="backend_http"
        )

    def _recode(self, err: HTTPStatusError, model: str | None) -> BackendError:
        if model is not None and err.status == 404:
            try:
                detail = json.loads(err.body).get("error", "")
            except (ValueError, AttributeError, RecursionError):
                detail = ""
            if isinstance(detail, str) and _says_model_missing(detail):
                return self._model_missing(model, detail)
        return err

    def _model_missing(self, model: str, detail: str) -> BackendError:
        return BackendError(
            f"model {model!r} is not installed in {self._server} ({excerpt(detail, 200)}): "
            f"run `ollama pull {model}` or choose an installed model (see `ollama list`)",
            code="model_not_found",
        )


def _says_model_missing(text: str) -> bool:
    low = text.lower()
    return "not found" in low and ("model" in low or "pull" in low)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _as_object(arguments: dict[str, Any] | str) -> dict[str, Any]:
    """Ollama wants arguments as an object; decode a JSON string when it holds one."""
    if isinstance(arguments, dict):
        return arguments
    try:
        decoded = json.loads(arguments, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return {}
    return decoded if isinstance(decoded, dict) else {}


def _no_constant(name: str) -> Any:
    """NaN and Infinity are not JSON (RFC 8259): such arguments are not sent back."""
    raise ValueError(f"{name} is not a JSON number")


def _thinking(message: Any) -> str:
    """A message's ``thinking`` text (a thinking model's reasoning), "" when none."""
    value = message.get("thinking") if isinstance(message, Mapping) else None
    return value if isinstance(value, str) else ""
