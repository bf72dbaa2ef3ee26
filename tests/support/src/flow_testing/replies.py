"""Replies for flow-core's ``ScriptedBackend``: a tool call, a plain text, a review verdict.

The scenario suites (flow-core's runtime, store and stall tests, flow-rose's runtime test)
script a run as a list of :class:`~flow_core.ChatResponse` objects; these are the three kinds
they are made of. This is the one module here that imports a Flow package (``flow_core``):
only the suites of packages that depend on flow-core import it, and nothing else in
``flow_testing`` imports it, so flow-safeio's tests still need no sibling.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from flow_core import ChatResponse, ToolCall

__all__ = ["call", "review", "text"]

_ids = itertools.count(1)


def call(name: str, *, call_id: str | None = None, **args: Any) -> ChatResponse:
    """A reply that makes one tool call ``name(**args)``.

    ``call_id`` defaults to a fresh ``call-N`` (unique in the test process); a test that runs
    one script twice and compares the reports passes its own, the same in both runs.
    """
    return ChatResponse("", tool_calls=(ToolCall(call_id or f"call-{next(_ids)}", name, args),))


def text(s: str) -> ChatResponse:
    """A reply of plain text (a plan, the coder's final word)."""
    return ChatResponse(s)


def review(approved: bool, *findings: str, summary: str = "s") -> ChatResponse:
    """The reviewer's verdict, as ``flow_core.run._review.REVIEW_SCHEMA`` wants it."""
    verdict = {"approved": approved, "summary": summary, "findings": list(findings)}
    return text(json.dumps(verdict))
