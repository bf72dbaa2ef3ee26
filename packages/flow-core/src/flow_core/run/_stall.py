"""Failing fast when a role stops moving (``docs/architecture.md``, "Budgets").

A small model that does not understand its tools repeats itself: the same call again and
again, a call whose argument is the schema's own description copied as a value, or turn after
turn of replies that run nothing new. Each such turn costs minutes on a small machine and can
never lead to a verified run, so the role ends early with a named code instead of spending
the rest of ``max_iterations``:

* ``schema_echo``: a call's argument is text from the tool's schema (a parameter's or the
  tool's description, a placeholder such as ``<path>``, or a schema fragment such as
  ``{"type": "string"}``); no call of that reply runs.
* ``repeated_call``: a call identical (name and arguments) to one already made
  ``agent.max_repeated_calls`` times in this role invocation since the workspace last changed
  through the role's own writes; no call of that reply runs.
* ``no_progress``: ``agent.max_idle_turns`` turns in a row without progress. A turn makes
  progress when at least one of its calls succeeded and was new (not identical to an earlier
  call since the last change); a reply with only issues, failed calls or repeats does not.

A call on a role's *last* turn (``agent.max_iterations``) is not run either: the model could
never see its result. The role ends there with ``budget_iterations``; it gets no extra turn.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flow_core._protocols import ToolCall

if TYPE_CHECKING:
    from flow_core._codes import ErrorCode

__all__ = ["WRITE_TOOLS", "Stall", "StallWatch", "schema_texts"]

#: Tools whose successful call changes the workspace (resets the repeat count).
WRITE_TOOLS = frozenset({"write_file", "edit_file"})
_JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
#: Schema descriptions shorter than this are too generic to call a copy (``"path"``).
_MIN_ECHO_CHARS = 8


@dataclass(frozen=True)
class Stall:
    """Why a role ends early: ``code`` (``schema_echo``, ``repeated_call``, ``no_progress``)
    and an operator-facing ``message``."""

    code: ErrorCode
    message: str


def _norm(text: str) -> str:
    return " ".join(text.strip().strip("\"'`").rstrip(".").split()).casefold()


def schema_texts(schemas: Iterable[Mapping[str, Any]]) -> dict[str, frozenset[str]]:
    """Per tool name, the normalised texts of its schema a real argument never is.

    Args:
        schemas: tool schemas in the function format (``{"function": {"name", ...}}``).

    Returns:
        ``{tool name: texts}``: the tool's and each parameter's description (at least
        ``_MIN_ECHO_CHARS`` characters) and each parameter's name as a placeholder
        (``<path>``, ``{path}``, ``[path]``).
    """
    out: dict[str, frozenset[str]] = {}
    for schema in schemas:
        fn = schema.get("function")
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            continue
        texts: set[str] = set()
        if isinstance(fn.get("description"), str):
            texts.add(_norm(fn["description"]))
        params = fn.get("parameters")
        props = params.get("properties") if isinstance(params, Mapping) else None
        for key, prop in (props or {}).items():
            texts.update(f"{a}{_norm(key)}{b}" for a, b in ("<>", "{}", "[]"))
            if isinstance(prop, Mapping) and isinstance(prop.get("description"), str):
                texts.add(_norm(prop["description"]))
        out[fn["name"]] = frozenset(t for t in texts if len(t) >= _MIN_ECHO_CHARS or t[0] in "<{[")
    return out


def _is_schema_fragment(value: Any) -> bool:
    """A value that is a piece of JSON Schema (``{"type": "string", ...}``), not data."""
    return isinstance(value, Mapping) and (
        value.get("type") in _JSON_TYPES or isinstance(value.get("description"), str)
    )


def _signature(call: ToolCall) -> str:
    args = call.arguments
    body = json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    return f"{call.name}\0{body}"


@dataclass
class StallWatch:
    """One role invocation's watch for schema echoes, repeats and idle turns.

    Args:
        schemas: the tools offered to the role (``ToolBox.schemas``).
        max_repeated_calls: identical calls allowed since the last change (``>= 1``).
        max_idle_turns: turns in a row without progress before the role ends (``>= 1``).
    """

    schemas: Sequence[Mapping[str, Any]]
    max_repeated_calls: int
    max_idle_turns: int
    _texts: dict[str, frozenset[str]] = field(init=False)
    _seen: Counter[str] = field(init=False, default_factory=Counter)
    _done: list[ToolCall] = field(init=False, default_factory=list)
    _idle: int = field(init=False, default=0)
    #: Whether a write succeeded in this invocation (``wrote``).
    _wrote: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self._texts = schema_texts(self.schemas)

    def screen(self, calls: Sequence[ToolCall], *, last_turn: bool = False) -> Stall | None:
        """Before a reply's calls run: the ``Stall`` that forbids running them, else None.

        On the role's last turn (``last_turn``) any call is refused with
        ``budget_iterations``: the model could never see its result.
        """
        for call in calls:
            echoed = self._echo(call)
            if echoed is not None:
                return Stall(
                    "schema_echo",
                    f"the call to {call.name!r} passed {echoed!r}: text copied from the "
                    "tool's schema, not a value; the model does not follow the tool format, so "
                    "the role ends",
                )
            if self._seen[_signature(call)] >= self.max_repeated_calls:
                return Stall(
                    "repeated_call",
                    f"the call to {call.name!r} with the same arguments came "
                    f"{self.max_repeated_calls + 1} times with no change in between "
                    "(agent.max_repeated_calls); its result cannot differ, so the role ends",
                )
        if calls and last_turn:
            names = ", ".join(repr(c.name) for c in calls)
            return Stall(
                "budget_iterations",
                f"the call(s) {names} came on the role's last turn (agent.max_iterations) and "
                "were not run: the model could never see their result",
            )
        return None

    def after_turn(self, ran: Sequence[tuple[ToolCall, bool]]) -> Stall | None:
        """After a turn that did not finish the role: count its calls, judge its progress.

        Args:
            ran: each call that ran this turn with whether it succeeded.

        Returns:
            ``no_progress`` after ``max_idle_turns`` idle turns in a row, else None.
        """
        progress = False
        for call, ok in ran:
            sig = _signature(call)
            if ok and self._seen[sig] == 0:
                progress = True
            self._seen[sig] += 1
            self._done.append(call)  # answered: the same call would get the same answer
            if ok and call.name in WRITE_TOOLS:
                self._wrote = True
                self._seen.clear()
                self._done.clear()
        self._idle = 0 if progress else self._idle + 1
        if self._idle < self.max_idle_turns:
            return None
        return Stall(
            "no_progress",
            f"{self._idle} turns in a row ran no new successful tool call and gave no answer "
            "(agent.max_idle_turns), so the role ends",
        )

    def seen(self, calls: Sequence[ToolCall]) -> None:
        """Count ``calls`` as answered (``done``) without running them: their answers are in
        the role's first message."""
        self._done.extend(calls)

    @property
    def wrote(self) -> bool:
        """Whether a write succeeded in this invocation."""
        return self._wrote

    def done(self) -> tuple[ToolCall, ...]:
        """The calls answered since the role's last write, successful or not (their results
        are in the context and would not differ until a write): guided replies offer none of
        them again."""
        return tuple(self._done)

    def _echo(self, call: ToolCall) -> str | None:
        texts = self._texts.get(call.name, frozenset())
        args = call.arguments if isinstance(call.arguments, Mapping) else {}
        for key, value in args.items():
            if _is_schema_fragment(value):
                return f"{key}={json.dumps(value)[:80]}"
            if isinstance(value, str) and value.strip() and _norm(value) in texts:
                return value[:120]
        return None
