"""The runtime's parts on their own: context trimming and change tracking."""

from __future__ import annotations

from pathlib import Path

from flow_core import ChatMessage, ToolCall
from flow_core.run._changes import ChangeTracker, unified_diff
from flow_core.run._context import TRIMMED, Context
from flow_safeio import Workspace


def test_context_trims_the_oldest_tool_output_first() -> None:
    ctx = Context(fixed=10)
    ctx.add(ChatMessage(role="system", content="s" * 100))
    ctx.add(ChatMessage(role="tool", content="a" * 1_000, tool_call_id="1"))
    ctx.add(ChatMessage(role="tool", content="b" * 1_000, tool_call_id="2"))
    assert ctx.total == 10 + 100 + 2_000
    assert ctx.fit(1_500)
    assert [m.content[:1] for m in ctx.messages] == ["s", "[", "b"]
    assert ctx.messages[1].content == TRIMMED
    assert ctx.total == 10 + 100 + len(TRIMMED) + 1_000
    # The system prompt is never trimmed: a budget below it cannot be met.
    assert not ctx.fit(50)
    assert ctx.messages[0].content == "s" * 100


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
