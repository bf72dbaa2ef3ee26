"""A role's context: its messages, their size, and trimming to ``agent.max_context_chars``.

The size of a context is counted in characters: message contents, tool-call names and
arguments (JSON-encoded when they are a mapping) plus the fixed size of the tool schemas sent
with every request. When a request would exceed the budget, the oldest tool outputs are
replaced by ``TRIMMED`` first; if that is not enough the role fails with ``context_budget``
(``docs/architecture.md``, "Budgets"). Nothing larger than the budget is ever sent.
"""

from __future__ import annotations

import json

from flow_core._protocols import ChatMessage

__all__ = ["TRIMMED", "Context"]

#: What replaces a tool output that was removed to fit the context budget.
TRIMMED = "[older tool output removed to fit the context budget]"


class Context:
    """One role's messages with their size tracked incrementally (characters).

    Args:
        fixed: characters counted on every request besides the messages (tool schemas).
    """

    __slots__ = ("fixed", "messages", "sizes", "total", "trim_from")

    def __init__(self, fixed: int) -> None:
        self.fixed = fixed
        self.messages: list[ChatMessage] = []
        self.sizes: list[int] = []
        self.total = fixed
        self.trim_from = 0

    def add(self, message: ChatMessage) -> None:
        """Append ``message`` and count its characters."""
        size = len(message.content)
        for call in message.tool_calls:
            args = call.arguments
            size += len(call.name) + (len(args) if isinstance(args, str) else len(json.dumps(args)))
        self.messages.append(message)
        self.sizes.append(size)
        self.total += size

    def fit(self, limit: int) -> bool:
        """Trim the oldest tool outputs until the context fits ``limit`` characters.

        Returns:
            True when the context now fits; False when even trimming every tool output is not
            enough.
        """
        i = self.trim_from
        while self.total > limit and i < len(self.messages):
            msg = self.messages[i]
            if msg.role == "tool" and self.sizes[i] > len(TRIMMED):
                self.messages[i] = ChatMessage(
                    role="tool", content=TRIMMED, tool_call_id=msg.tool_call_id, name=msg.name
                )
                self.total -= self.sizes[i] - len(TRIMMED)
                self.sizes[i] = len(TRIMMED)
            i += 1
            if self.total > limit:
                self.trim_from = i
        return self.total <= limit
