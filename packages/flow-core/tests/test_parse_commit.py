"""parse_reply acts only on what the model committed to; nothing the model sends raises.

Cases reduced from public bug reports of other coding agents (issue 14): a write cut off by the
length limit, a call inside reasoning, a call-shaped JSON object quoted in a final answer, two
calls with one id, lone surrogates and NaN in arguments.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from flow_core import REPLY_ISSUE_CODES, ChatResponse, ParsedReply, ToolCall, parse_reply

TOOLS = ("read_file", "write_file", "edit_file")
CUT = "<function=write_file>\n<parameter=path>\nREADME.md\n</parameter>\n<parameter=content>\n# Ti"


def parse(content: str = "", *calls: ToolCall, finish: str | None = None) -> ParsedReply:
    return parse_reply(
        ChatResponse(content=content, tool_calls=calls, finish_reason=finish),
        TOOLS,
        max_chars=10_000,
    )


def answered_ids(r: ParsedReply) -> list[str]:
    """The ids the runtime answers: each run call once, each dropped call by its issue."""
    run = [c.id for c in r.tool_calls]
    dropped = [i.tool_call_id for i in r.issues if i.tool_call_id and i.tool_call_id not in run]
    return run + list(dict.fromkeys(dropped))


# --- length limit --------------------------------------------------------------------------


@pytest.mark.parametrize("finish", ["length", "max_tokens"])
def test_structured_calls_of_a_cut_off_reply_run_none(finish: str) -> None:
    calls = (
        ToolCall("a", "write_file", {"path": "README.md", "content": "# Ti"}),
        ToolCall("b", "read_file", {"path": "x"}),
    )
    r = parse("", *calls, finish=finish)
    assert r.tool_calls == ()
    assert r.codes == ("context_overflow", "call_cut_off", "call_cut_off")
    assert [i.tool_call_id for i in r.issues[1:]] == ["a", "b"]
    assert all("cut off" in i.message for i in r.issues[1:])
    assert [c.id for c in r.echo_calls] == ["a", "b"]


def test_text_call_cut_off_mid_write_is_not_run() -> None:
    r = parse(CUT, finish="length")
    assert r.tool_calls == ()
    assert "call_cut_off" in r.codes
    # Negative control: the same call, complete and stopped normally, is recovered.
    whole = parse(CUT + "tle\n</parameter>\n</function>")
    assert [(c.name, c.arguments["path"]) for c in whole.tool_calls] == [
        ("write_file", "README.md")
    ]


def test_complete_text_call_in_a_cut_off_reply_is_not_run_either() -> None:
    r = parse(
        "<tool_call>"
        + json.dumps({"name": "read_file", "arguments": {"path": "a"}})
        + "</tool_call>",
        finish="length",
    )
    assert r.tool_calls == ()
    assert r.codes == ("context_overflow", "text_tool_call", "call_cut_off")
    assert answered_ids(r) == [r.echo_calls[0].id]


def test_unclosed_function_wrapper_is_never_a_call() -> None:
    r = parse(CUT)
    assert r.tool_calls == ()
    assert "text_tool_call" not in r.codes


# --- committed answer only -----------------------------------------------------------------


def test_calls_inside_reasoning_are_not_run() -> None:
    inner = (
        "<tool_call>"
        + json.dumps({"name": "write_file", "arguments": {"path": "a", "content": ""}})
        + "</tool_call>"
    )
    r = parse(f"<think>maybe {inner}</think>The plan: edit a.py.")
    assert r.tool_calls == ()
    assert r.text == "The plan: edit a.py."
    assert r.issues == ()
    unclosed = parse(f"<think>I could {inner} but")
    assert unclosed.tool_calls == ()
    assert unclosed.codes == ("reasoning_only",)  # reasoning alone is not an empty reply
    after = parse(f"<think>read it</think>{inner}")
    assert [c.name for c in after.tool_calls] == ["write_file"]


def test_final_answer_quoting_a_call_shaped_object_is_accepted_as_text() -> None:
    answer = (
        "The fix is done. The tool now returns objects like:\n```json\n"
        '{"name": "read_file", "arguments": {"path": "src/app.py"}}\n```\n'
    )
    r = parse(answer)
    assert r.issues == ()
    assert r.tool_calls == ()
    assert r.text == answer


def test_reply_that_is_only_a_fenced_wrapper_is_a_call() -> None:
    body = "```xml\n<function=read_file>\n<parameter=path>\na.py\n</parameter>\n</function>\n```"
    assert [c.arguments for c in parse(body).tool_calls] == [{"path": "a.py"}]


# --- ids -----------------------------------------------------------------------------------


def test_duplicate_ids_get_unique_ids_and_one_answer_each() -> None:
    r = parse(
        "",
        ToolCall("call_0", "read_file", {"path": "a"}),
        ToolCall("call_0", "read_file", {"path": "b"}),
        ToolCall("call_0", "nope", {}),
        ToolCall("", "read_file", {"path": "c"}),
    )
    ids = [c.id for c in r.echo_calls]
    assert ids == ["call_0", "call_0~2", "call_0~3", "call"]
    assert [c.id for c in r.tool_calls] == ["call_0", "call_0~2", "call"]
    assert sorted(answered_ids(r)) == sorted(ids)


# --- malformed text ------------------------------------------------------------------------


def test_lone_surrogate_in_text_is_classified_and_replaced() -> None:
    r = parse("Plan: fix it \ud83d now")
    assert r.codes == ("invalid_unicode",)
    assert r.text == "Plan: fix it \ufffd now"
    r.text.encode("utf-8")


@pytest.mark.parametrize(
    "args",
    [
        {"path": "a.md", "content": "smile \ud83d"},
        {"path": "a.md\udcff", "content": ""},
        '{"path": "a.md", "content": "\\ud83d"}',
        {"path": "a", "content": float("nan")},
        '{"path": "a", "n": NaN}',
        {"path": "a", "nested": [[{"x": "\udfff"}]]},
    ],
)
def test_invalid_arguments_drop_the_call_and_echo_safely(args: Any) -> None:
    r = parse("", ToolCall("w", "write_file", args))
    assert r.tool_calls == ()
    assert "invalid_arguments" in r.codes
    assert r.issues[-1].tool_call_id == "w"
    (echo,) = r.echo_calls
    json.dumps(echo.arguments, ensure_ascii=False, allow_nan=False).encode("utf-8")


def test_text_call_holding_a_lone_surrogate_is_not_run() -> None:
    body = "<function=write_file>\n<parameter=path>\na.md\n</parameter>\n"
    r = parse(body + "<parameter=content>\nhi \ud83d\n</parameter>\n</function>")
    assert r.tool_calls == ()
    assert r.codes == ("invalid_unicode", "text_tool_call", "invalid_arguments")
    # Negative control: the same call with valid text runs, even next to a bad prose char.
    ok = parse("note \ud83d\n" + body + "<parameter=content>\nhi\n</parameter>\n</function>")
    assert [c.arguments for c in ok.tool_calls] == [{"path": "a.md", "content": "hi"}]


def test_messages_never_carry_a_huge_name() -> None:
    r = parse("", ToolCall("x", "n" * 100_000, {}))
    assert r.codes == ("unknown_tool",)
    assert len(r.issues[0].message) < 400


# --- property-based ------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
fragments = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "<function=read_file>",
        "<function=write_file>",
        "</function>",
        "<parameter=path>",
        "</parameter>",
        "<think>",
        "</think>",
        "```json\n",
        "```",
        "`",
        "{",
        "}",
        "[",
        "]",
        '"name": "read_file"',
        '"arguments": {',
        ":",
        ",",
        "\n",
        "\ud83d",
        "\udcff",
        "NaN",
        '{"name": "read_file", "arguments": {"path": "a"}}',
    ]
)
texts = st.lists(st.one_of(fragments, st.text(max_size=10)), max_size=25).map("".join)
arguments = st.one_of(
    json_values, texts, st.dictionaries(st.text(max_size=8), json_values, max_size=4)
)


def check_invariants(r: ParsedReply) -> None:
    assert set(r.codes) <= set(REPLY_ISSUE_CODES)
    r.text.encode("utf-8")
    for issue in r.issues:
        issue.message.encode("utf-8")
        assert len(issue.message) < 2_000
    echo_ids = [c.id for c in r.echo_calls]
    assert len(set(echo_ids)) == len(echo_ids)
    for call in r.echo_calls:
        json.dumps(
            [call.id, call.name, call.arguments], ensure_ascii=False, allow_nan=False
        ).encode()
    for call in r.tool_calls:
        assert call.name in TOOLS
        assert isinstance(call.arguments, dict)
        json.dumps(call.arguments, ensure_ascii=False, allow_nan=False).encode("utf-8")
        assert call.id in echo_ids
    assert sorted(answered_ids(r)) == sorted(echo_ids) or not r.echo_calls


@given(texts, st.sampled_from([None, "stop", "length", "tool_calls", "weird"]))
@settings(max_examples=200, deadline=None)
def test_any_text_reply_is_classified_never_raises(content: str, finish: str | None) -> None:
    r = parse(content, finish=finish)
    check_invariants(r)
    if finish == "length":
        assert r.tool_calls == ()


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "a", "", "b\ud800"]),
            st.sampled_from([*TOOLS, "x", "\udcff"]),
            arguments,
        ),
        max_size=5,
    ),
    texts,
    st.sampled_from([None, "stop", "length"]),
)
@settings(max_examples=150, deadline=None)
def test_any_structured_calls_are_classified_never_raise(
    calls: list[tuple[str, str, Any]], content: str, finish: str | None
) -> None:
    r = parse(content, *(ToolCall(i, n, a) for i, n, a in calls), finish=finish)
    check_invariants(r)
    if calls:  # structured calls win over text; each is echoed under its own id
        assert len(r.echo_calls) == len(calls)


# --- hostile sizes: each of these took quadratic time in some parser shape -------------------

N = 200_000


@pytest.mark.parametrize(
    "content",
    [
        "<tool_call>" + " " * N + "x",
        "<function=a>" * (N // 12),
        "</function>" + "<function=a>" * (N // 12),
        "<function=a>" + "<parameter=x>" * (N // 13) + "</function>",
        "<think>" * (N // 7),
        "```\n" * (N // 4),
        "`a" * (N // 2),
        '{"name": ' * (N // 9),
        "<tool_call>" * (N // 11),
        "<function=" + "a" * N,
    ],
    ids=[
        "ws",
        "opens",
        "close-opens",
        "params",
        "think",
        "fences",
        "ticks",
        "braces",
        "tc",
        "name",
    ],
)
def test_hostile_replies_parse_in_linear_time(content: str) -> None:
    # A quadratic shape at this size takes minutes; the suite's timeout would catch it.
    r = parse_reply(ChatResponse(content), TOOLS, max_chars=10 * N)
    assert len(r.text) <= len(content)
