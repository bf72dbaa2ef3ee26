"""The reviewer's reply: a strict pydantic model, the JSON Schema sent to the model, validation.

The reviewer ends with exactly one JSON object ``{"approved": bool, "summary": str,
"findings": [str, ...]}``; every key is required and no other key is allowed. ``REVIEW_SCHEMA``
(sent as the request's ``format=``) is generated from ``ReviewReply``, so the schema the model
sees and the rule the host applies cannot drift apart.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from flow_core._report import Review

__all__ = ["REVIEW_SCHEMA", "ReviewReply", "review_schema", "validate_review"]


class ReviewReply(BaseModel):
    """The reviewer's final reply, validated strictly (no coercion, no extra keys)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    approved: bool
    summary: str
    findings: list[str]


def _plain_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON Schema without the ``title``/``description`` annotations.

    The annotations carry no rule; leaving them out keeps the ``format=`` payload the small
    ``type``/``properties``/``required``/``additionalProperties`` subset that local model
    servers (Ollama's structured outputs, llama.cpp's grammar conversion) accept.
    """

    def strip(node: Any) -> Any:
        if isinstance(node, list):
            return [strip(v) for v in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties":  # keys here are field names, not keywords
                out[key] = {name: strip(sub) for name, sub in value.items()}
            elif key not in ("title", "description"):
                out[key] = strip(value)
        return out

    schema: dict[str, Any] = strip(model.model_json_schema())
    return schema


@functools.cache
def review_schema() -> dict[str, Any]:
    """The JSON Schema the reviewer's final reply must follow (sent as ``format=``).

    Generated on first use and kept: building a pydantic schema costs tens of milliseconds,
    and ``flow status`` never needs it (``bench/bench_cli.py``).
    """
    return _plain_schema(ReviewReply)


if TYPE_CHECKING:
    #: ``review_schema()``, as a module attribute (PEP 562 ``__getattr__`` below).
    REVIEW_SCHEMA: dict[str, Any]


def __getattr__(name: str) -> Any:
    if name == "REVIEW_SCHEMA":
        return review_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate key in a JSON object")
    return dict(pairs)


def validate_review(text: str) -> Review | None:
    """The review if ``text`` is exactly one JSON object that ``ReviewReply`` accepts.

    A repeated key is invalid, not "last one wins" (RFC 8259 section 4 leaves it to the
    parser): ``{"approved": false, ..., "approved": true}`` must never read as an approval.
    So the text is parsed with ``json.loads`` rejecting duplicates, then validated strictly.

    Returns:
        The ``Review`` for the report, or None when the reply is not a valid review.
    """
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
        reply = ReviewReply.model_validate(data)
    except (ValueError, RecursionError, ValidationError):
        return None
    return Review(approved=reply.approved, summary=reply.summary, findings=list(reply.findings))
