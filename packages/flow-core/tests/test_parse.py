"""parse_reply: every issue code, every text tool-call form, and what must not be a call."""

from __future__ import annotations

import json

import pytest

from flow_core import REPLY_ISSUE_CODES, ChatResponse, ParsedReply, ToolCall, parse_reply

TOOLS = ("read_file", "write_file", "search")


def parse(
    content: str = "", *calls: ToolCall, finish: str | None = None, cap: int = 10_000
) -> ParsedReply:
    return parse_reply(
        ChatResponse(content=content, tool_calls=calls, finish_reason=finish), TOOLS, max_chars=cap
    )


def test_clean_reply_has_no_issues() -> None:
    r = parse("Here is the plan.")
    assert r.text == "Here is the plan."
    assert r.tool_calls == ()
    assert r.issues == ()


def test_structured_calls_pass_through() -> None:
    r = parse("", ToolCall("c1", "read_file", {"path": "a.py"}), ToolCall("c2", "search", {}))
    assert r.issues == ()
    assert [(c.id, c.name, c.arguments) for c in r.tool_calls] == [
        ("c1", "read_file", {"path": "a.py"}),
        ("c2", "search", {}),
    ]


def test_every_code_is_documented() -> None:
    assert set(REPLY_ISSUE_CODES) == {
        "text_tool_call",
        "arguments_as_string",
        "invalid_arguments",
        "unknown_tool",
        "empty_reply",
        "reasoning_only",
        "reply_too_large",
        "context_overflow",
        "call_cut_off",
        "invalid_unicode",
        "ambiguous_call",
    }
    assert all(REPLY_ISSUE_CODES.values())


# --- text_tool_call --------------------------------------------------------------------------

CALL = {"name": "read_file", "arguments": {"path": "src/a.py"}}


@pytest.mark.parametrize(
    "content",
    [
        json.dumps(CALL),
        "  \n" + json.dumps(CALL) + "\n",
        json.dumps({"name": "read_file", "parameters": {"path": "src/a.py"}}),
        json.dumps({"type": "function", "function": CALL}),
        json.dumps([CALL]),
        "```json\n" + json.dumps(CALL, indent=2) + "\n```",
        "```\n" + json.dumps(CALL) + "\n```",
        "<tool_call>\n" + json.dumps(CALL) + "\n</tool_call>",
        "<tool_call>" + json.dumps(CALL),  # the model stopped before the closing tag
        "<function=read_file>" + json.dumps(CALL["arguments"]) + "</function>",
        "<function=read_file>\n<parameter=path>\nsrc/a.py\n</parameter>\n</function>",
        "<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/a.py\n</parameter>\n"
        "</function>\n</tool_call>",
    ],
    ids=[
        "bare",
        "bare-padded",
        "parameters-key",
        "openai-shape",
        "array",
        "fenced-json",
        "fenced-plain",
        "tool_call-tag",
        "tool_call-unclosed",
        "function-json",
        "function-parameters",
        "qwen3-coder-xml",
    ],
)
def test_text_tool_call_is_recovered_and_recorded(content: str) -> None:
    r = parse(content)
    assert r.codes == ("text_tool_call",)
    assert [(c.name, c.arguments) for c in r.tool_calls] == [("read_file", {"path": "src/a.py"})]
    assert r.issues[0].tool_call_id == r.tool_calls[0].id
    assert "read_file" not in r.text


def test_text_call_is_removed_but_prose_kept() -> None:
    r = parse("Reading it now.\n<tool_call>\n" + json.dumps(CALL) + "\n</tool_call>")
    assert r.text == "Reading it now."


def test_several_text_calls_get_distinct_ids() -> None:
    two = [CALL, {"name": "search", "arguments": {"query": "def f"}}]
    content = "".join("<tool_call>" + json.dumps(c) + "</tool_call>\n" for c in two)
    r = parse(content)
    assert r.codes == ("text_tool_call", "text_tool_call")
    assert [c.name for c in r.tool_calls] == ["read_file", "search"]
    assert len({c.id for c in r.tool_calls}) == 2
    assert parse(content).tool_calls == r.tool_calls  # deterministic


def test_parameter_values_keep_inner_newlines() -> None:
    content = (
        "<function=write_file>\n<parameter=path>\na.py\n</parameter>\n"
        "<parameter=text>\nline 1\nline 2\n\n</parameter>\n</function>"
    )
    (call,) = parse(content).tool_calls
    assert call.arguments == {"path": "a.py", "text": "line 1\nline 2\n"}


def test_text_call_to_unknown_tool_is_recorded_twice_and_dropped() -> None:
    r = parse(json.dumps({"name": "run_shell", "arguments": {"cmd": "rm -rf /"}}))
    assert r.codes == ("text_tool_call", "unknown_tool")
    assert r.tool_calls == ()
    assert r.issues[0].tool_call_id == r.issues[1].tool_call_id


def test_text_call_with_string_arguments() -> None:
    r = parse(json.dumps({"name": "read_file", "arguments": json.dumps({"path": "a"})}))
    assert r.codes == ("text_tool_call", "arguments_as_string")
    assert r.tool_calls[0].arguments == {"path": "a"}


