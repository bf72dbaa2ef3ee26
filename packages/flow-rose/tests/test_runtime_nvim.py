"""flow-core's Runtime with a RoseBridge attached, against a real headless Neovim.

The model is scripted; the reviewer's scripted reply is a callable that acts as the user in
Neovim (through the test's own connection) while the review is under way.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from flow_core import (
    ChatMessage,
    ChatResponse,
    FlowConfig,
    Report,
    Runtime,
    ScriptedBackend,
    ToolCall,
)
from flow_rose import RoseBridge
from flow_testing.replies import text

pytestmark = pytest.mark.nvim

PY = sys.executable
TESTS = {"cmd": [PY, "-c", "import sys; sys.exit(0)"], "kind": "test"}
LINT_OK = {"status": "ok", "verified": True, "error_count": 0, "stale": False}


def call(name: str, **args: Any) -> ChatResponse:
    return ChatResponse("", tool_calls=(ToolCall(f"call-{name}", name, args),))


def approve() -> ChatResponse:
    return text(json.dumps({"approved": True, "summary": "fine", "findings": []}))


@pytest.fixture
def config(editor: Any) -> FlowConfig:
    return FlowConfig.model_validate(
        {
            "workspace_dir": str(editor.workspace),
            "checks": {"tests": TESTS},
            "agent": {"max_cycles": 1},
        }
    )


@pytest.fixture
def bridge(editor: Any) -> Iterator[RoseBridge]:
    b = RoseBridge.connect(editor.socket, workspace=editor.workspace, timeout=30)
    try:
        yield b
    finally:
        b.close()


def _run(config: FlowConfig, bridge: RoseBridge, replies: Sequence[Any]) -> Report:
    rt = Runtime(config, trusted=True, backend=ScriptedBackend(replies), editor=bridge)
    try:
        return rt.run("set x to 2")
    finally:
        rt.close()


def _script(reviewer: Any) -> list[Any]:
    return [
        text("Plan: write x = 2 to app.py."),
        call("write_file", path="app.py", content="x = 2\n"),
        text("done"),
        reviewer,
    ]


@pytest.mark.parametrize("user_edits_during_review", [False, True])
def test_buffer_changed_during_review_makes_the_run_unverified(
    editor: Any, config: FlowConfig, bridge: RoseBridge, user_edits_during_review: bool
) -> None:
    editor.set_global("rose_test_lint", LINT_OK)  # Rose's native linter gives coverage
    app = editor.load("app.py", "x = 1\n")
    notes = editor.load("notes.md", "notes\n")  # not the file the run edits, not current

    def reviewer(messages: list[ChatMessage], tools: tuple[Any, ...]) -> ChatResponse:
        if user_edits_during_review:
            # The user edits and saves another buffer while the reviewer is working: nothing
            # stays dirty, but the workspace the reviewer judged is not the one verified.
            editor.type_into(notes, ["the user changed this"])
            editor.user.command(f"buffer {notes}")
            editor.user.command("write")
        return approve()

    report = _run(config, bridge, _script(reviewer))

    # The coder's write went through Rose into the loaded, clean buffer.
    assert editor.path("app.py").read_text(encoding="utf-8") == "x = 2\n"
    assert editor.lines(app) == ["x = 2"]
    assert editor.option(app, "modified") is False
    assert report.verification is not None
    if user_edits_during_review:
        assert report.status == "unverified"
        assert not report.verified
        assert any("snapshot" in r for r in report.verification.reasons), report.verification
    else:
        assert report.status == "verified", report.verification
        assert report.verified
        keys = {(c.key, c.status) for c in report.verification.coverage}
        assert ("python", "covered") in keys
        assert any("rose:editor_lint" in c.by for c in report.verification.coverage)


def test_unsaved_user_buffer_refuses_the_coders_write(
    editor: Any, config: FlowConfig, bridge: RoseBridge
) -> None:
    app = editor.load("app.py", "x = 1\n")
    editor.type_into(app, ["x = 'the user is typing'"])
    report = _run(config, bridge, _script(approve()))
    assert not report.verified
    assert editor.lines(app) == ["x = 'the user is typing'"]
    assert editor.path("app.py").read_text(encoding="utf-8") == "x = 1\n"
    write_calls = [t for t in report.tool_calls if t.name == "write_file"]
    assert write_calls
    assert not write_calls[0].ok


def test_named_check_refused_while_a_buffer_is_dirty(
    editor: Any, config: FlowConfig, bridge: RoseBridge
) -> None:
    editor.load("app.py", "x = 1\n")
    other = editor.load("lib/other.py", "y = 1\n")
    editor.type_into(other, ["y = 'unsaved'"])
    rt = Runtime(config, trusted=True, backend=ScriptedBackend([]), editor=bridge)
    try:
        report = rt.check("tests")
        assert report.status == "failed"
        assert [c.status for c in report.checks] == ["refused"]
        assert report.checks[0].error is not None
        assert report.checks[0].error.code == "check_refused"
        assert "lib/other.py" in report.checks[0].error.message
        # Once the user saves, the same check runs and passes.
        editor.user.command(f"buffer {other}")
        editor.user.command("write")
        again = rt.check("tests")
        assert again.status == "passed"
        assert [c.status for c in again.checks] == ["passed"]
    finally:
        rt.close()
