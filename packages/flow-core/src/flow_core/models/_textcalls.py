"""Tool calls written as text: found whole, or not at all.

``parse_reply`` (``models/_parse.py``) reads a call from a reply's text only from an explicit
wrapper outside Markdown code, or from a reply that is nothing but a call
(``docs/architecture.md``, "Backends"). The wrappers are ``<tool_call>JSON</tool_call>``,
``<tool_call><function=NAME>...</function></tool_call>`` and a bare
``<function=NAME>...</function>``, whose arguments are JSON or
``<parameter=KEY>VALUE</parameter>`` blocks.

A value may hold any text, the wrappers' own tags included (a model writing a test of this
very parser, or a document about tool calls). Such a call is taken whole or not run, never
cut short:

* a JSON body is read by the JSON decoder, so its end is where its JSON ends, whatever its
  strings hold; a ``<tool_call>`` closes at the first ``</tool_call>`` after it;
* a ``<tool_call>`` whose first closing tag leaves no complete call inside it is tried with
  the next closing tag (``<tool_call>`` ... ``</tool_call>`` inside a value);
* a tag-style call is *well formed* only when every ``<parameter=`` has its ``</parameter>``
  (or none has one), nothing but blanks lies between them, and no wrapper tag is left over
  in the reply's text outside the calls (code excepted). A reply that is not well formed
  runs none of its text calls: ``ambiguous_call``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from flow_core._protocols import ToolCall

__all__ = ["WRAPPER_OPEN", "TextCalls", "committed", "mask_code", "text_calls"]

_TOOL_CALL_OPEN = "<tool_call>"
_TOOL_CALL_CLOSE = re.compile(r"</tool_call>")
_TOOL_CALL_TAG = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FUNCTION_TAG = re.compile(r"<function=([^>\s]+)\s*>(.*?)</function>", re.DOTALL)
_PARAMETER_TAG = re.compile(
    r"<parameter=([^>\s]+)\s*>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL
)
#: Any tag of the wrapper formats, opening or closing.
_ANY_TAG = re.compile(r"</?(?:tool_call|function|parameter)\b[^>\n]{0,200}>")
WRAPPER_OPEN = re.compile(r"<tool_call>|<function=[^>\s]+\s*>")
_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE)
_ONLY_FENCE = re.compile(r"\A```[\w-]*[ \t]*\n(.*?)\n?```\Z", re.DOTALL)
_FENCE = re.compile(r"^[ \t]*(```|~~~).*?(?:^[ \t]*\1[ \t]*$|\Z)", re.DOTALL | re.MULTILINE)
_INLINE_CODE = re.compile(r"(`+)(?!`)[^\n]{1,500}?(?<!`)\1(?!`)")
_DECODER = json.JSONDecoder()

#: What ``text_calls`` found: the calls, the text without them, and whether the reply's
#: wrappers were not well formed (then ``calls`` is empty and the text is unchanged).
TextCalls = tuple[list[ToolCall], str, bool]


class _Ambiguous(Exception):
    """A tag-style call whose values hold wrapper tags: where it ends is not clear."""


def committed(content: str) -> str:
    """The answer the model committed to: reasoning blocks (also an unclosed one) removed."""
    if "<" not in content:
        return content
    return _REASONING.sub("", content).strip() if _REASONING.search(content) else content


def mask_code(text: str) -> str:
    """``text`` with Markdown code (fenced blocks, inline spans) blanked, offsets kept."""

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    return _INLINE_CODE.sub(blank, _FENCE.sub(blank, text))


def text_calls(content: str) -> TextCalls:
    """Calls written in ``content``: the calls, the content without them, and whether the
    reply was refused as ambiguous (see the module docstring)."""
    try:
        found, spans = _find(content)
    except _Ambiguous:
        return [], content, True
    if not found:
        return [], content, False
    digest = hashlib.sha1(content.encode("utf-8", "replace"), usedforsecurity=False).hexdigest()
    calls = [
        ToolCall(id=f"text_{digest[:8]}_{i}", name=name, arguments=args)
        for i, (name, args) in enumerate(found, start=1)
    ]
    return calls, _without(content, spans), False


def _find(content: str) -> tuple[list[tuple[str, Any]], list[tuple[int, int]]]:
    """The calls and their spans.

    Raises:
        _Ambiguous: a tag-style call is not well formed, or a wrapper tag is left over.
    """
    whole = _whole_reply_call(content.strip())
    if whole:
        return whole, [(0, len(content))]
    masked = mask_code(content)
    found: list[tuple[str, Any]] = []
    spans: list[tuple[int, int]] = []
    for start, end, body in _tool_call_blocks(content, masked):
        found.extend(_block_calls(body))
        spans.append((start, end))
    if not found:
        spans = []
        for m in _function_tag_matches(masked):
            got = _function_tags(content[m.start() : m.end()])
            if got:
                found.extend(got)
                spans.append(m.span())
    if found and _ANY_TAG.search(_without(masked, spans)):
        raise _Ambiguous
    return found, spans


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    rest: list[str] = []
    pos = 0
    for start, end in sorted(spans):
        rest.append(text[pos:start])
        pos = end
    rest.append(text[pos:])
    return "".join(rest).strip()


def _tool_call_blocks(content: str, masked: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, body)`` of each ``<tool_call>`` block that holds at least one call."""
    pos = 0
    while (start := masked.find(_TOOL_CALL_OPEN, pos)) != -1:
        body_at = start + len(_TOOL_CALL_OPEN)
        block = _json_block(content, body_at) or _tag_block(content, masked, body_at)
        if block is None:
            pos = body_at
            continue
        end, body = block
        yield start, end, body
        pos = end


