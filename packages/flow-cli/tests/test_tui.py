"""The terminal UI, driven with piped input and once in a real pseudo-terminal (pexpect)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

FIXED = "def add(a: int, b: int) -> int:\n    return a + b  # from the tui\n"


def script(request: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    tools = {t["function"]["name"] for t in request.get("tools") or []}
    if request.get("format"):
        return json.dumps({"approved": True, "summary": "fine", "findings": []}), []
    if "write_file" in tools:
        if request["messages"][-1]["role"] == "tool":
            return "Done.", []
        return "", [{"name": "write_file", "arguments": {"path": "calc.py", "content": FIXED}}]
    return "Plan: add a comment to calc.py.", []


def _cfg(h, tmp_path: Path, workspace: Path, url: str = "http://127.0.0.1:9", checks=None):
    if checks is None:
        checks = h.check_table("unit", [sys.executable, "-c", "import calc"]) + h.check_table(
            "compile", [sys.executable, "-m", "py_compile", "calc.py"], kind="lint"
        )
    return h.operator_config(tmp_path / "op.toml", workspace, base_url=url, checks=checks)


def test_slash_commands_with_piped_input(env, h, tmp_path, workspace) -> None:
    cfg = _cfg(h, tmp_path, workspace)
    lines = [
        "/help",
        "/tools",
        "/plugins",
        "/evolve",
        "/memory",
        "/feedback",
        "/status",
        "/models",
        "/model fake-coder",
        "/build",
        "/check",
        "/nonsense",
        "/quit",
        "this line is never read",
    ]
    result = env.flow("tui", "--config", str(cfg), stdin="\n".join(lines) + "\n")
    assert result.code == 0, result.stderr
    out = result.stdout
    for command in ("/status", "/check [name]", "/tools", "/models", "/model NAME", "/build"):
        assert command in out
    assert "list_files, read_file, search_text" in out  # /tools, read-only session
    for name in ("/plugins", "/evolve", "/memory", "/feedback"):
        assert f"{name} is not available" in out
    assert str(workspace) in out  # /status
    assert "model server is not reachable" in out  # /models and /model with the server down
    assert "usage: /build REQUEST" in out
    assert "restart with --trusted" in out  # /check without trust
    assert "unknown command /nonsense" in out
    assert "never read" not in out


def test_no_subcommand_starts_the_tui_and_eof_exits_0(env, h, tmp_path, workspace) -> None:
    cfg = _cfg(h, tmp_path, workspace)
    result = env.flow("--config", str(cfg), stdin="")
    assert result.code == 0, result.stderr
    assert "Ctrl-D" in result.stdout
    assert "flow>" in result.stdout


def test_tui_with_bad_config_exits_2(env, tmp_path, workspace) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(f'workspace_dir = "{workspace}"\nsurprise = 1\n')
    result = env.flow("tui", "--config", str(bad), stdin="/quit\n")
    assert result.code == 2
    assert "surprise" in result.stderr


def test_models_and_model_switch(env, h, tmp_path, workspace, fake_ollama) -> None:
    fake = fake_ollama(script)
    cfg = _cfg(h, tmp_path, workspace, fake.url)
    stdin = "/models\n/model not-installed\n/model fake-small\nplan something\n"
    result = env.flow("tui", "--config", str(cfg), stdin=stdin)
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "fake-coder" in out
    assert "fake-small" in out
    assert "not-installed is not installed; installed models: fake-coder, fake-small" in out
    assert "Every role now uses fake-small" in out
    assert fake.requests
    assert {r["model"] for r in fake.requests} == {"fake-small"}


def test_plain_line_and_build_run_the_verified_workflow(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    fake = fake_ollama(script)
    cfg = _cfg(h, tmp_path, workspace, fake.url)
    stdin = "/tools\nadd a comment\n/build add it again\n/check compile\n"
    result = env.flow("tui", "--config", str(cfg), "--trusted", stdin=stdin)
    assert result.code == 0, result.stderr
    out = result.stdout
    assert out.count("run: verified") == 2
    assert "calc.py" in out
    assert "+    return a + b  # from the tui" in out  # the diff
    assert "check: passed" in out
    # /tools in a trusted session: the coder writes and runs the configured checks.
    assert "list_files, read_file, search_text, write_file, edit_file, run_check" in out
    assert (workspace / "calc.py").read_text() == FIXED
    # Fresh role contexts: every task's planner starts from a system prompt and one task.
    planners = [
        r
        for r in fake.requests
        if not r.get("tools") or "write_file" not in {t["function"]["name"] for t in r["tools"]}
    ]
    firsts = [r for r in planners if not r.get("format") and len(r["messages"]) <= 2]
    assert len(firsts) >= 2


def test_read_only_task_shows_the_plan(env, h, tmp_path, workspace, fake_ollama) -> None:
    fake = fake_ollama(script)
    cfg = _cfg(h, tmp_path, workspace, fake.url)
    result = env.flow("tui", "--config", str(cfg), stdin="add a comment\n")
    assert result.code == 0, result.stderr
    assert "run: read_only" in result.stdout
    assert "Plan: add a comment to calc.py." in result.stdout


pexpect = pytest.importorskip("pexpect")


def _spawn(env, *args: str):
    return pexpect.spawn(
        sys.executable,
        ["-m", "flow_cli", *args],
        env={**env.vars, "TERM": "xterm-256color"},
        cwd=str(env.home),
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 120),
    )


def test_tui_in_a_real_pseudo_terminal(env, h, tmp_path, workspace) -> None:
    cfg = _cfg(h, tmp_path, workspace)
    child = _spawn(env, "--config", str(cfg))
    try:
        child.expect("flow>")
        child.sendline("/help")
        child.expect("/build REQUEST")
        child.expect("flow>")
        child.sendcontrol("c")  # Ctrl-C at the prompt does not leave
        child.expect("Ctrl-D to leave")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


def test_ctrl_c_cancels_a_running_check_and_returns_to_the_prompt(
    env, h, tmp_path, workspace
) -> None:
    pidfile = tmp_path / "check.pid"
    slow = [
        sys.executable,
        "-c",
        f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(300)",
    ]
    cfg = _cfg(h, tmp_path, workspace, checks=h.check_table("slow", slow))
    child = _spawn(env, "tui", "--config", str(cfg), "--trusted")
    try:
        child.expect("flow>")
        child.sendline("/check slow")
        end = time.monotonic() + 60
        while not (pidfile.exists() and pidfile.read_text()):
            assert time.monotonic() < end, "the check never started"
            assert child.isalive()
            time.sleep(0.02)
        pid = int(pidfile.read_text())
        child.expect("slow running")  # the live view shows the running check
        child.sendintr()
        child.expect("interrupted")
        child.expect("flow>")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    with pytest.raises(ProcessLookupError):
        _wait_gone(pid)


def test_sigterm_during_a_check_exits_130_without_orphans(env, h, tmp_path, workspace) -> None:
    import signal

    pidfile = tmp_path / "check.pid"
    slow = [
        sys.executable,
        "-c",
        f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(300)",
    ]
    cfg = _cfg(h, tmp_path, workspace, checks=h.check_table("slow", slow))
    child = _spawn(env, "tui", "--config", str(cfg), "--trusted")
    try:
        child.expect("flow>")
        child.sendline("/check")
        end = time.monotonic() + 60
        while not (pidfile.exists() and pidfile.read_text()):
            assert time.monotonic() < end, "the check never started"
            time.sleep(0.02)
        pid = int(pidfile.read_text())
        child.kill(signal.SIGTERM)
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 130
    with pytest.raises(ProcessLookupError):
        _wait_gone(pid)


def _wait_gone(pid: int) -> None:
    """Raise ProcessLookupError once ``pid``'s group is gone (zombies count as gone)."""
    import os

    end = time.monotonic() + 30
    while time.monotonic() < end:
        os.killpg(pid, 0)
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            raise ProcessLookupError(pid) from None
        if state == "Z":
            raise ProcessLookupError(pid)
        time.sleep(0.02)
