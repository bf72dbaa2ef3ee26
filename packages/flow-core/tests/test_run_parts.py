"""The runtime's parts on their own: context trimming and change tracking."""

from __future__ import annotations

from pathlib import Path

from flow_core import ChatMessage, ToolCall
from flow_core.run._changes import ChangeTracker, unified_diff
from flow_core.run._context import LOW_WATER, TRIMMED, Context
from flow_safeio import Workspace


def _read(i: int) -> ChatMessage:
    return ChatMessage("assistant", "", tool_calls=(ToolCall(f"c{i}", "read_file", {}),))


def test_context_trims_the_oldest_tool_output_first_down_to_the_low_water_mark() -> None:
    ctx = Context(fixed=10)
    ctx.add(ChatMessage(role="system", content="s" * 100))
    for i in range(4):
        ctx.add(_read(i))
        ctx.add(ChatMessage(role="tool", content=str(i) * 1_000, tool_call_id=f"c{i}"))
    before = list(ctx.messages)
    assert ctx.fit(ctx.total)  # fits: nothing changes
    assert ctx.messages == before
    assert ctx.fit(3_500)
    # Trimmed once down to LOW_WATER of the budget, oldest first; the newest result is kept.
    assert ctx.total <= int(3_500 * LOW_WATER)
    tools = [m.content for m in ctx.messages if m.role == "tool"]
    assert tools[:3] == [TRIMMED] * 3
    assert tools[3] == "3" * 1_000
    (change,) = ctx.changes
    assert (change.kind, change.messages) == ("trim", 3)
    # The next turns append only: the prefix stays byte for byte until the next trim.
    ctx.changes.clear()
    prefix = list(ctx.messages)
    ctx.add(_read(9))
    ctx.add(ChatMessage(role="tool", content="x" * 300, tool_call_id="c9"))
    assert ctx.fit(3_500)
    assert ctx.messages[: len(prefix)] == prefix
    assert ctx.changes == []
    # The system prompt is never trimmed: a budget below it cannot be met.
    assert not ctx.fit(50)
    assert ctx.messages[0].content == "s" * 100


def test_the_result_just_produced_is_cut_with_an_honest_marker() -> None:
    ctx = Context(fixed=0)
    ctx.add(ChatMessage(role="system", content="s" * 100))
    ctx.add(_read(1))
    text = "".join(f"line {n}\n" for n in range(3_000))
    ctx.add(ChatMessage(role="tool", content=text, tool_call_id="c1"))
    assert ctx.fit(5_000)
    result = ctx.messages[-1].content
    assert result != TRIMMED
    assert result.startswith("line 0\nline 1\n")
    assert "[output cut to fit the context window: showed characters 1-" in result
    assert f"of {len(text)}" in result
    assert "start_line=" in result
    assert ctx.total <= 5_000
    (change,) = ctx.changes
    assert (change.kind, change.tool_call_id) == ("cut", "c1")


def test_context_counts_tool_call_arguments() -> None:
    ctx = Context(fixed=0)
    call = ToolCall("c1", "read_file", {"path": "a.py"})
    ctx.add(ChatMessage(role="assistant", content="", tool_calls=(call,)))
    assert ctx.total == len("read_file") + len('{"path": "a.py"}')


def test_change_tracker_diff_fingerprints_and_rollback(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"one\n")
    with Workspace(tmp_path) as ws:
        changes = ChangeTracker(lambda: ws)
        changes.keep_pre_image("a.txt")
        changes.keep_pre_image("new.txt")
        before = changes.hashes()
        ws.write_bytes("a.txt", b"two")
        ws.write_bytes("new.txt", b"x\n")
        changes.keep_pre_image("a.txt")  # a second write keeps the first pre-image
        assert changes.pre == {"a.txt": b"one\n", "new.txt": None}
        assert changes.changed_files() == ["a.txt", "new.txt"]
        assert changes.hashes() != before
        assert "\\ No newline at end of file" in changes.diff()
        assert changes.rollback(None) == []
    assert (tmp_path / "a.txt").read_bytes() == b"one\n"
    assert not (tmp_path / "new.txt").exists()


def test_unified_diff_of_a_created_file() -> None:
    diff = unified_diff("n.py", None, b"x = 1\n")
    assert diff.startswith("--- /dev/null\n+++ b/n.py\n")
