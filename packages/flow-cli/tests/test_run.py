"""``flow run``: read-only default, a verified run, an unverified run, a server that is down.

The model is a loopback HTTP server in this test process that speaks Ollama's ``/api/chat``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from flow_testing.model_server import coder_script, tool_names
from flow_testing.procs import leader_gone

FIXED = "def add(a: int, b: int) -> int:\n    return a + b  # checked\n"


def scripted(*, approve: bool = True):
    """planner: a plan; coder: write calc.py, then finish; reviewer: a structured verdict."""
    return coder_script(
        [("write_file", {"path": "calc.py", "content": FIXED})],
        plan="Plan: edit calc.py so add() carries a comment.",
        done="Edited calc.py.",
        approve=approve,
        summary="looks right",
        findings=() if approve else ["the comment is wrong"],
    )


def messages(stderr: str) -> list[str]:
    """Stderr without the progress log's lines (``[flow +1.2s] ...``)."""
    return [line for line in stderr.splitlines() if not line.startswith("[flow +")]


def progress(stderr: str) -> list[str]:
    """The progress log's words, without the seconds."""
    return [line.split("] ", 1)[1] for line in stderr.splitlines() if line.startswith("[flow +")]


def _setup(h, tmp_path: Path, workspace: Path, url: str) -> Path:
    ok = [sys.executable, "-c", "import calc; assert calc.add(2, 3) == 5"]
    lint = [sys.executable, "-m", "py_compile", "calc.py"]
    checks = h.check_table("unit", ok) + h.check_table("compile", lint, kind="lint")
    return h.operator_config(tmp_path / "op.toml", workspace, base_url=url, checks=checks)


@pytest.mark.slow
def test_run_without_trust_plans_only(env, h, tmp_path, workspace, fake_ollama) -> None:
    fake = fake_ollama(scripted())
    cfg = _setup(h, tmp_path, workspace, fake.url)
    before = (workspace / "calc.py").read_text()
    result = env.flow("run", "add a comment", "--config", str(cfg))
    assert result.code == 1
    report = result.json()
    assert report["status"] == "read_only"
    assert report["verified"] is False
    assert report["plan"].startswith("Plan:")
    assert report["checks"] == []
    assert report["changed_files"] == []
    assert any(e["code"] == "not_trusted" for e in report["errors"])
    # stderr: one line that says what happened and what to do, then the plan itself.
    assert messages(result.stderr) == [
        "flow: read-only run (no --trusted): planned only, nothing was written and no check "
        "ran; review the plan, then rerun with --trusted to apply it",
        "  Plan: edit calc.py so add() carries a comment.",
    ]
    assert (workspace / "calc.py").read_text() == before
    assert all("write_file" not in tool_names(r) for r in fake.requests)


@pytest.mark.slow
def test_trusted_run_is_verified(env, h, tmp_path, workspace, fake_ollama) -> None:
    fake = fake_ollama(scripted())
    cfg = _setup(h, tmp_path, workspace, fake.url)
    result = env.flow("--config", str(cfg), "run", "--trusted", "add a comment")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["status"] == "verified"
    assert report["verified"] is True
    assert report["changed_files"] == ["calc.py"]
    assert "+    return a + b  # checked" in report["diff"]
    assert {c["name"]: c["status"] for c in report["checks"]} == {
        "unit": "passed",
        "compile": "passed",
    }
    assert (workspace / "calc.py").read_text() == FIXED
    # stderr is a pipe here, so there is no live view: the run logs one line per step, in
    # the same words as MCP progress, and the JSON above stayed alone on stdout.
    steps = progress(result.stderr)
    assert steps[0] == "run started"
    assert "planner started" in steps
    assert "coder: tool write_file ok (cycle 1)" in steps
    assert "check unit: passed (cycle 1)" in steps
    assert any(s.startswith("coder: model replied in ") for s in steps), steps
    assert steps[-1] == "run finished: verified"


@pytest.mark.slow
def test_model_flag_reaches_every_request(env, h, tmp_path, workspace, fake_ollama) -> None:
    fake = fake_ollama(scripted())
    cfg = _setup(h, tmp_path, workspace, fake.url)
    result = env.flow("run", "add a comment", "--config", str(cfg), "--model", "fake-small")
    assert result.code == 1
    assert fake.requests
    assert {r["model"] for r in fake.requests} == {"fake-small"}


@pytest.mark.slow
def test_rejected_review_is_unverified(env, h, tmp_path, workspace, fake_ollama) -> None:
    fake = fake_ollama(scripted(approve=False))
    cfg = _setup(h, tmp_path, workspace, fake.url)
    result = env.flow("run", "add a comment", "--config", str(cfg), "--trusted")
    assert result.code == 1
    report = result.json()
    assert report["status"] == "unverified"
    assert report["verification"]["reasons"]
    assert "not verified" in result.stderr


