"""Runtime with an editor bridge attached, plus check()/status()/rollback() details."""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import flow_core
from flow_core import (
    ChatMessage,
    ChatResponse,
    EditorBridge,
    EditorLintResult,
    FlowConfig,
    LoadedConfig,
    NotTrustedError,
    Report,
    Runtime,
    ScriptedBackend,
    ToolCall,
)
from flow_testing.editors import RecordingEditor
from flow_testing.replies import text

PY = sys.executable
TESTS = {"cmd": [PY, "-c", "import app, sys; sys.exit(0 if app.x == 2 else 1)"], "kind": "test"}


def edit(old: str, new: str) -> ChatResponse:
    args = {"path": "app.py", "old_text": old, "new_text": new}
    return ChatResponse("", tool_calls=(ToolCall("e1", "edit_file", args),))


APPROVE = text(json.dumps({"approved": True, "summary": "fine", "findings": []}))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    (root / "app.py").write_text("x = 1\n")
    return root


def run_with(
    editor: RecordingEditor, config: FlowConfig, replies: Sequence[Any]
) -> tuple[Report, ScriptedBackend]:
    backend = ScriptedBackend(replies)
    bridge: EditorBridge = editor
    rt = Runtime(config, trusted=True, backend=backend, editor=bridge)
    report = rt.run("set x to 2")
    rt.close()
    assert editor.closed
    return report, backend


