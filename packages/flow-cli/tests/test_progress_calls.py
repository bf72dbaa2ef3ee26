"""The live view and the TUI summary show each tool call's arguments and, when it failed, why."""

from __future__ import annotations

from rich.console import Console

from flow_cli._progress import ProgressState, describe_call
from flow_core import Event


def rendered(state: ProgressState) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(state.render())
    return console.export_text()


def test_failed_call_shows_its_path_and_message() -> None:
    state = ProgressState()
    state.update(
        Event(
            "tool_call",
            role="coder",
            name="read_file",
            ok=False,
            call_id="tc-0003",
            error="path_outside",
            message="'../secret' is outside the workspace",
            arguments={"path": "../secret"},
        )
    )
    state.update(Event("tool_call", role="coder", name="list_files", ok=True, arguments={}))
    out = rendered(state)
    assert "✗ read_file(path='../secret'): path_outside: '../secret' is outside" in out
    assert "✓ list_files()" in out


def test_describe_call_is_one_bounded_line() -> None:
    line = describe_call("write_file", {"path": "a.md", "content": "x\n" * 500}, None, None)
    assert "\n" not in line
    assert len(line) <= 110
    assert line.startswith("write_file(path='a.md', content='x\\nx")
    bad = describe_call("edit_file", {"path": "f\x1b[31m.py"}, "edit_no_match", "not found\nat all")
    assert "\x1b" not in bad
    assert "\n" not in bad
