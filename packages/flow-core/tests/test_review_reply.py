"""The reviewer's reply: ``REVIEW_SCHEMA`` comes from ``ReviewReply``; validation is strict."""

from __future__ import annotations

import json

import pytest

from flow_core import REVIEW_SCHEMA
from flow_core.run import ReviewReply
from flow_core.run._review import validate_review


def test_schema_is_generated_and_is_the_small_subset_servers_accept() -> None:
    assert REVIEW_SCHEMA == {
        "type": "object",
        "properties": {
            "approved": {"type": "boolean"},
            "summary": {"type": "string"},
            "findings": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["approved", "summary", "findings"],
        "additionalProperties": False,
    }
    assert set(REVIEW_SCHEMA["properties"]) == set(ReviewReply.model_fields)


def test_a_valid_reply_reads_as_a_review() -> None:
    review = validate_review('{"approved": true, "summary": "ok", "findings": ["a", "b"]}')
    assert review is not None
    assert (review.approved, review.summary, review.findings) == (True, "ok", ["a", "b"])


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "approved",
        "[]",
        "null",
        '{"approved": 1, "summary": "", "findings": []}',  # no coercion to bool
        '{"approved": "true", "summary": "", "findings": []}',
        '{"approved": true, "summary": 3, "findings": []}',
        '{"approved": true, "summary": "", "findings": "none"}',
        '{"approved": true, "summary": "", "findings": [1]}',
        '{"approved": true, "summary": ""}',
        '{"approved": true, "summary": "", "findings": [], "extra": 1}',
        '{"approved": false, "summary": "", "findings": [], "approved": true}',
        '{"approved": true, "summary": "", "findings": [{"a": 1, "a": 2}]}',
        "[" * 100_000,
    ],
)
def test_anything_else_is_not_a_review(reply: str) -> None:
    assert validate_review(reply) is None


def test_the_repeated_key_control_reads_as_approval_without_the_hook() -> None:
    # Negative control: plain json.loads keeps the last value, which would approve.
    reply = '{"approved": false, "summary": "", "findings": [], "approved": true}'
    assert json.loads(reply)["approved"] is True
    assert validate_review(reply) is None
