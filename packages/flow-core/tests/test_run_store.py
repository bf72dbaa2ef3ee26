"""Runs recorded in the run store, on_unverified, isolated runs and preflight (real files, git)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flow_core import ChatResponse, FlowConfig, Runtime, ScriptedBackend
from flow_core.store import RunStore, undo_run
from flow_safeio import Workspace
from flow_testing.replies import call, review, text

PY = sys.executable
TESTS = {"cmd": [PY, "-c", "import app, sys; sys.exit(0 if app.x == 2 else 1)"], "kind": "test"}
LINT = {"cmd": [PY, "-c", "print('lint ok')"], "kind": "lint", "filetypes": ["python"]}
CHECKS = {"tests": TESTS, "lint": LINT}


PLAN = text("Plan: set x to 2 and add notes.txt.")
GOOD = [
    PLAN,
    call("edit_file", path="app.py", old_text="x = 1", new_text="x = 2"),
    call("write_file", path="notes.txt", content="new\n"),
    text("done"),
    review(True),
]
BAD = [
    PLAN,
    call("edit_file", path="app.py", old_text="x = 1", new_text="x = 3"),
    call("write_file", path="notes.txt", content="new\n"),
    text("done"),
]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    (root / "app.py").write_text("x = 1\n")
    return root


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    return RunStore(tmp_path / "state" / "flow" / "runs")


def test_a_run_is_recorded_and_undone(
    ws: Path, store: RunStore, flow_config: Callable[..., FlowConfig]
) -> None:
    cfg = flow_config(CHECKS, agent={"max_cycles": 1})
    report = Runtime(cfg, trusted=True, backend=ScriptedBackend(GOOD), store=store).run("t")
    assert report.status == "verified"
    assert report.run_id is not None
    assert report.run_dir == str(store.root / report.run_id)
    info = store.get(report.run_id)
    assert info.status == "verified"
    assert info.changed_files == ["app.py", "notes.txt"]
    record = store.open(info)
    kinds = [line["type"] for line in record.transcript_lines()]
    assert kinds.count("model_request") == kinds.count("model_reply") == 5
    assert kinds.count("tool_call") == 2
    assert kinds.count("check") == 4  # the baseline run of both checks, then the final ones
    calls = [x for x in record.transcript_lines() if x["type"] == "tool_call"]
    assert calls[0]["arguments"] == {"path": "app.py", "old_text": "x = 1", "new_text": "x = 2"}
    assert calls[0]["ok"] is True
    checks = [x for x in record.transcript_lines() if x["type"] == "check"]
    assert checks[1]["output_tail"].strip() == "lint ok"
    first = next(x for x in record.transcript_lines() if x["type"] == "model_request")
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert (info.dir / "plan.md").read_text() == PLAN.content
    assert "+x = 2" in (info.dir / "diff.patch").read_text()
    assert json.loads((info.dir / "report.json").read_text())["run_id"] == report.run_id
    with Workspace(str(ws)) as w:
        undone = undo_run(store, info, w)
    assert undone.restored == ["app.py"]
    assert undone.removed == ["notes.txt"]
    assert (ws / "app.py").read_text() == "x = 1\n"
    assert not (ws / "notes.txt").exists()


def test_later_requests_record_only_new_messages(
    ws: Path, store: RunStore, flow_config: Callable[..., FlowConfig]
) -> None:
    cfg = flow_config(CHECKS, agent={"max_cycles": 1})
    Runtime(cfg, trusted=True, backend=ScriptedBackend(GOOD), store=store).run("t")
    record = store.open(store.list()[0])
    coder = [
        x
        for x in record.transcript_lines()
        if x["type"] == "model_request" and x["role"] == "coder"
    ]
    assert [x["same_prefix"] for x in coder] == [0, 2, 4]
    assert [len(x["messages"]) for x in coder] == [2, 2, 2]  # assistant reply + tool result
    assert coder[1]["messages"][1]["role"] == "tool"


def test_unverified_run_keeps_edits_by_default_and_rollback_restores(
    ws: Path, store: RunStore, flow_config: Callable[..., FlowConfig]
) -> None:
    kept = Runtime(
        flow_config(CHECKS, agent={"max_cycles": 1}),
        trusted=True,
        backend=ScriptedBackend(BAD),
        store=store,
    ).run("t")
    assert kept.status == "unverified"
    assert kept.rolled_back == []
    assert (ws / "app.py").read_text() == "x = 3\n"
    (ws / "app.py").write_text("x = 1\n")
    (ws / "notes.txt").unlink()
    cfg = flow_config(CHECKS, agent={"max_cycles": 1}, runs={"on_unverified": "rollback"})
    rolled = Runtime(cfg, trusted=True, backend=ScriptedBackend(BAD), store=store).run("t")
    assert rolled.status == "unverified"
    assert rolled.rolled_back == ["app.py", "notes.txt"]
    assert (ws / "app.py").read_text() == "x = 1\n"
    assert not (ws / "notes.txt").exists()
    # The record agrees: nothing is left changed, so there is nothing to undo.
    assert [e.path for e in store.open(store.get(rolled.run_id or "")).changed_files()] == []


def test_preflight_refuses_before_any_model_request(
    ws: Path, store: RunStore, flow_config: Callable[..., FlowConfig]
) -> None:
    optional = {**TESTS, "required": False}
    cases = [
        (flow_config({}), "fix it", "preflight_no_required_check"),
        (flow_config({"tests": optional}), "fix it", "preflight_no_required_check"),
        (
            flow_config({"tests": {"cmd": ["no-such-program-xyz"], "kind": "test"}}),
            "fix it",
            "preflight_check_missing",
        ),
        (flow_config(CHECKS), " \n\t", "preflight_empty_task"),
    ]
    for cfg, task, code in cases:
        backend = ScriptedBackend(GOOD)
        report = Runtime(cfg, trusted=True, backend=backend, store=store).run(task)
        assert report.status == "error", code
        assert [e.code for e in report.errors] == [code]
        assert backend.requests == []
    assert (ws / "app.py").read_text() == "x = 1\n"
    assert store.list() == []  # nothing ran, nothing recorded


def test_status_warns_about_what_preflight_would_refuse(
    flow_config: Callable[..., FlowConfig],
) -> None:
    bare = Runtime(flow_config({})).status()
    assert bare.ok is False
    assert bare.status == "ok"  # the configuration loaded; ok says a run could not verify
    assert [w.code for w in bare.warnings] == ["preflight_no_required_check"]
    ready = Runtime(flow_config(CHECKS)).status()
    assert ready.ok is True
    # its test check is not pytest and writes no JUnit XML: a warning, not a refusal
    assert [w.code for w in ready.warnings] == ["weak_evidence"]


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture
def repo(ws: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _git(ws, "init", "-q")
    _git(ws, "add", ".")
    _git(ws, "commit", "-q", "-m", "init")
    return ws


def test_isolated_verified_run_is_applied(
    repo: Path, store: RunStore, flow_config: Callable[..., FlowConfig]
) -> None:
    (repo / "local.txt").write_text("uncommitted\n")  # the user's own work stays as it is
    cfg = flow_config(CHECKS, agent={"max_cycles": 1})
    report = Runtime(cfg, trusted=True, backend=ScriptedBackend(GOOD), store=store).run(
        "t", isolate=True
    )
    assert report.status == "verified"
    assert report.isolation is not None
    assert report.isolation.mode == "git-worktree"
    assert report.isolation.applied is True
    assert report.workspace == str(repo)
    assert (repo / "app.py").read_text() == "x = 2\n"
    assert (repo / "notes.txt").read_text() == "new\n"
    assert (repo / "local.txt").read_text() == "uncommitted\n"
    assert _git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert _git(repo, "status", "--porcelain").splitlines() == [
        " M app.py",
        "?? local.txt",
        "?? notes.txt",
    ]
    worktrees = repo / ".git" / "worktrees"
    assert not worktrees.exists() or os.listdir(worktrees) == []
    assert not (store.root / (report.run_id or "") / "tree").exists()
    # An applied isolated run is undone like any other.
    with Workspace(str(repo)) as w:
        undo_run(store, store.get(report.run_id or ""), w)
    assert (repo / "app.py").read_text() == "x = 1\n"
    assert not (repo / "notes.txt").exists()


def test_isolated_unverified_run_is_kept_not_applied(
    repo: Path, store: RunStore, flow_config: Callable[..., FlowConfig]
) -> None:
    from flow_core.store import apply_run

    cfg = flow_config(CHECKS, agent={"max_cycles": 1})
    report = Runtime(cfg, trusted=True, backend=ScriptedBackend(BAD), store=store).run(
        "t", isolate=True
    )
    assert report.status == "unverified"
    assert report.isolation is not None
    assert report.isolation.applied is False
    assert (repo / "app.py").read_text() == "x = 1\n"
    assert not (repo / "notes.txt").exists()
    assert "+x = 3" in report.diff
    info = store.get(report.run_id or "")
    assert info.meta["applied"] is False
    with Workspace(str(repo)) as w:
        applied = apply_run(store, info, w)
    assert sorted(applied.written) == ["app.py", "notes.txt"]
    assert (repo / "app.py").read_text() == "x = 3\n"


def test_isolated_run_without_git_uses_a_private_copy(
    ws: Path, store: RunStore, flow_config: Callable[..., FlowConfig]
) -> None:
    cfg = flow_config(CHECKS, agent={"max_cycles": 1}, runs={"isolate": True})
    report = Runtime(cfg, trusted=True, backend=ScriptedBackend(GOOD), store=store).run("t")
    assert report.isolation is not None
    assert report.isolation.mode == "copy"
    assert report.isolation.applied is True
    assert (ws / "app.py").read_text() == "x = 2\n"


def test_isolated_verified_change_is_refused_when_the_workspace_moved(
    repo: Path, store: RunStore, flow_config: Callable[..., FlowConfig]
) -> None:
    cfg = flow_config(CHECKS, agent={"max_cycles": 1})

    class MovingBackend(ScriptedBackend):
        def chat(self, *args: Any, **kwargs: Any) -> ChatResponse:
            if len(self.requests) == 3:  # while the coder works, the user edits app.py
                (repo / "app.py").write_text("x = 1  # mine\n")
            return super().chat(*args, **kwargs)

    report = Runtime(cfg, trusted=True, backend=MovingBackend(GOOD), store=store).run(
        "t", isolate=True
    )
    assert report.verified is True
    assert report.isolation is not None
    assert report.isolation.applied is False
    assert "apply_conflict" in [e.code for e in report.errors]
    assert (repo / "app.py").read_text() == "x = 1  # mine\n"
    assert not (repo / "notes.txt").exists()
    assert "+x = 2" in (store.root / (report.run_id or "") / "diff.patch").read_text()