def test_model_server_down_fails_with_exit_1(env, h, tmp_path, workspace) -> None:
    cfg = _setup(h, tmp_path, workspace, "http://127.0.0.1:9")
    result = env.flow("run", "anything", "--config", str(cfg), "--trusted")
    assert result.code == 1
    report = result.json()
    assert report["status"] == "failed"
    assert report["errors"]


def test_run_needs_a_task(env, workspace) -> None:
    result = env.flow("run", "--workspace", str(workspace))
    assert result.code == 2
    assert "TASK" in result.stderr
    assert result.json()["kind"] == "run"


@pytest.mark.slow
def test_sigint_during_a_runs_checks(env, h, tmp_path, workspace, fake_ollama) -> None:
    import signal
    import time

    fake = fake_ollama(scripted())
    pidfile = tmp_path / "check.pid"
    slow = [
        sys.executable,
        "-c",
        f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(300)",
    ]
    # The pid file lies outside the workspace (the jail hides it): test the group kill alone.
    checks = h.check_table("slow", slow, kind="lint") + '\n[sandbox]\nmode = "off"\n'
    cfg = h.operator_config(tmp_path / "op.toml", workspace, base_url=fake.url, checks=checks)
    proc = env.popen("run", "add a comment", "--config", str(cfg), "--trusted")
    try:
        end = time.monotonic() + 60
        while not (pidfile.exists() and pidfile.read_text()):
            assert time.monotonic() < end, "the check never started"
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        pid = int(pidfile.read_text())
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    report = json.loads(stdout)
    assert report["kind"] == "run"
    assert report["status"] == "interrupted"
    assert report["verified"] is False
    assert leader_gone(pid), "the run's check group survived the interrupt"


@pytest.mark.slow
def test_read_only_run_shows_the_first_lines_of_a_long_plan(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    plan = "\n".join(f"{i}. step {i} [bold]as written[/bold]" for i in range(1, 31))
    fake = fake_ollama(lambda request: (plan, []))
    cfg = _setup(h, tmp_path, workspace, fake.url)
    result = env.flow("run", "do thirty things", "--config", str(cfg))
    assert result.code == 1
    assert result.json()["plan"] == plan
    lines = messages(result.stderr)
    assert lines[0].startswith("flow: read-only run (no --trusted)")
    assert lines[1:] == [f"  {i}. step {i} [bold]as written[/bold]" for i in range(1, 13)] + [
        "  … 18 more lines in the report's plan"
    ]


@pytest.mark.slow
def test_sigint_during_a_model_request_says_stopping_and_ends_interrupted(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    import signal
    import threading

    arrived = threading.Event()
    release = threading.Event()

    def held(request: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        arrived.set()  # the planner's request is in flight
        release.wait(60)
        return "Plan: nothing.", []

    fake = fake_ollama(held)
    cfg = _setup(h, tmp_path, workspace, fake.url)
    before = (workspace / "calc.py").read_bytes()
    proc = env.popen("run", "add a comment", "--config", str(cfg), "--trusted")
    try:
        assert arrived.wait(60), "the planner's request never reached the model server"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert "stopping… (press Ctrl-C again to force)" in stderr
    assert stderr.index("stopping…") < stderr.index("interrupted")
    report = json.loads(stdout)
    assert report["status"] == "interrupted"
    assert (workspace / "calc.py").read_bytes() == before
    # Nothing went on after the stop: the coder never got a request.
    assert all("write_file" not in tool_names(r) for r in fake.requests)


@pytest.mark.slow
def test_a_lint_check_failing_before_any_change_is_said_before_the_model(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    fake = fake_ollama(scripted())
    ok = [sys.executable, "-c", "import calc; assert calc.add(2, 3) == 5"]
    old = "print('old.py:1:1: F401 unused'); print('Found 1 error.'); raise SystemExit(1)"
    lint = [sys.executable, "-c", old]
    checks = h.check_table("unit", ok) + h.check_table("lint", lint, kind="lint")
    cfg = h.operator_config(tmp_path / "op.toml", workspace, base_url=fake.url, checks=checks)
    refused = env.flow("run", "--trusted", "add a comment", "--config", str(cfg))
    assert refused.code == 2
    assert refused.json()["status"] == "error"
    assert "1 finding(s)" in refused.stderr
    assert "[baseline_failing]" in refused.stderr
    assert [r for r in fake.requests if "messages" in r] == []  # no model request
    # Allowed, the run goes on; the same old finding is not held against the change.
    argv = ["run", "--trusted", "--allow-failing-baseline", "add a comment", "--config", str(cfg)]
    allowed = env.flow(*argv)
    assert allowed.code == 0, allowed.stderr
    assert "[baseline_passing]" in allowed.stderr  # the unit check passed before the change
