"""Which limit cut a reply short: the reply cap or the context window.

A server says only that a reply stopped on a length limit (``finish_reason`` ``"length"``).
The fixes differ: a reply that reached ``max_reply_tokens`` needs a larger reply cap, one that
filled the window needs a larger window or a smaller prompt. The reply parser tells the
*model* to answer more briefly (``context_overflow``); this module tells the *operator* which
limit it was, from the server's token counts (``docs/architecture.md``, "Backends"):

* ``reply_cap``: the reply's tokens reached ``max_reply_tokens``, or prompt plus reply stayed
  below the window;
* ``context_overflow``: prompt plus reply reached the window, or the counts are unknown.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from flow_core._codes import ErrorCode
from flow_core._protocols import ChatResponse, Role
from flow_core.models import ParsedReply

__all__ = ["operator_issues"]

#: Tokens of slack when comparing prompt + reply with the window (templates add a few).
_WINDOW_SLACK = 16


def operator_issues(
    parsed: ParsedReply,
    response: ChatResponse,
    *,
    role: Role,
    options: Mapping[str, Any] | None,
    window: int | None,
) -> Iterator[tuple[ErrorCode, str]]:
    """``(code, message)`` for each of the reply's issues, worded for the operator.

    Args:
        parsed: the parsed reply (its issue messages are written for the model).
        response: the server's reply, for its token counts.
        role: the role, named in the fix.
        options: the role's model options (``max_reply_tokens``), or None.
        window: the model's context window in tokens, or None when unknown.
    """
    for issue in parsed.issues:
        if issue.code == "context_overflow":
            yield _cut_short(response, role=role, options=options or {}, window=window)
        else:
            yield issue.code, issue.message


def _cut_short(
    response: ChatResponse, *, role: Role, options: Mapping[str, Any], window: int | None
) -> tuple[ErrorCode, str]:
    cap = options.get("max_reply_tokens")
    prompt, reply = response.prompt_tokens, response.completion_tokens
    counts = f"prompt {prompt if prompt is not None else '?'} + reply "
    counts += f"{reply if reply is not None else '?'} tokens"
    at_cap = isinstance(cap, int) and reply is not None and reply >= cap
    inside = (
        window is not None
        and prompt is not None
        and reply is not None
        and prompt + reply < window - _WINDOW_SLACK
    )
    if at_cap or inside:
        where = f", inside the window of {window}" if window is not None else ""
        return (
            "reply_cap",
            f"the {role}'s reply stopped at the reply cap ({counts}, max_reply_tokens = "
            f"{cap}{where}); raise max_reply_tokens in [models.options.{role}] or the "
            "backend's options table",
        )
    limit = f"the window of {window}" if window is not None else "a length limit"
    return (
        "context_overflow",
        f"the {role}'s reply was cut short by {limit} ({counts}); raise the window "
        f"(context_tokens, or the server's context size) or give a narrower task",
    )
