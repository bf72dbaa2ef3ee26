"""What a tool call leaves in the report: its arguments, capped, and safe to serialise.

A model's arguments can be megabytes (a whole file's ``content``) and can hold text that is
not valid Unicode (a lone UTF-16 surrogate such as ``\\ud83d``). The report keeps every
argument, with each string longer than ``MAX_ARGUMENT_CHARS`` cut and marked
``… [N chars]``, lone surrogates replaced by U+FFFD, and containers capped in depth and
length, so the report always serialises as JSON.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from flow_core._protocols import Event
from flow_core._unicode import valid_text

if TYPE_CHECKING:
    from flow_core._protocols import Role
    from flow_core._report import ToolCallRecord

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "capped_arguments",
    "capped_message",
    "tool_event",
]

#: Longest string argument kept in the report (characters); longer ones are cut and marked.
MAX_ARGUMENT_CHARS = 200
_MAX_ITEMS = 20
_MAX_DEPTH = 4


def _cap(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        text = valid_text(value)
        if len(text) > MAX_ARGUMENT_CHARS:
            return text[:MAX_ARGUMENT_CHARS] + f"… [{len(text)} chars]"
        return text
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth >= _MAX_DEPTH:
        return "[nested too deeply]"
    if isinstance(value, dict):
        items = list(value.items())
        out = {_cap(str(k), depth + 1): _cap(v, depth + 1) for k, v in items[:_MAX_ITEMS]}
        if len(items) > _MAX_ITEMS:
            out["…"] = f"[{len(items) - _MAX_ITEMS} more keys]"
        return out
    if isinstance(value, list | tuple):
        seq = [_cap(v, depth + 1) for v in value[:_MAX_ITEMS]]
        if len(value) > _MAX_ITEMS:
            seq.append(f"[{len(value) - _MAX_ITEMS} more items]")
        return seq
    return _cap(repr(value), depth)


#: Longest error message kept in the report (characters); the model gets the whole message.
MAX_MESSAGE_CHARS = 500


def capped_message(message: str | None) -> str | None:
    """A call's error message for the report: valid Unicode; a longer one than
    ``MAX_MESSAGE_CHARS`` keeps its start and its end around ``… [N chars] …``."""
    if message is None:
        return None
    text = valid_text(message)
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    # Head and tail: a message often names a long value first and the reason last.
    tail = MAX_MESSAGE_CHARS // 4
    return f"{text[: MAX_MESSAGE_CHARS - tail]}… [{len(text)} chars] …{text[-tail:]}"


def capped_arguments(arguments: Any) -> dict[str, Any]:
    """The report's copy of a call's arguments (a ``dict`` even for non-object input)."""
    if isinstance(arguments, dict):
        capped = _cap(arguments, 0)
        assert isinstance(capped, dict)
        return capped
    return {"(not an object)": _cap(arguments, 1)}


def tool_event(record: ToolCallRecord, *, role: Role, turn: int | None) -> Event:
    """The ``tool_call`` progress event of a recorded call: its name, outcome, id, error code
    and message and the report's capped arguments, so a live display never holds a whole file.
    """
    return Event(
        "tool_call",
        role=role,
        cycle=record.cycle,
        turn=turn,
        name=record.name,
        ok=record.ok,
        call_id=record.id,
        error=record.error,
        message=record.message,
        arguments=record.arguments,
    )