def test_editor_route_and_native_lint_coverage(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    editor = RecordingEditor(ws)
    report, backend = run_with(
        editor,
        flow_config({"tests": TESTS}, agent={"max_cycles": 1}),
        [text("plan"), edit("x = 1", "x = 2"), text("done"), APPROVE],
    )
    assert report.verified, report.verification
    assert "write:app.py" in editor.calls
    assert "lint:app.py" in editor.calls
    assert report.verification is not None
    assert [(c.key, c.status, c.by) for c in report.verification.coverage] == [
        ("python", "covered", ["rose:editor_lint"])
    ]
    planner_tools = {t["function"]["name"] for t in backend.requests[0].tools}
    coder_tools = {t["function"]["name"] for t in backend.requests[1].tools}
    assert "editor_diagnostics" in planner_tools
    assert "editor_lint" not in planner_tools
    assert "editor_lint" in coder_tools


def test_dirty_buffer_at_end_of_review_blocks(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    editor = RecordingEditor(ws)

    def dirtying_reviewer(
        messages: list[ChatMessage], tools: Sequence[Mapping[str, Any]]
    ) -> ChatResponse:
        editor.dirty = ("app.py",)
        return APPROVE

    report, _ = run_with(
        editor,
        flow_config({"tests": TESTS}, agent={"max_cycles": 1}),
        [text("plan"), edit("x = 1", "x = 2"), text("done"), dirtying_reviewer],
    )
    assert not report.verified
    assert report.verification is not None
    assert not report.verification.conditions.unchanged
    assert any("unsaved editor buffers" in r for r in report.verification.reasons)


def test_snapshot_change_during_review_blocks(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    editor = RecordingEditor(ws)

    def reviewer(messages: list[ChatMessage], tools: Sequence[Mapping[str, Any]]) -> ChatResponse:
        editor.snapshot = "s2"
        return APPROVE

    report, _ = run_with(
        editor,
        flow_config({"tests": TESTS}, agent={"max_cycles": 1}),
        [text("plan"), edit("x = 1", "x = 2"), text("done"), reviewer],
    )
    assert report.verification is not None
    assert not report.verification.conditions.unchanged


def test_dirty_buffers_refuse_checks(ws: Path, flow_config: Callable[..., FlowConfig]) -> None:
    editor = RecordingEditor(ws)
    editor.dirty = ("other.py",)
    report, _ = run_with(
        editor,
        flow_config({"tests": TESTS}, agent={"max_cycles": 1}),
        [text("plan"), edit("x = 1", "x = 2"), text("done")],
    )
    assert [c.status for c in report.checks] == ["refused"]
    assert not report.verified


def test_native_lint_errors_veto(ws: Path, flow_config: Callable[..., FlowConfig]) -> None:
    editor = RecordingEditor(ws)
    editor.lint_result = lambda p: EditorLintResult("ok", True, tuple(p), error_count=1)
    report, _ = run_with(
        editor,
        flow_config({"tests": TESTS}, agent={"max_cycles": 1}),
        [text("plan"), edit("x = 1", "x = 2"), text("done"), APPROVE],
    )
    assert report.verification is not None
    assert report.verification.coverage[0].status == "vetoed"
    assert not report.verified


def test_editor_workspace_mismatch_fails_before_any_write(
    ws: Path, tmp_path: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    editor = RecordingEditor(ws, workspace=str(other))
    report, backend = run_with(editor, flow_config({"tests": TESTS}), [text("plan")])
    assert report.status == "failed"
    assert "editor_workspace_mismatch" in [e.code for e in report.errors]
    assert backend.requests == []
    assert editor.calls == []


def test_check_report_keeps_run_pre_images_for_rollback(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    backend = ScriptedBackend([text("plan"), edit("x = 1", "x = 2"), text("done"), APPROVE])
    rt = Runtime(flow_config({"tests": TESTS}), trusted=True, backend=backend)
    run = rt.run("t")
    assert run.changed_files == ["app.py"]
    check = rt.check()
    assert (check.kind, check.status, check.changed_files, check.diff) == (
        "check",
        "passed",
        [],
        "",
    )
    assert check.verification is None
    assert check.budgets is None
    assert rt.rollback() == []
    assert (ws / "app.py").read_text() == "x = 1\n"


def test_rollback_removes_files_the_run_created(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    new = ChatResponse(
        "",
        tool_calls=(ToolCall("w", "write_file", {"path": "pkg/new.txt", "content": "n"}),),
    )
    backend = ScriptedBackend([text("plan"), new, text("done")])
    rt = Runtime(
        flow_config({"tests": TESTS}, agent={"max_cycles": 1}), trusted=True, backend=backend
    )
    rt.run("t")
    assert (ws / "pkg" / "new.txt").read_text() == "n"
    assert rt.rollback() == []
    assert not (ws / "pkg" / "new.txt").exists()
    assert rt.rollback() == []  # already gone counts as removed


def test_status_lists_models_and_checks(ws: Path, flow_config: Callable[..., FlowConfig]) -> None:
    cfg = flow_config({"tests": TESTS}, models={"coder": "big-coder"})
    report = Runtime(LoadedConfig(cfg, ["/etc/x.toml"])).status()
    assert report.kind == "status"
    assert report.ok
    assert not report.trusted
    assert report.models["coder"] == "big-coder"
    assert report.config_sources == ["/etc/x.toml"]
    assert report.configured_checks[0].argv == TESTS["cmd"]
    assert report.configured_checks[0].executable == PY
    assert report.tool_calls == []
    assert report.errors == []


def test_list_models_uses_the_backend(ws: Path, flow_config: Callable[..., FlowConfig]) -> None:
    rt = Runtime(flow_config(), backend=ScriptedBackend([], models=("a", "b")))
    assert rt.list_models() == ["a", "b"]


def test_on_event_errors_do_not_break_a_run(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    def broken(event: object) -> None:
        raise RuntimeError("display crashed")

    rt = Runtime(
        flow_config({"tests": TESTS}), backend=ScriptedBackend([text("plan")]), on_event=broken
    )
    assert rt.run("t").status == "read_only"


def test_missing_workspace_is_an_error_report(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    cfg = flow_config({"tests": TESTS})
    (ws / "app.py").unlink()
    ws.rmdir()
    backend = ScriptedBackend([text("plan")])
    report = Runtime(cfg, trusted=True, backend=backend).run("t")
    assert report.status == "error"
    assert not report.ok
    assert report.errors
    # Preflight names the missing workspace before any model request.
    assert report.errors[0].code == "preflight_workspace_missing"
    assert backend.requests == []


def test_ctrl_c_during_check_kills_the_group_and_reports_interrupted(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    import os
    import signal
    import threading

    from flow_core.verify._checks import live_process_groups

    pid_file = ws.parent / "pid"
    slow = {
        "cmd": ["/bin/sh", "-c", f"sleep 1000 & echo $$ > {pid_file}; sleep 1000"],
        "kind": "test",
    }
    # The pid file lies outside the workspace and the group kill is what is tested: no jail.
    cfg = flow_config({"slow": slow}, sandbox={"mode": "off"})
    rt = Runtime(cfg, trusted=True, backend=ScriptedBackend([]))
    stop = threading.Event()

    def press_ctrl_c() -> None:
        # Wait for the check's group to exist and its script to have started, then SIGINT us.
        while not stop.wait(0.01):
            if live_process_groups() and pid_file.exists() and pid_file.read_text().strip():
                os.kill(os.getpid(), signal.SIGINT)
                return

    helper = threading.Thread(target=press_ctrl_c)
    helper.start()
    try:
        report = rt.check("slow")
    finally:
        stop.set()
        helper.join()
    assert (report.status, report.ok) == ("interrupted", False)
    leader = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(leader, 0)  # the leader was reaped by Flow
    assert live_process_groups() == []


def test_runtime_is_a_context_manager(ws: Path, flow_config: Callable[..., FlowConfig]) -> None:
    backend = ScriptedBackend([text("plan")])
    with Runtime(flow_config(), backend=backend) as rt:
        assert rt.run("t").status == "read_only"
    assert backend.closed


def test_editor_route_never_writes_an_mcp_client_config(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    """The bridge's buffer-aware writes get the same protected-path rule as disk writes."""
    (ws / ".mcp.json").write_text("{}\n")
    editor = RecordingEditor(ws)
    write = ToolCall("w1", "write_file", {"path": ".mcp.json", "content": '{"x": 1}\n'})
    nested = ToolCall("w2", "write_file", {"path": ".vscode/mcp.json", "content": "{}\n"})
    report, _ = run_with(
        editor,
        flow_config({"tests": TESTS}, agent={"max_cycles": 1}),
        [
            text("plan"),
            ChatResponse("", tool_calls=(write,)),
            ChatResponse("", tool_calls=(nested,)),
            edit("x = 1", "x = 2"),
            text("done"),
            APPROVE,
        ],
    )
    assert [(t.name, t.error) for t in report.tool_calls[:2]] == [
        ("write_file", "protected"),
        ("write_file", "protected"),
    ]
    assert not [c for c in editor.calls if "mcp.json" in c]
    assert (ws / ".mcp.json").read_text() == "{}\n"
    assert report.changed_files == ["app.py"]


def test_not_trusted_check_message_is_for_users(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    rt = Runtime(flow_config({"tests": TESTS}), backend=ScriptedBackend([]))
    with pytest.raises(NotTrustedError) as err:
        rt.check()
    msg = str(err.value)
    assert "--trusted" in msg
    assert "fix: review the [checks.*] tables in your operator config" in msg
    assert "seed" not in msg.lower()


def _message_strings(path: Path) -> list[str]:
    """String literals of a module that are not docstrings (what can reach a user)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_no_message_cites_an_internal_source() -> None:
    """Messages shown to users name no outside document (design notes, reference specs)."""
    src = Path(flow_core.__file__).parent
    found = [
        (path.name, text)
        for path in sorted(src.rglob("*.py"))
        for text in _message_strings(path)
        # "seed" alone is the model option's name in Ollama's and OpenAI's APIs, not a citation.
        if text != "seed" and re.search(r"\bseed\b|DESIGN\.md", text)
    ]
    assert found == []
    # Guard the scan itself: it does see message strings.
    assert any("--trusted" in t for t in _message_strings(src / "run" / "_runtime.py"))


def test_a_file_whose_pre_image_cannot_be_kept_is_never_written(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    """Only a missing file counts as created: an existing file over the read cap cannot be
    kept for the diff and rollback, so overwriting it is refused (never shown as new, never
    deleted by a later rollback)."""
    big = b"x," * 200_000  # 400 KB, over the 256 KiB cap
    (ws / "data.csv").write_bytes(big)
    write = ChatResponse(
        "", tool_calls=(ToolCall("w", "write_file", {"path": "data.csv", "content": "a,b\n"}),)
    )
    backend = ScriptedBackend([text("plan"), write, text("done"), text("{}")])
    rt = Runtime(
        flow_config({"tests": TESTS}, agent={"max_cycles": 1}), trusted=True, backend=backend
    )
    report = rt.run("t")
    assert [(t.name, t.ok, t.error) for t in report.tool_calls] == [
        ("write_file", False, "too_large")
    ]
    assert (ws / "data.csv").read_bytes() == big
    assert report.changed_files == []
    assert "data.csv" not in report.diff
    assert rt.rollback() == []
    assert (ws / "data.csv").read_bytes() == big


def test_each_run_reports_only_its_own_state(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    """A second run on the same runtime starts from a fresh RunState: no errors, tool calls,
    history, plan or pre-images carried over from the first."""
    backend = ScriptedBackend(
        [
            text("plan"),
            edit("x = 1", "x = 2"),
            text("done"),
            text("not json"),  # first run: invalid review, unverified
            text("plan 2"),
            text("nothing to do"),
            APPROVE,
        ]
    )
    rt = Runtime(
        flow_config({"tests": TESTS}, agent={"max_cycles": 1}), trusted=True, backend=backend
    )
    first = rt.run("one")
    assert first.status == "unverified"
    assert [t.name for t in first.tool_calls] == ["edit_file"]
    assert "review_invalid" in [e.code for e in first.errors]
    assert first.changed_files == ["app.py"]
    second = rt.run("two")
    assert (second.task, second.plan) == ("two", "plan 2")
    assert second.tool_calls == []
    assert "review_invalid" not in [e.code for e in second.errors]
    assert second.changed_files == []  # app.py was not written in this run
    assert [c.cycle for c in second.verification_history] == [1]
    assert second.budgets is not None
    assert second.budgets.tool_calls.used == 0
    # rollback undoes the last run only: the first run's edit stays.
    assert rt.rollback() == []
    assert (ws / "app.py").read_text() == "x = 2\n"
