"""A role's limits: the character budget of its context and the cap on one reply.

Source: ``docs/architecture.md``, "Budgets". The budget is ``agent.max_context_chars`` when the
operator set it, else the model's window (``ChatBackend.context_window``) less the reply's
reserve (``max_reply_tokens``) at ``CHARS_PER_TOKEN`` characters a token, never more than
``agent.max_context_chars``. A reply longer than half the budget (at least 4,000 characters)
costs the turn (``reply_too_large``). The run enforces these numbers, the report shows them
(``roles.*.context_chars_limit``, ``reply_chars_limit``, ``budgets.context_chars.limit``) and
the TUI's ``/status`` shows them from the same function (``Runtime.role_budgets``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flow_core._errors import BackendError

if TYPE_CHECKING:
    from flow_core._protocols import ChatBackend
    from flow_core.config import AgentConfig

__all__ = ["RoleBudget", "role_budget"]

#: The smallest reply cap, in characters.
MIN_REPLY_CHARS = 4_000


@dataclass(frozen=True, slots=True)
class RoleBudget:
    """One role's enforced limits.

    Attributes:
        window: the model's context window in tokens; None when the server does not say.
        context_chars: the most characters one request of the role may carry.
        reply_chars: the most characters one reply may carry (``reply_too_large`` beyond).
        reserve_tokens: tokens kept out of the window for the reply (``max_reply_tokens``).
        from_window: the budget was derived from ``window`` (else ``agent.max_context_chars``).
    """

    window: int | None
    context_chars: int
    reply_chars: int
    reserve_tokens: int
    from_window: bool

    def source(self) -> str:
        """Where ``context_chars`` comes from, in words (for messages and ``/status``)."""
        if not self.from_window:
            return "agent.max_context_chars"
        return (
            f"the model's window of {self.window} tokens less the reply's reserve of "
            f"{self.reserve_tokens} (context_tokens, max_reply_tokens)"
        )


def role_budget(
    backend: ChatBackend,
    agent: AgentConfig,
    model: str,
    options: Mapping[str, Any] | None,
) -> RoleBudget:
    """The limits of a role that runs ``model`` with ``options`` (see the module docstring).

    Asks the backend for the window (at most one request per model, cached by the backend);
    a backend that fails to answer counts as one that does not say.
    """
    from flow_core.config._options import CHARS_PER_TOKEN, DEFAULT_REPLY_TOKENS

    try:
        found = backend.context_window(model, options)
    except BackendError:
        found = None
    window = found if isinstance(found, int) and found > 0 else None
    reserve = (options or {}).get("max_reply_tokens", DEFAULT_REPLY_TOKENS)
    reserve = reserve if isinstance(reserve, int) else DEFAULT_REPLY_TOKENS
    limit = agent.max_context_chars
    from_window = window is not None and "max_context_chars" not in agent.model_fields_set
    if window is not None and from_window:
        limit = min(int(max(1, window - reserve) * CHARS_PER_TOKEN), agent.max_context_chars)
    return RoleBudget(
        window=window,
        context_chars=limit,
        reply_chars=max(MIN_REPLY_CHARS, limit // 2),
        reserve_tokens=reserve,
        from_window=from_window,
    )
