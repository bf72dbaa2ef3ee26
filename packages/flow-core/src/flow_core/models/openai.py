"""A ``ChatBackend`` for OpenAI-compatible chat completion servers.

llama.cpp's servers (``llama-server`` and ``python -m llama_cpp.server``), vLLM, LM Studio and
Ollama itself (under ``/v1``) serve this API. The backend follows the same rules as the Ollama
backend (``docs/architecture.md``, "Trust"): a loopback ``base_url`` unless ``allow_remote``, no
environment proxies, no redirects, no credentials of any kind (no API key is looked up and no
``Authorization`` header is sent), and every response body is capped while it arrives.

Wire format (``base_url`` includes the API root, e.g. ``http://127.0.0.1:8080/v1``):

* ``POST {base_url}/chat/completions`` with ``messages``, ``stream: false``, ``tools`` with
  ``tool_choice: "auto"`` when tools are offered, and ``response_format:
  {"type": "json_object", "schema": ...}`` for structured output;
* ``GET {base_url}/models`` for the installed models (``data[].id``).

Server quirks this module works around (measured against ``llama_cpp.server`` 0.3.36 with
``--chat_format chatml-function-calling``):

* an assistant message that carries ``tool_calls`` must have ``content: ""``; a null or
  absent content is answered with HTTP 500, so ``""`` is always sent;
* ``tool_choice: "required"`` is answered with HTTP 500, and without any ``tool_choice`` the
  tools are not shown to the model at all, so ``"auto"`` is sent whenever there are tools;
* ``response_format`` of type ``json_schema`` is refused, while ``json_object`` with a
  ``schema`` field constrains the reply, so the latter is used;
* a prompt longer than the context window is answered with HTTP 400 and code
  ``context_length_exceeded`` ("exceeds the available context size" from ``llama-server``);
  this raises ``BackendError`` code ``prompt_too_long``, which the runtime never answers by
  resending the same or a larger prompt;
* ``chatml-function-calling`` renders a ``tool`` message as an empty line and plain
  ``chatml`` drops it, so tool results are delivered as the ``tool_results`` setting says
  (``flow_core.models._delivery``; ``"auto"`` probes the server's prompt token count);
  plain ``chatml`` also drops the ``tools`` field itself, which ``tool_definitions_reach``
  learns the same way (the prompt count with and without one tool definition).

What the *model* said is never judged here. The OpenAI chat format defines tool-call
``arguments`` as a JSON-encoded string, so a string that decodes to a JSON object is decoded
here (that is the protocol, not a misbehaviour); any other string stays a ``str`` in
``ToolCall.arguments`` so that ``flow_core.models._parse.parse_reply`` classifies it. Unknown tool
names, empty replies and text that looks like a tool call are passed through unchanged.

Errors are ``BackendError`` with the codes of ``BACKEND_ERROR_CODES``: ``backend_unreachable``,
``backend_timeout``, ``backend_http``, ``model_not_found``, ``backend_malformed``,
``response_too_large``, ``redirect_refused``, ``remote_refused`` and ``backend_closed``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flow_core._errors import BackendError
from flow_core._protocols import ChatMessage, ChatResponse
from flow_core.models._base import HTTPBackend, HTTPSettings
from flow_core.models._delivery import PROBE_TOOL, choose, deliver, probe_messages
from flow_core.models._http import (
    HTTPStatusError,
    excerpt,
    make_client,
    monotonic_ms,
    read_capped,
    stream_request,
)
from flow_core.models._openai_wire import (
    error_fields,
    reasoning_of,
    token_count,
    tool_calls_of,
    wire_message,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAIBackend"]

#: ``finish_reason`` values servers send, mapped onto the ones ``ChatResponse`` documents.
_FINISH_REASONS: dict[str, str] = {
    "stop": "stop",
    "eos": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
}


class OpenAIBackend(HTTPBackend):
    """Chat completions over an OpenAI-compatible HTTP API.

    Args:
        settings: the API root including its version path, e.g. ``http://127.0.0.1:8080/v1``
            (``[openai] base_url``), the timeout (a generation that sends nothing for longer
            fails with ``backend_timeout``), reply cap, tool-result delivery (auto probes each
            model once, before its first request that carries a tool result) and model
            options (``HTTPSettings``).
        transport: an ``httpx`` transport (tests pass ``httpx.MockTransport``); ``None`` uses
            the network.

    Raises:
        BackendError: ``remote_refused`` for a non-loopback host without ``allow_remote``;
            ``backend_malformed`` for a URL that cannot be used (no host, user info, query,
            a scheme other than http/https).
    """

    section = "openai"

    def __init__(
        self, settings: HTTPSettings, *, transport: httpx.BaseTransport | None = None
    ) -> None:
        super().__init__(settings)
        self._server = f"the OpenAI-compatible server at {self.base_url}"
        self._fix = (
            "start the server (the bundled model: flow-serve-smollm2, which prints the config "
            "lines to use; another GGUF file: python -m llama_cpp.server --model FILE "
            "--chat_format chatml-function-calling) or fix openai.base_url"
        )
        # The base URL ends in the API root (".../v1"); request paths are relative to it.
        self._client: httpx.Client | None = make_client(
            self.base_url + "/", timeout=self.timeout, transport=transport
        )

    # -- ChatBackend --------------------------------------------------------------------

    def chat(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        format: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> ChatResponse:
        """Send one non-streaming chat completion request.

        Args:
            model: the model name; ``""`` leaves the choice to the server (the field is then
                not sent; single-model servers such as llama.cpp's ignore it anyway).
            messages: the whole context for this turn.
            tools: function schemas (``{"type": "function", "function": {...}}``).
            format: a JSON Schema for the reply's content (structured output), or ``None``.
            options: the request's model options (``ChatBackend.chat``); None: ``options``.

        Returns:
            The first choice, unjudged. ``finish_reason`` is ``"stop"``, ``"length"``,
            ``"tool_calls"`` or ``None`` (absent or a value with no such meaning).

        Raises:
            BackendError: see the module docstring for the codes.
        """
        if any(m.role == "tool" for m in messages):
            messages = deliver(messages, self.tool_delivery(model))
        body = self.request_body(model, messages, tools=tools, format=format)
        body.update(self.wire_options(options))
        started = monotonic_ms()
        raw = self._post_completion(body, model)
        elapsed = monotonic_ms() - started
        return self._parse_completion(raw, model, elapsed)

    def wire_options(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``options`` (None: the backend's own) in the OpenAI form: ``temperature``, ``seed``,
        ``max_tokens``, llama.cpp's ``cache_prompt`` (the window is the server's), and
        ``think``: a bool as ``chat_template_kwargs.enable_thinking``, a level as
        ``reasoning_effort``."""
        opts = self.request_options(options)
        out = {
            ours: opts[key]
            for key, ours in (
                ("temperature", "temperature"),
                ("seed", "seed"),
                ("max_reply_tokens", "max_tokens"),
                ("cache_prompt", "cache_prompt"),
            )
            if key in opts
        }
        think = opts.get("think")
        if isinstance(think, bool):  # llama.cpp's and vLLM's switch for thinking templates
            out["chat_template_kwargs"] = {"enable_thinking": think}
        elif isinstance(think, str):  # "low" | "medium" | "high"
            out["reasoning_effort"] = think
        return out

    def _server_window(self, model: str) -> int | None:
        """llama.cpp's ``GET /props`` (``default_generation_settings.n_ctx``, or ``n_ctx``);
        None when the server does not say (llama-cpp-python's server: set ``context_tokens``)."""
        root = self.base_url.rsplit("/v1", 1)[0] if self.base_url.endswith("/v1") else None
        if root is None or self._client is None:
            return None
        try:
            raw = self._request("GET", root + "/props", None)
            data = json.loads(raw)
        except (BackendError, ValueError, RecursionError):
            return None
        if not isinstance(data, Mapping):
            return None
        settings = data.get("default_generation_settings")
        for source in (settings, data):
            value = source.get("n_ctx") if isinstance(source, Mapping) else None
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return None

    def _probe_delivery(self, model: str) -> str:
        """Two one-token probes (the same conversation with and without a tool result),
        compared by the server's ``usage.prompt_tokens`` (``flow_core.models._delivery.choose``).

        Raises:
            BackendError: a probe request failed.
        """
        counts = [
            self._prompt_tokens(model, probe_messages(with_result=flag)) for flag in (True, False)
        ]
        return choose(*counts)

    def _probe_tools(self, model: str) -> bool:
        """Two one-token probes, one short question with and without a tool definition
        (``flow_core.models._delivery.PROBE_TOOL``): False when the server counted the same
        prompt tokens for both (llama-cpp-python's plain ``chatml`` drops ``tools``); True
        when the count grew at all or the server gave none. Not a share of the tool's size:
        llama-cpp-python's ``chatml-function-calling`` renders the tools but, for a reply
        that is a message, counts only part of the prompt (measured: 12 without, 15 with).

        Raises:
            BackendError: a probe request failed.
        """
        question = [ChatMessage(role="user", content="Say ok.")]
        with_tools, without = (
            self._prompt_tokens(model, question, tools=tools) for tools in ((PROBE_TOOL,), ())
        )
        return with_tools is None or without is None or with_tools > without

    def _prompt_tokens(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> int | None:
        """The server's prompt token count for ``messages`` (one generated token at most)."""
        body = self.request_body(model, messages, tools=tools)
        body["max_tokens"] = 1
        started = monotonic_ms()
        raw = self._post_completion(body, model)
        return self._parse_completion(raw, model, monotonic_ms() - started).prompt_tokens

    def _post_completion(self, body: dict[str, Any], model: str) -> bytes:
        try:
            return self._request("POST", "chat/completions", body)
        except HTTPStatusError as err:
            self._raise_context_overflow(err)
            raise self._recode(err, model) from err

    def list_models(self) -> list[str]:
        """The ids in ``GET {base_url}/models`` (``{"data": [{"id": ...}, ...]}``).

        Raises:
            BackendError: transport and HTTP failures; ``backend_malformed`` for another shape.
        """
        try:
            raw = self._request("GET", "models", None)
        except HTTPStatusError as err:
            if err.status != 404:
                raise
            raise BackendError(f"{err.message}{self._missing_v1_hint()}", code=err.code) from err
        data = self._decode(raw, "GET models")
        entries = data.get("data") if isinstance(data, Mapping) else None
        if not isinstance(entries, list):
            raise self._malformed("GET models", "no 'data' list", raw)
        names: list[str] = []
        for entry in entries:
            ident = entry.get("id") if isinstance(entry, Mapping) else None
            if not isinstance(ident, str) or not ident:
                raise self._malformed("GET models", "an entry without a string 'id'", raw)
            names.append(ident)
        return names

    def close(self) -> None:
        """Close the connection pool (idempotent); later calls raise ``backend_closed``."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    # -- request building ---------------------------------------------------------------

    @staticmethod
    def request_body(
        model: str,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        format: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The JSON body ``chat`` sends (public so that tests and tools can inspect it)."""
        body: dict[str, Any] = {"messages": [wire_message(m) for m in messages]}
        if model:
            body["model"] = model
        body["stream"] = False
        if tools:
            body["tools"] = [dict(t) for t in tools]
            body["tool_choice"] = "auto"
        if format is not None:
            body["response_format"] = {"type": "json_object", "schema": dict(format)}
        return body

    # -- transport ----------------------------------------------------------------------

    def _request(self, method: str, path: str, body: Any) -> bytes:
        client = self._client
        if client is None:
            raise BackendError(f"{self._server}: the backend is closed", code="backend_closed")
        with stream_request(
            client,
            method,
            path,
            json_body=body,
            peer=self._peer,
        ) as response:
            return read_capped(response, self.max_response_bytes, server=self._server)

    def _recode(self, err: HTTPStatusError, model: str) -> BackendError:
        """Turn an HTTP error that means "no such model" into ``model_not_found``."""
        detail = error_fields(err.body)
        code = detail.get("code")
        message = str(detail.get("message", "")).lower()
        if code == "model_not_found" or (
            err.status == 404 and "model" in message and ("not" in message or "exist" in message)
        ):
            return BackendError(
                f"{self._server} has no model {model!r} ({excerpt(message)}); fix: choose an "
                "installed model (see list_models / GET /v1/models) in the operator config",
                code="model_not_found",
            )
        hint = ""
        if err.status >= 500:
            hint = " (the server failed on this request; its log says why)"
        elif err.status == 404:
            hint = self._missing_v1_hint()
        return BackendError(f"{err.message}{hint}", code="backend_http")

    def _missing_v1_hint(self) -> str:
        """For a 404: OpenAI-compatible servers answer under ``/v1``; say so if it is missing."""
        path = self.base_url.split("://", 1)[-1].partition("/")[2].rstrip("/")
        if path.endswith("v1"):
            return ""
        return (
            f"; OpenAI-compatible servers (llama.cpp, vLLM, LM Studio) serve under /v1: "
            f'did you mean base_url = "{self.base_url.rstrip("/")}/v1"?'
        )

    def _raise_context_overflow(self, err: HTTPStatusError) -> None:
        """Raise ``prompt_too_long`` for a server's "the prompt exceeds the window" answer."""
        if err.status not in (400, 413):
            return
        detail = error_fields(err.body)
        message = str(detail.get("message", "")).lower()
        if detail.get("code") != "context_length_exceeded" and not any(
            words in message
            for words in ("context length", "context size", "context window", "too many tokens")
        ):
            return
        raise BackendError(
            f"{self._server} refused the prompt as longer than the model's context window "
            f"({excerpt(message, 200)}); fix: lower agent.max_context_chars, or set the "
            "window (context_tokens) to what the server was started with",
            code="prompt_too_long",
        ) from err

    # -- response parsing ---------------------------------------------------------------

    def _decode(self, raw: bytes, what: str) -> Any:
        try:
            return json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise self._malformed(what, f"not JSON ({exc!r})", raw) from exc

    def _malformed(self, what: str, why: str, raw: bytes) -> BackendError:
        return BackendError(
            f"{self._server} answered {what} with {why}: {excerpt(raw)}; fix: point "
            "openai.base_url at an OpenAI-compatible API root (usually ending in /v1)",
            code="backend_malformed",
        )

    def _parse_completion(self, raw: bytes, model: str, elapsed_ms: float) -> ChatResponse:
        what = "POST chat/completions"
        data = self._decode(raw, what)
        if not isinstance(data, Mapping):
            raise self._malformed(what, "a JSON value that is not an object", raw)
        if "error" in data and "choices" not in data:
            # Some servers report failures with status 200 and an error object.
            raise BackendError(
                f"{self._server} reported an error: {excerpt(json.dumps(data['error']))}",
                code="backend_http",
            )
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise self._malformed(what, "no 'choices' list with an object in it", raw)
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, Mapping):
            raise self._malformed(what, "a choice without a 'message' object", raw)
        content = message.get("content")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise self._malformed(what, "a message whose 'content' is not a string", raw)
        calls = tool_calls_of(message)
        if calls is None:
            raise self._malformed(what, "a 'tool_calls' entry of the wrong shape", raw)
        finish = choice.get("finish_reason")
        usage = data.get("usage")
        usage = usage if isinstance(usage, Mapping) else {}
        reported = data.get("model")
        return ChatResponse(
            content=content,
            tool_calls=calls,
            finish_reason=_FINISH_REASONS.get(finish) if isinstance(finish, str) else None,
            model=reported if isinstance(reported, str) and reported else model,
            duration_ms=elapsed_ms,
            prompt_tokens=token_count(usage.get("prompt_tokens")),
            completion_tokens=token_count(usage.get("completion_tokens")),
            reasoning=reasoning_of(message),
        )