def _json_block(content: str, at: int) -> tuple[int, str] | None:
    """A JSON call right after ``<tool_call>``: where the block ends (after its closing tag,
    or the text's end), and the JSON text; None when there is none."""
    begin = len(content) - len(content[at:].lstrip())
    if not content.startswith(("{", "["), begin):
        return None
    try:
        value, end = _DECODER.raw_decode(content, begin)
    except (ValueError, RecursionError):
        return None
    if not _calls_from_json(value):
        return None
    close = re.compile(r"\s*</tool_call>").match(content, end)
    if close is not None:
        return close.end(), content[begin:end]
    return (len(content), content[begin:end]) if not content[end:].strip() else None


def _tag_block(content: str, masked: str, at: int) -> tuple[int, str] | None:
    """The first closing tag after ``at`` that leaves a whole call inside (or the text's end
    when none is closed); None when no candidate holds one."""
    ends = list(_TOOL_CALL_CLOSE.finditer(masked, at))
    for close in ends:
        body = content[at : close.start()]
        if _function_tags(body, strict=False) or _json_calls(body):
            return close.end(), body
    if not ends:
        body = content[at:]
        if _function_tags(body, strict=False) or _json_calls(body):
            return len(content), body
    return None


def _block_calls(body: str) -> list[tuple[str, Any]]:
    """The calls of one ``<tool_call>`` body (JSON, or well-formed function tags)."""
    return _function_tags(body) or _json_calls(body)


def _whole_reply_call(stripped: str) -> list[tuple[str, Any]]:
    """The calls of a reply that is nothing but a call: bare JSON, or one fenced JSON block."""
    if not stripped:
        return []
    fence = _ONLY_FENCE.match(stripped)
    body = (fence.group(1) if fence else stripped).strip()
    if body.startswith(("{", "[")):
        return _json_calls(body)
    if fence and body.startswith("<"):  # a fenced block holding nothing but a wrapper
        tag = _TOOL_CALL_TAG.fullmatch(body) or _FUNCTION_TAG.fullmatch(body)
        if tag:
            return _function_tags(body) or _json_calls(tag.group(1))
    return []


def _function_tag_matches(text: str) -> Iterator[re.Match[str]]:
    """``<function=...>...</function>`` matches, searched only up to the last closing tag.

    An opening tag with no closing tag after it would otherwise be scanned to the end of the
    text once per opening tag (quadratic time on a reply full of unclosed tags).
    """
    end = text.rfind("</function>")
    if end != -1:
        yield from _FUNCTION_TAG.finditer(text, 0, end + len("</function>"))


def _function_tags(body: str, *, strict: bool = True) -> list[tuple[str, Any]]:
    """``<function=NAME>{json}</function>`` or ``<function=NAME><parameter=K>V</parameter>``.

    Raises:
        _Ambiguous: with ``strict``, a call that is not well formed (module docstring);
            without it, such a body holds no call.
    """
    out: list[tuple[str, Any]] = []
    matches = list(_function_tag_matches(body))
    try:
        if matches and _ANY_TAG.search(_without(body, [m.span() for m in matches])):
            raise _Ambiguous
        out.extend(_one_function(m.group(1), m.group(2)) for m in matches)
    except _Ambiguous:
        if strict:
            raise
        return []
    return out


def _one_function(name: str, inner: str) -> tuple[str, Any]:
    params = list(_PARAMETER_TAG.finditer(inner))
    if params:
        closed = inner.count("</parameter>")
        if closed not in (0, len(params)) or _without(inner, [p.span() for p in params]):
            raise _Ambiguous
        return name, {p.group(1): _strip_one_newline(p.group(2)) for p in params}
    stripped = inner.strip()
    if not stripped:
        return name, {}
    if _ANY_TAG.search(stripped):
        raise _Ambiguous
    try:
        return name, json.loads(stripped)
    except (ValueError, RecursionError):
        return name, stripped  # left as a string: classified as invalid later


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
