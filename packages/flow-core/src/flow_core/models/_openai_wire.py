"""The OpenAI chat format, message by message: what ``OpenAIBackend`` sends and what it reads.

A ``ChatMessage`` as the wire's JSON object, a reply message's tool calls (the ``arguments``
string decoded when it is a JSON object, as the protocol defines; anything else left a string
for ``parse_reply``), its reasoning text, token counts and the fields of an error body. The
server quirks these follow are listed in ``flow_core.models.openai``'s docstring.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from flow_core._protocols import ChatMessage, ToolCall

__all__ = [
    "decode_arguments",
    "error_fields",
    "reasoning_of",
    "token_count",
    "tool_calls_of",
    "wire_message",
]


def wire_message(message: ChatMessage) -> dict[str, Any]:
    """One ``ChatMessage`` in the OpenAI chat format."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        # llama.cpp's server answers HTTP 500 when this content is null or absent.
        out["content"] = message.content or ""
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments
                    if isinstance(call.arguments, str)
                    else json.dumps(call.arguments, ensure_ascii=False),
                },
            }
            for call in message.tool_calls
        ]
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id or ""
    return out


def tool_calls_of(message: Mapping[str, Any]) -> tuple[ToolCall, ...] | None:
    """The message's tool calls; ``None`` when they are not of the documented shape.

    The legacy single ``function_call`` field is read only when ``tool_calls`` is absent
    (llama.cpp sends both for one call).
    """
    raw_calls = message.get("tool_calls")
    if raw_calls is None:
        legacy = message.get("function_call")
        if legacy is None:
            return ()
        raw_calls = [{"function": legacy}]
    if not isinstance(raw_calls, list):
        return None
    calls: list[ToolCall] = []
    for entry in raw_calls:
        if not isinstance(entry, Mapping):
            return None
        function = entry.get("function")
        if not isinstance(function, Mapping):
            return None
        name = function.get("name")
        if not isinstance(name, str):
            return None
        arguments = function.get("arguments", "")
        if arguments is None:
            arguments = ""
        if isinstance(arguments, Mapping):
            arguments = dict(arguments)
        elif isinstance(arguments, str):
            arguments = decode_arguments(arguments)
        else:
            return None
        ident = entry.get("id")
        if not isinstance(ident, str) or not ident:
            ident = "call_" + uuid.uuid4().hex[:12]
        calls.append(ToolCall(id=ident, name=name, arguments=arguments))
    return tuple(calls)


def decode_arguments(text: str) -> dict[str, Any] | str:
    """The JSON object an OpenAI ``arguments`` string encodes, or the string itself.

    A string that is not a JSON object (malformed, a list, too deeply nested) is returned
    unchanged for ``parse_reply`` to classify as ``invalid_arguments``.
    """
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return value if isinstance(value, dict) else text


def error_fields(body: bytes) -> dict[str, Any]:
    """``{"code", "message"}`` of an OpenAI-style error body (``{"error": {...}}``)."""
    try:
        data = json.loads(body)
    except ValueError:
        return {"message": body.decode("utf-8", "replace")}
    if not isinstance(data, Mapping):
        return {}
    err = data.get("error", data)
    if isinstance(err, str):
        return {"message": err}
    if isinstance(err, Mapping):
        return {"code": err.get("code"), "message": err.get("message") or err.get("detail", "")}
    return {}


def token_count(value: Any) -> int | None:
    """A token count as servers send it: a non-negative integer, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def reasoning_of(message: Mapping[str, Any]) -> str:
    """The message's reasoning text (``reasoning_content``, or ``reasoning``), "" when none."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""
