"""A call written as text whose value holds the wrapper's own tags: taken whole or not run.

A model writing a test of a tool-call parser, or a document about tool calls, puts
``</parameter>``, ``</function>`` or ``</tool_call>`` inside an argument. The call must
never be cut at that tag and run with the front half of its value.
"""

from __future__ import annotations

import json

import pytest

from flow_core import ChatResponse, parse_reply

NAMES = frozenset({"write_file", "read_file"})
TAGS = ["</parameter>", "</function>", "</tool_call>", "<parameter=path>", "<tool_call>"]


def parse(content: str):
    return parse_reply(ChatResponse(content), NAMES, max_chars=100_000)


def tags_call(value: str, *, wrapped: bool) -> str:
    call = (
        "<function=write_file>\n<parameter=path>\ndoc.md\n</parameter>\n"
        f"<parameter=content>\n{value}\n</parameter>\n</function>"
    )
    return f"<tool_call>\n{call}\n</tool_call>" if wrapped else call


@pytest.mark.parametrize("tag", TAGS)
@pytest.mark.parametrize("wrapped", [True, False])
def test_a_tag_style_call_is_whole_or_not_run(tag: str, wrapped: bool) -> None:
    value = f"Write {tag} to end it.\nmore text"
    r = parse("I will write the doc.\n" + tags_call(value, wrapped=wrapped))
    if r.tool_calls:
        (call,) = r.tool_calls
        assert call.arguments == {"path": "doc.md", "content": value}
    else:
        assert "ambiguous_call" in r.codes
        assert r.echo_calls == ()


def test_a_closing_tool_call_tag_inside_a_value_is_taken_whole() -> None:
    value = "the wrapper ends with </tool_call> and that is all"
    r = parse(tags_call(value, wrapped=True))
    (call,) = r.tool_calls
    assert call.arguments["content"] == value


@pytest.mark.parametrize("tag", [*TAGS, "</tool_call></tool_call>", '"}}</tool_call>'])
def test_a_json_call_is_read_to_the_end_of_its_json(tag: str) -> None:
    args = {"path": "doc.md", "content": f"a {tag} b"}
    body = json.dumps({"name": "write_file", "arguments": args})
    r = parse(f"Writing it now.\n<tool_call>\n{body}\n</tool_call>\nDone.")
    (call,) = r.tool_calls
    assert call.arguments == args
    assert r.text == "Writing it now.\n\nDone."


def test_two_calls_each_with_tags_inside_stay_apart() -> None:
    first = {"path": "a.md", "content": "</tool_call>"}
    second = {"path": "b.md", "content": "<tool_call>"}
    blocks = [
        "<tool_call>" + json.dumps({"name": "write_file", "arguments": a}) + "</tool_call>"
        for a in (first, second)
    ]
    r = parse("\n".join(blocks))
    assert [c.arguments for c in r.tool_calls] == [first, second]


def test_a_tag_in_prose_code_does_not_refuse_the_call() -> None:
    r = parse(
        "The format uses `</parameter>` to close a value.\n" + tags_call("plain text", wrapped=True)
    )
    (call,) = r.tool_calls
    assert call.arguments["content"] == "plain text"


@pytest.mark.parametrize("wrapped", [True, False])
def test_ordinary_calls_still_run(wrapped: bool) -> None:
    calls = [tags_call(v, wrapped=wrapped) for v in ("line 1\nline 2", "x")]
    r = parse("Two files.\n" + "\n".join(calls))
    assert [c.arguments["content"] for c in r.tool_calls] == ["line 1\nline 2", "x"]
    assert "ambiguous_call" not in r.codes
