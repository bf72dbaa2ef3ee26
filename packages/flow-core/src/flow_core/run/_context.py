"""A role's context: its messages, their size, and fitting them into the role's budget.

The size of a context is counted in characters: message contents, tool-call names and
arguments (JSON-encoded when they are a mapping) plus the fixed size of the tool schemas sent
with every request. The budget is ``agent.max_context_chars`` or the model's window
(``run/_loop.py``); nothing larger is ever sent (``docs/architecture.md``, "Budgets").

When a request would exceed the budget:

1. **trim**, once, down to a low-water mark (``LOW_WATER`` of the budget), not a little every
   turn: the oldest tool results are replaced by ``TRIMMED``, oldest first. The results the
   model has not seen yet (those after the last assistant message) are never trimmed. So each
   request of a role begins with the previous one byte for byte, except at a trim, and a
   server's prefix cache keeps working between trims;
2. **cut** the newest results only if the context still does not fit: each is shortened to
   what fits and ends with an honest marker naming what was shown (characters and lines) and
   how to read the rest;
3. otherwise the role fails with ``context_budget``.

Every trim and cut is kept in ``changes`` for the report (``RoleUsage.trims``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from flow_core._protocols import ChatMessage

__all__ = ["LOW_WATER", "TRIMMED", "Context", "ContextChange"]

#: What replaces a tool output that was removed to fit the context budget.
TRIMMED = "[older tool output removed to fit the context window; call the tool again if needed]"
#: A trim goes down to this share of the budget, so that the next trims are turns away.
LOW_WATER = 0.6
#: The fewest characters of a cut result worth keeping besides its marker.
_MIN_KEPT = 200


@dataclass(frozen=True)
class ContextChange:
    """One trim or cut (sizes in characters)."""

    kind: str  # "trim" or "cut"
    messages: int
    chars_removed: int
    chars_after: int
    tool_call_id: str | None = None


def _cut_marker(kept: str, full: str) -> str:
    lines_kept = kept.count("\n") + (0 if kept.endswith("\n") or not kept else 1)
    lines_all = full.count("\n") + (0 if full.endswith("\n") else 1)
    return (
        f"\n[output cut to fit the context window: showed characters 1-{len(kept)} of "
        f"{len(full)}, lines 1-{lines_kept} of {lines_all}; read the rest in smaller parts, "
        f"e.g. read_file with start_line={max(1, lines_kept)}]"
    )


class Context:
    """One role's messages with their size tracked incrementally (characters).

    Args:
        fixed: characters counted on every request besides the messages (tool schemas).
    """

    __slots__ = ("changes", "fixed", "messages", "sizes", "total")

    def __init__(self, fixed: int) -> None:
        self.fixed = fixed
        self.messages: list[ChatMessage] = []
        self.sizes: list[int] = []
        self.total = fixed
        self.changes: list[ContextChange] = []

    def add(self, message: ChatMessage) -> None:
        """Append ``message`` and count its characters."""
        size = _size(message)
        self.messages.append(message)
        self.sizes.append(size)
        self.total += size

    def _replace(self, i: int, content: str) -> int:
        old = self.messages[i]
        self.messages[i] = ChatMessage(
            role=old.role, content=content, tool_call_id=old.tool_call_id, name=old.name
        )
        size = _size(self.messages[i])
        removed = self.sizes[i] - size
        self.sizes[i] = size
        self.total -= removed
        return removed

    def _unseen(self) -> int:
        """Index of the first message after the last assistant message (results not yet seen)."""
        for i in range(len(self.messages) - 1, -1, -1):
            if self.messages[i].role == "assistant":
                return i + 1
        return 0

    def fit(self, limit: int) -> bool:
        """Make the context fit ``limit`` characters (see the module docstring).

        Returns:
            True when the context now fits; False when even trimming and cutting every tool
            result the rules allow is not enough.
        """
        if self.total <= limit:
            return True
        unseen = self._unseen()
        target = int(limit * LOW_WATER)
        trimmed = removed = 0
        for i in range(unseen):
            if self.total <= target:
                break
            msg = self.messages[i]
            if msg.role == "tool" and msg.content != TRIMMED and self.sizes[i] > len(TRIMMED):
                removed += self._replace(i, TRIMMED)
                trimmed += 1
        if trimmed:
            self.changes.append(ContextChange("trim", trimmed, removed, self.total))
        for i in range(len(self.messages) - 1, unseen - 1, -1):
            if self.total <= limit:
                break
            msg = self.messages[i]
            if msg.role != "tool":
                continue
            room = self.sizes[i] - (self.total - limit) - 260
            if room < _MIN_KEPT:
                continue
            kept = msg.content[:room]
            cut = self._replace(i, kept + _cut_marker(kept, msg.content))
            self.changes.append(ContextChange("cut", 1, cut, self.total, msg.tool_call_id))
        return self.total <= limit


def _size(message: ChatMessage) -> int:
    size = len(message.content)
    for call in message.tool_calls:
        args = call.arguments
        size += len(call.name) + (len(args) if isinstance(args, str) else len(json.dumps(args)))
    return size