@pytest.mark.parametrize(
    "content",
    [
        '{"approved": true, "summary": "ok", "findings": []}',
        '```json\n{"approved": false, "findings": ["name is wrong"]}\n```',
        '{"name": "Flow", "version": "0.1"}',  # JSON with a name but no arguments
        "The function `read_file(path)` returns text.",
        "<function=>not a call</function>",
        '{"name": "read_file", "arguments": {"path": ',  # broken JSON
        # JSON quoted in prose is prose, fenced or not (issue 14: a finished answer quoting a
        # call-shaped object was taken for three unknown_tool calls).
        "I need to look at the file first: " + json.dumps(CALL) + " and then fix it.",
        "Done. The config now reads:\n```json\n" + json.dumps(CALL) + "\n```\nAll set.",
        'Done: the payload is\n```json\n{"name": "release", "arguments": {"v": 2}}\n```',
        "To read a file the model writes `<function=read_file>{}</function>` in its reply.",
        "Example:\n```\n<tool_call>\n" + json.dumps(CALL) + "\n</tool_call>\n```\nThat is all.",
    ],
)
def test_ordinary_text_is_not_a_call(content: str) -> None:
    r = parse(content)
    assert r.tool_calls == ()
    assert "text_tool_call" not in r.codes
    assert r.text == content


def test_structured_calls_win_over_text() -> None:
    r = parse(json.dumps(CALL), ToolCall("c1", "search", {"query": "x"}))
    assert r.issues == ()
    assert [c.name for c in r.tool_calls] == ["search"]
    assert r.text == json.dumps(CALL)


# --- arguments -------------------------------------------------------------------------------


def test_arguments_as_string_are_decoded() -> None:
    r = parse("", ToolCall("c1", "read_file", '{"path": "a.py"}'))
    assert r.codes == ("arguments_as_string",)
    assert r.issues[0].tool_call_id == "c1"
    assert r.tool_calls == (ToolCall("c1", "read_file", {"path": "a.py"}),)


def test_empty_string_arguments_mean_no_arguments() -> None:
    r = parse("", ToolCall("c1", "search", ""))
    assert r.codes == ("arguments_as_string",)
    assert r.tool_calls[0].arguments == {}


@pytest.mark.parametrize("args", ["{not json", "[1, 2]", '"a.py"', "null", "42"])
def test_invalid_arguments_drop_the_call(args: str) -> None:
    r = parse("", ToolCall("c9", "read_file", args), ToolCall("c10", "search", {"q": "x"}))
    assert r.codes == ("invalid_arguments",)
    assert r.issues[0].tool_call_id == "c9"
    assert [c.id for c in r.tool_calls] == ["c10"]


def test_text_call_with_non_object_arguments() -> None:
    r = parse("<function=read_file>a.py</function>")
    assert r.codes == ("text_tool_call", "invalid_arguments")
    assert r.tool_calls == ()


# --- unknown_tool ----------------------------------------------------------------------------


def test_unknown_tool_is_dropped_with_its_id() -> None:
    r = parse("", ToolCall("x1", "delete_file", {"path": "a"}), ToolCall("x2", "read_file", {}))
    assert r.codes == ("unknown_tool",)
    assert r.issues[0].tool_call_id == "x1"
    assert "read_file" in r.issues[0].message  # tells the model what it may call
    assert [c.id for c in r.tool_calls] == ["x2"]


def test_no_tools_offered() -> None:
    r = parse_reply(
        ChatResponse("", tool_calls=(ToolCall("a", "read_file", {}),)), (), max_chars=100
    )
    assert r.codes == ("unknown_tool",)


# --- empty, size, length ---------------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "   \n\t"])
def test_empty_reply(content: str) -> None:
    r = parse(content)
    assert r.codes == ("empty_reply",)
    assert r.tool_calls == ()


def test_reply_too_large_is_truncated() -> None:
    r = parse("a" * 50, cap=20)
    assert r.codes == ("reply_too_large",)
    assert r.text == "a" * 20


def test_exactly_at_the_cap_is_fine() -> None:
    assert parse("a" * 20, cap=20).issues == ()


def test_context_overflow() -> None:
    r = parse("partial answer", finish="length")
    assert r.codes == ("context_overflow",)
    assert r.text == "partial answer"


def test_empty_and_cut_short() -> None:
    assert parse("", finish="length").codes == ("context_overflow", "empty_reply")


def test_max_chars_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        parse("x", cap=0)


def test_many_braces_do_not_blow_up() -> None:
    content = '{"name": ' * 5000
    r = parse(content, cap=100_000)
    assert r.tool_calls == ()


def test_deeply_nested_arguments_are_invalid_not_a_crash() -> None:
    r = parse("", ToolCall("d", "search", "[" * 100_000))
    assert r.codes == ("invalid_arguments",)


def test_valid_text_replaces_each_lone_surrogate_and_keeps_pairs_and_clean_text() -> None:
    from flow_core._unicode import first_surrogate, valid_text

    clean = "caf\u00e9 \U0001f600"
    assert valid_text(clean) is clean
    assert first_surrogate(clean) is None
    broken = "a\udcffb\ud800"  # a surrogateescape'd byte, then a lone high surrogate
    assert first_surrogate(broken) == 1
    assert valid_text(broken) == "a\ufffdb\ufffd"
    assert valid_text(broken).encode("utf-8") == b"a\xef\xbf\xbdb\xef\xbf\xbd"
