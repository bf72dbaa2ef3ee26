"""Reading a model reply: tool calls recovered and every misbehaviour classified.

Small local models often break the tool-calling protocol (DESIGN: "Backends"; issue 3, "Model
backend"). ``parse_reply`` turns one ``ChatResponse`` into a ``ParsedReply`` whose tool calls
are all known tools with object arguments, and a list of ``ReplyIssue`` entries, one per
misbehaviour. The runtime charges each issue to the budget and never counts a reply with an
issue as a role's successful end by accident.

Issue codes (``REPLY_ISSUE_CODES``):

- ``text_tool_call``: a call written as text in ``content`` (a bare JSON object or array with
  ``name`` and ``arguments``/``parameters``, a fenced JSON block, ``<tool_call>...</tool_call>``,
  ``<function=NAME>{json}</function>`` or ``<function=NAME><parameter=K>V</parameter>
  </function>``). The call is recovered and the text removed from ``text``.
- ``arguments_as_string``: arguments sent as a JSON string; decoded when it holds an object.
- ``invalid_arguments``: arguments that are not an object; the call is dropped.
- ``unknown_tool``: a name outside ``tool_names``; the call is dropped.
- ``empty_reply``: no content and no tool calls.
- ``reply_too_large``: content over ``max_chars``; truncated.
- ``context_overflow``: ``finish_reason == "length"``: the reply was cut short.

Dropped calls keep their id in the issue, so the runtime can answer the model's call with an
error message.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from flow_core._protocols import ChatResponse, ToolCall

__all__ = ["REPLY_ISSUE_CODES", "ParsedReply", "ReplyIssue", "parse_reply"]

REPLY_ISSUE_CODES: dict[str, str] = {
    "text_tool_call": "a tool call was written as text in the reply instead of a structured call",
    "arguments_as_string": "tool arguments arrived as a JSON string instead of a JSON object",
    "invalid_arguments": "tool arguments were not a JSON object (the call was dropped)",
    "unknown_tool": "the model called a tool it was not offered (the call was dropped)",
    "empty_reply": "the reply had neither text nor tool calls",
    "reply_too_large": "the reply text exceeded the size cap and was truncated",
    "context_overflow": "the reply was cut short by the context window or token limit",
}

#: At most this many candidate positions are tried when looking for bare JSON calls.
_MAX_JSON_CANDIDATES = 32

_TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FUNCTION_TAG = re.compile(
    r"<function=([^>\s]+)\s*>(.*?)(?:</function>|\Z)",
    re.DOTALL,
)
_PARAMETER_TAG = re.compile(
    r"<parameter=([^>\s]+)\s*>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL
)
_FENCE = re.compile(r"```[ \t]*([A-Za-z_-]*)[ \t]*\n(.*?)\n?```", re.DOTALL)
_JSON_START = re.compile(r'[\[{]\s*(?:\{\s*)?"(?:name|function|type|tool|tool_name)"\s*:')


@dataclass(frozen=True)
class ReplyIssue:
    """One misbehaviour found in a reply.

    Attributes:
        code: a key of ``REPLY_ISSUE_CODES``.
        message: a human sentence, also fit to show the model.
        tool_call_id: the call concerned, when there is one.
    """

    code: str
    message: str
    tool_call_id: str | None = None


@dataclass(frozen=True)
class ParsedReply:
    """A reply as the runtime uses it.

    Attributes:
        text: the content, truncated to ``max_chars`` and without text-form tool calls.
        tool_calls: calls to known tools, arguments always a ``dict``.
        issues: every misbehaviour found, in the order found.
    """

    text: str
    tool_calls: tuple[ToolCall, ...]
    issues: tuple[ReplyIssue, ...]

    @property
    def codes(self) -> tuple[str, ...]:
        """The issue codes, in order."""
        return tuple(i.code for i in self.issues)


def parse_reply(
    response: ChatResponse, tool_names: Collection[str], *, max_chars: int
) -> ParsedReply:
    """Classify one model reply and recover what can be recovered.

    Args:
        response: the backend's reply.
        tool_names: names of the tools offered in this request.
        max_chars: the most characters of content kept (> 0).

    Returns:
        The reply's text, its usable tool calls, and its issues.

    Raises:
        ValueError: if ``max_chars`` is not positive.
    """
    if max_chars <= 0:
        raise ValueError("max_chars must be positive")
    issues: list[ReplyIssue] = []
    content = response.content or ""
    if len(content) > max_chars:
        issues.append(
            ReplyIssue(
                "reply_too_large",
                f"the reply had {len(content)} characters; only the first {max_chars} were kept",
            )
        )
        content = content[:max_chars]
    if response.finish_reason == "length":
        issues.append(
            ReplyIssue(
                "context_overflow",
                "the reply was cut short by the context window or token limit; "
                "answer more briefly or in smaller steps",
            )
        )
    if not (response.content or "").strip() and not response.tool_calls:
        issues.append(ReplyIssue("empty_reply", "the reply had neither text nor tool calls"))
        return ParsedReply(text="", tool_calls=(), issues=tuple(issues))

    text = content
    raw_calls: list[ToolCall] = list(response.tool_calls)
    if not raw_calls:
        recovered, text = _text_calls(content)
        for call in recovered:
            issues.append(
                ReplyIssue(
                    "text_tool_call",
                    f"the call to {call.name!r} was written as text; "
                    "use the structured tool-calling interface",
                    call.id,
                )
            )
        raw_calls = recovered

    names = set(tool_names)
    calls = [c for c in (_usable_call(call, names, issues) for call in raw_calls) if c is not None]
    return ParsedReply(text=text, tool_calls=tuple(calls), issues=tuple(issues))


def _usable_call(
    call: ToolCall, names: Collection[str], issues: list[ReplyIssue]
) -> ToolCall | None:
    """``call`` with its arguments as a ``dict``, or None (its issue appended to ``issues``)."""
    if call.name not in names:
        offered = ", ".join(sorted(names)) or "none"
        issues.append(
            ReplyIssue(
                "unknown_tool",
                f"there is no tool named {call.name!r}; the tools offered are: {offered}",
                call.id,
            )
        )
        return None
    args: Any = call.arguments
    if isinstance(args, str):
        try:
            decoded = json.loads(args) if args.strip() else {}
        except (ValueError, RecursionError) as err:
            why = (
                f"{err.msg} at character {err.pos}"
                if isinstance(err, json.JSONDecodeError)
                else "nested too deeply"
            )
            issues.append(
                ReplyIssue(
                    "invalid_arguments",
                    f"the arguments of {call.name!r} are not valid JSON ({why}); "
                    "send a JSON object",
                    call.id,
                )
            )
            return None
        if isinstance(decoded, dict):
            issues.append(
                ReplyIssue(
                    "arguments_as_string",
                    f"the arguments of {call.name!r} were a JSON string; send a JSON object",
                    call.id,
                )
            )
        args = decoded
    if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
        issues.append(
            ReplyIssue(
                "invalid_arguments",
                f"the arguments of {call.name!r} must be a JSON object, not {_json_type(args)}",
                call.id,
            )
        )
        return None
    return ToolCall(id=call.id, name=call.name, arguments=args)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object with non-string keys" if isinstance(value, dict) else type(value).__name__


# --------------------------------------------------------------------------------------------
# Tool calls written as text


def _text_calls(content: str) -> tuple[list[ToolCall], str]:
    """Find tool calls written in ``content``; return them and the content without them."""
    found: list[tuple[str, Any]] = []
    spans: list[tuple[int, int]] = []

    for m in _TOOL_CALL_TAG.finditer(content):
        got = _function_tags(m.group(1)) or _json_calls(m.group(1))
        if got:
            found.extend(got)
            spans.append(m.span())
    if not found:
        for m in _FUNCTION_TAG.finditer(content):
            got = _function_tags(m.group(0))
            if got:
                found.extend(got)
                spans.append(m.span())
    if not found:
        for m in _FENCE.finditer(content):
            got = _json_calls(m.group(2))
            if got:
                found.extend(got)
                spans.append(m.span())
    if not found:
        for start, end, got in _bare_json_calls(content):
            found.extend(got)
            spans.append((start, end))

    if not found:
        return [], content
    digest = hashlib.sha1(content.encode("utf-8", "replace"), usedforsecurity=False).hexdigest()
    calls = [
        ToolCall(id=f"text_{digest[:8]}_{i}", name=name, arguments=args)
        for i, (name, args) in enumerate(found, start=1)
    ]
    rest: list[str] = []
    pos = 0
    for start, end in sorted(spans):
        rest.append(content[pos:start])
        pos = end
    rest.append(content[pos:])
    return calls, "".join(rest).strip()


def _function_tags(body: str) -> list[tuple[str, Any]]:
    """``<function=NAME>{json}</function>`` or ``<function=NAME><parameter=K>V</parameter>``."""
    out: list[tuple[str, Any]] = []
    for m in _FUNCTION_TAG.finditer(body):
        name, inner = m.group(1), m.group(2)
        params = list(_PARAMETER_TAG.finditer(inner))
        if params:
            out.append((name, {p.group(1): _strip_one_newline(p.group(2)) for p in params}))
            continue
        stripped = inner.strip()
        if not stripped:
            out.append((name, {}))
            continue
        try:
            out.append((name, json.loads(stripped)))
        except (ValueError, RecursionError):
            out.append((name, stripped))  # left as a string: classified as invalid later
    return out


def _strip_one_newline(value: str) -> str:
    value = value.removeprefix("\n")
    return value.removesuffix("\n")


def _call_from_obj(obj: Any) -> tuple[str, Any] | None:
    """A (name, arguments) pair from the JSON shapes models use, else None."""
    if not isinstance(obj, Mapping):
        return None
    if isinstance(obj.get("function"), Mapping):
        return _call_from_obj(obj["function"])
    name = obj.get("name", obj.get("tool_name", obj.get("tool")))
    if not isinstance(name, str) or not name:
        return None
    for key in ("arguments", "parameters", "args", "input"):
        if key in obj:
            return name, obj[key]
    return None


def _calls_from_json(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, Mapping) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    out = [_call_from_obj(v) for v in items]
    if not out or any(c is None for c in out):
        return []
    return [c for c in out if c is not None]


def _json_calls(text: str) -> list[tuple[str, Any]]:
    try:
        value = json.loads(text.strip())
    except (ValueError, RecursionError):
        return []
    return _calls_from_json(value)


def _bare_json_calls(content: str) -> Iterator[tuple[int, int, list[tuple[str, Any]]]]:
    decoder = json.JSONDecoder()
    pos = 0
    tried = 0
    while tried < _MAX_JSON_CANDIDATES:
        m = _JSON_START.search(content, pos)
        if m is None:
            return
        tried += 1
        try:
            value, end = decoder.raw_decode(content, m.start())
        except (ValueError, RecursionError):
            pos = m.start() + 1
            continue
        got = _calls_from_json(value)
        if got:
            yield m.start(), end, got
            pos = end
        else:
            pos = m.start() + 1
