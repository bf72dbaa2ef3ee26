"""Guided tool calls: each reply constrained to one of the role's calls or a final answer.

Where the server supports constrained decoding (a JSON Schema for the reply: Ollama's
``format``, llama.cpp's ``response_format`` schema, both sent through ``ChatBackend.chat``'s
``format``), a small model cannot write a malformed call, call a tool it was not offered or
name a file that does not exist (``docs/architecture.md``, "Guided tool calls"). The reply is
one JSON object:

* ``{"tool": NAME, "arguments": {...}}``: one call, its arguments valid against the tool's own
  parameters, where a ``path`` that must name an existing file is one of the workspace's
  files (``Workspace.walk``, at most ``MAX_GUIDED_FILES``; more files: any string);
* ``{"answer": TEXT}``: the role's final answer.

``unwrap`` turns that object back into a structured call or plain text, so the rest of the
role loop sees what a native tool-calling server would have sent; a reply that is not such an
object (a server that ignored the schema) is left as it is, for ``parse_reply``.

The mode is the ``guided`` model option (``[ollama.options]``, ``[openai.options]``,
``[models.options.ROLE]``): ``"off"`` (the default), ``"on"``, or ``"auto"``: one short probe
per run and model (``probe_format``) asks for an object only a constrained server produces,
and guided calls are used where it came back exactly. A role with a reply schema of its own
(the reviewer) or without tools is never guided. The report says which mode each role used
(``roles.ROLE.guided``).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flow_core._protocols import ChatMessage, ChatResponse, ToolCall

if TYPE_CHECKING:
    from flow_safeio import Workspace

__all__ = [
    "MAX_GUIDED_FILES",
    "PROBE_VALUE",
    "guided_format",
    "probe_format",
    "probe_messages",
    "probe_passed",
    "unwrap",
]

#: Most workspace files listed as the allowed values of an existing-file ``path``.
MAX_GUIDED_FILES = 300
#: Tools whose ``path`` must name an existing file.
_EXISTING_FILE_TOOLS = frozenset({"read_file", "outline", "edit_file"})
#: The value the ``auto`` probe's schema requires: no model writes it unconstrained.
PROBE_VALUE = "flow-guided-probe-4f1c"


def guided_format(schemas: Sequence[Mapping[str, Any]], workspace: Workspace) -> dict[str, Any]:
    """The reply schema for a role offered ``schemas`` (function-tool form), in ``workspace``."""
    files = list(workspace.walk(".", limit=MAX_GUIDED_FILES + 1))
    choices: list[dict[str, Any]] = []
    for schema in schemas:
        function = schema.get("function", {})
        name = str(function.get("name", ""))
        params = dict(function.get("parameters") or {"type": "object", "properties": {}})
        if name in _EXISTING_FILE_TOOLS and len(files) <= MAX_GUIDED_FILES and files:
            props = dict(params.get("properties") or {})
            if "path" in props:
                props["path"] = {"type": "string", "enum": files}
                params["properties"] = props
        choices.append(_object({"tool": {"type": "string", "const": name}, "arguments": params}))
    choices.append(_object({"answer": {"type": "string"}}))
    return {"anyOf": choices}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def unwrap(response: ChatResponse) -> ChatResponse:
    """A guided reply as a structured call or plain text; any other reply unchanged."""
    if response.tool_calls:
        return response
    try:
        value = json.loads(response.content)
    except (ValueError, RecursionError):
        return response
    if not isinstance(value, dict):
        return response
    if set(value) == {"answer"} and isinstance(value["answer"], str):
        return _replace(response, content=value["answer"], calls=())
    tool, args = value.get("tool"), value.get("arguments")
    if set(value) == {"tool", "arguments"} and isinstance(tool, str) and isinstance(args, dict):
        call = ToolCall(id="guided_" + uuid.uuid4().hex[:12], name=tool, arguments=args)
        return _replace(response, content="", calls=(call,))
    return response


def _replace(response: ChatResponse, *, content: str, calls: tuple[ToolCall, ...]) -> ChatResponse:
    return dataclasses.replace(response, content=content, tool_calls=calls)


def probe_format() -> dict[str, Any]:
    """The ``auto`` probe's schema: an object whose one key holds ``PROBE_VALUE``."""
    return _object({"probe": {"type": "string", "const": PROBE_VALUE}})


def probe_messages() -> list[ChatMessage]:
    """The ``auto`` probe's conversation (one short user message)."""
    return [ChatMessage(role="user", content="Reply with a JSON object.")]


def probe_passed(response: ChatResponse) -> bool:
    """Whether the probe's reply is exactly the object only a constrained server writes."""
    try:
        value = json.loads(response.content)
    except (ValueError, RecursionError):
        return False
    return bool(value == {"probe": PROBE_VALUE})
