"""The terminal UI, driven with piped input and once in a real pseudo-terminal (pexpect)."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flow_core.verify._sandbox import probe_bwrap
from flow_testing.model_server import coder_script, tool_names
from flow_testing.procs import leader_gone

#: Checks that write a pid file outside the workspace run without the jail.
UNJAILED = '\n[sandbox]\nmode = "off"\n'

FIXED = "def add(a: int, b: int) -> int:\n    return a + b  # from the tui\n"


script = coder_script(
    [("write_file", {"path": "calc.py", "content": FIXED})],
    plan="Plan: add a comment to calc.py.",
    summary="fine",
)


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


@pytest.mark.slow
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


@pytest.mark.slow
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
    assert "list_files, read_file, search_text, outline, write_file, edit_file, run_check" in out
    assert (workspace / "calc.py").read_text() == FIXED
    # Fresh role contexts: every task's planner starts from a system prompt and one task.
    planners = [
        r
        for r in fake.requests
        if not r.get("tools") or "write_file" not in {t["function"]["name"] for t in r["tools"]}
    ]
    firsts = [r for r in planners if not r.get("format") and len(r["messages"]) <= 2]
    assert len(firsts) >= 2


@pytest.mark.slow
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
        env={**env.vars, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"},
        cwd=str(env.home),
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 120),
    )


@pytest.mark.slow
def test_tui_in_a_real_pseudo_terminal(env, h, tmp_path, workspace) -> None:
    cfg = _cfg(h, tmp_path, workspace)
    child = _spawn(env, "--config", str(cfg))
    try:
        child.expect("flow>")
        child.sendline("/help")
        child.expect("/build REQUEST")
        child.expect("flow>")
        child.sendcontrol("c")  # Ctrl-C at the prompt does not leave
        child.expect("line cleared")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


def _planner_tasks(fake) -> list[str]:
    """The task text of every planner request (the user message of a fresh planner context)."""
    return [
        r["messages"][-1]["content"]
        for r in fake.requests
        if not r.get("format") and len(r["messages"]) == 2 and r["messages"][-1]["role"] == "user"
    ]


@pytest.mark.slow
def test_history_recalls_earlier_lines_across_sessions(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    fake = fake_ollama(script)
    cfg = _cfg(h, tmp_path, workspace, fake.url)
    child = _spawn(env, "--config", str(cfg))
    try:
        child.expect("flow>")
        child.send("first remembered task\r")
        child.expect(r"run: \S*read_only")
        child.expect("flow>")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    history = env.home / ".local" / "state" / "flow" / "history"
    assert "first remembered task" in history.read_text()
    assert history.stat().st_mode & 0o777 == 0o600
    assert history.parent.stat().st_mode & 0o777 == 0o700

    child = _spawn(env, "--config", str(cfg))  # a new session reads the kept history
    try:
        child.expect("flow>")
        child.send("\x1b[A")  # Up: the previous session's line comes back, editable
        child.send(" again\r")
        child.expect(r"run: \S*read_only")
        child.expect("flow>")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert "first remembered task again" in _planner_tasks(fake)[-1], _planner_tasks(fake)


@pytest.mark.slow
def test_a_multi_line_paste_is_one_task(env, h, tmp_path, workspace, fake_ollama) -> None:
    fake = fake_ollama(script)
    cfg = _cfg(h, tmp_path, workspace, fake.url)
    child = _spawn(env, "--config", str(cfg))
    try:
        child.expect("flow>")
        # xterm bracketed paste: the terminal wraps pasted text in ESC[200~ ... ESC[201~.
        child.send("\x1b[200~fix the adder\nand keep the tests green\x1b[201~")
        child.send("\r")
        child.expect(r"run: \S*read_only")
        child.expect("flow>")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    tasks = _planner_tasks(fake)
    assert len(tasks) == 1, tasks
    assert "fix the adder\nand keep the tests green" in tasks[0]


@pytest.mark.slow
def test_ctrl_c_at_the_prompt_clears_the_line(env, h, tmp_path, workspace, fake_ollama) -> None:
    fake = fake_ollama(script)
    cfg = _cfg(h, tmp_path, workspace, fake.url)
    child = _spawn(env, "--config", str(cfg))
    try:
        child.expect("flow>")
        child.send("half typed")
        child.sendcontrol("c")
        child.expect("line cleared")
        child.expect("flow>")
        child.send("the real task\r")
        child.expect(r"run: \S*read_only")
        child.expect("flow>")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert len(_planner_tasks(fake)) == 1
    assert "half typed" not in _planner_tasks(fake)[0]


@pytest.mark.slow
def test_live_view_shows_model_time_and_streamed_tokens(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    import threading

    from flow_testing.model_server import Reply, chat_lines, ndjson

    fake = fake_ollama(script)
    release = threading.Event()
    lines = chat_lines(["Plan", ": add ", "a comment"], model="fake-coder")
    # The planner's reply streams three tokens, then stalls until the test has seen them.
    fake.queue(
        "POST",
        "/api/chat",
        Reply(200, ndjson(lines), content_type="application/x-ndjson", hold=release, hold_at=3),
    )
    cfg = _cfg(h, tmp_path, workspace, fake.url)
    child = _spawn(env, "--config", str(cfg))
    try:
        child.expect("flow>")
        child.send("plan it\r")
        child.expect(r"planner waiting for the model \d+\.\ds, 3 tokens received")
        release.set()
        child.expect(r"run: \S*read_only")
        child.expect("flow>")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        release.set()
        child.close()


@pytest.mark.slow
def test_live_view_shows_tool_arguments_and_error(env, h, tmp_path, workspace, fake_ollama) -> None:
    import threading

    release = threading.Event()

    def outside(request: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        if "write_file" in tool_names(request) and not request.get("format"):
            if request["messages"][-1]["role"] == "tool":
                release.wait(30)  # hold the coder's next turn while the test reads the view
                return "Nothing to change.", []
            return "", [{"name": "read_file", "arguments": {"path": "../outside.txt"}}]
        return script(request)

    fake = fake_ollama(outside)
    cfg = _cfg(h, tmp_path, workspace, fake.url)
    child = _spawn(env, "--config", str(cfg), "--trusted")
    try:
        child.expect("flow>")
        child.send("read something\r")
        # name, then the (capped) arguments, then the code and the tool's own message
        child.expect(r"read_file\(path='\.\./outside\.txt'\): path_outside: .*\.\.")
        release.set()
        child.expect(r"run: \S*")
        child.expect("flow>")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        release.set()
        child.close()


@pytest.mark.slow
def test_ctrl_c_during_a_model_request_says_stopping_and_never_moves_on(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    import threading

    arrived = threading.Event()
    release = threading.Event()

    def held(request: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        if not request.get("format") and len(request["messages"]) == 2:
            arrived.set()
            release.wait(60)
        return script(request)

    fake = fake_ollama(held)
    cfg = _cfg(h, tmp_path, workspace, fake.url)
    child = _spawn(env, "--config", str(cfg), "--trusted")
    try:
        child.expect("flow>")
        child.send("add a comment\r")
        assert arrived.wait(60), "the planner's request never reached the model server"
        child.sendintr()
        child.expect("stopping…")
        child.expect(r"run: \S*interrupted")
        after_stop = child.before
        child.expect("flow>")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        release.set()
        child.close()
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", after_stop)  # drop terminal control codes
    assert "role planner" in shown
    assert "role coder" not in shown  # the view never moved on to another role
    assert (workspace / "calc.py").read_text() != FIXED


@pytest.mark.slow
def test_ctrl_c_cancels_a_running_check_and_returns_to_the_prompt(
    env, h, tmp_path, workspace
) -> None:
    pidfile = tmp_path / "check.pid"
    slow = [
        sys.executable,
        "-c",
        f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(300)",
    ]
    # The pid file lies outside the workspace (the jail hides it): test the group kill alone.
    cfg = _cfg(h, tmp_path, workspace, checks=h.check_table("slow", slow) + UNJAILED)
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
        assert "tool calls" not in child.before  # a check has no roles or tool calls to show
        assert "role" not in child.before.split("/check slow")[-1]
        child.sendintr()
        child.expect("interrupted")
        child.expect("flow>")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert leader_gone(pid), "the check's process group survived"


@pytest.mark.slow
def test_sigterm_during_a_check_exits_130_without_orphans(env, h, tmp_path, workspace) -> None:
    import signal

    pidfile = tmp_path / "check.pid"
    slow = [
        sys.executable,
        "-c",
        f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(300)",
    ]
    # The pid file lies outside the workspace (the jail hides it): test the group kill alone.
    cfg = _cfg(h, tmp_path, workspace, checks=h.check_table("slow", slow) + UNJAILED)
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
    assert leader_gone(pid), "the check's process group survived"


# -- text is text: nothing from a report or a static message is taken as rich markup ----------


def test_check_without_trust_names_the_checks_table_verbatim(env, h, tmp_path, workspace) -> None:
    cfg = _cfg(h, tmp_path, workspace)
    result = env.flow("tui", "--config", str(cfg), stdin="/check\n")
    assert result.code == 0, result.stderr
    assert "Review [checks.*] in your operator config" in result.stdout


MARKUP = "[bold]boom[/bold] [red]x[/] :bug:"


def test_check_output_with_markup_is_shown_verbatim(env, h, tmp_path, workspace) -> None:
    noisy = [sys.executable, "-c", f"import sys; print({MARKUP!r}); sys.exit(3)"]
    cfg = _cfg(h, tmp_path, workspace, checks=h.check_table("noisy", noisy))
    result = env.flow("tui", "--config", str(cfg), "--trusted", stdin="/check\n")
    assert result.code == 0, result.stderr
    assert MARKUP in result.stdout


@pytest.mark.slow
def test_plan_with_markup_is_shown_verbatim(env, h, tmp_path, workspace, fake_ollama) -> None:
    plan = "Plan: [bold]edit[/bold] calc.py, then [link=x]look[/link] :smile:"
    fake = fake_ollama(lambda request: (plan, []))
    cfg = _cfg(h, tmp_path, workspace, fake.url)
    result = env.flow("tui", "--config", str(cfg), stdin="add a comment\n")
    assert result.code == 0, result.stderr
    assert "run: read_only" in result.stdout
    assert plan in result.stdout


def test_workspace_path_with_brackets_is_shown_verbatim(env, h, tmp_path) -> None:
    odd = tmp_path / "proj[bold]x"
    odd.mkdir()
    cfg = h.operator_config(tmp_path / "op.toml", odd)
    # Wide enough that the table never wraps the path, however deep tmp_path is (xdist adds a
    # worker folder).
    env.vars["COLUMNS"] = "400"
    result = env.flow("tui", "--config", str(cfg), stdin="/status\n")
    assert result.code == 0, result.stderr
    assert f"workspace: {odd}" in result.stdout  # the banner
    assert result.stdout.count(str(odd)) >= 2  # and the /status table


# -- the /check table, /status budgets, the banner --------------------------------------------


def _row(out: str, first_cell: str) -> str:
    """The table line whose first cell is ``first_cell``."""
    for line in out.splitlines():
        cells = [c.strip() for c in line.replace("┃", "│").split("│")]
        if len(cells) > 2 and cells[1] == first_cell:
            return line
    raise AssertionError(f"no row {first_cell!r} in:\n{out}")


def _cells(out: str, first_cell: str) -> list[str]:
    """The cells of a table row, wrapped continuation lines joined with newlines."""
    lines = out.splitlines()
    start = lines.index(_row(out, first_cell))
    rows = [[c.strip() for c in lines[start].split("│")[1:-1]]]
    for line in lines[start + 1 :]:
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if not cells or cells[0]:
            break
        rows.append(cells)
    return ["\n".join(filter(None, column)) for column in zip(*rows, strict=True)]


def test_check_table_shows_exit_code_requirement_and_reason(env, h, tmp_path, workspace) -> None:
    fail = [sys.executable, "-c", "import sys; print('noise'); print('E: one broke'); sys.exit(3)"]
    checks = (
        h.check_table("bad", fail, required=False)
        + h.check_table("gone", [str(tmp_path / "no-such-tool")])
        + h.check_table("good", [sys.executable, "-c", "pass"], kind="lint")
    )
    cfg = _cfg(h, tmp_path, workspace, checks=checks)
    result = env.flow("tui", "--config", str(cfg), "--trusted", stdin="/check\n")
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "check: failed" in out
    name, status, needed, code, took, jail, why = _cells(out, "bad")
    assert (name, status, needed, code, why) == (
        "bad",
        "failed",
        "optional",
        "3",
        "noise\nE: one broke",
    )
    assert re.fullmatch(r"\d+\.\ds", took)  # seconds, one decimal (the value depends on load)
    assert jail == ("bwrap" if probe_bwrap().usable else "none")  # the default: jailed
    _, status, needed, code, _, jail, why = _cells(out, "gone")
    assert (status, needed, code, jail) == ("missing", "required", "-", "-")  # never started
    assert f"executable'{tmp_path}/no-such-tool'wasnotfound" in "".join(why.split())
    _, status, needed, code, _, _, why = _cells(out, "good")
    assert (status, needed, code, why) == ("passed", "required", "0", "")


def test_status_table_shows_the_configured_budgets(env, h, tmp_path, workspace) -> None:
    cfg = _cfg(h, tmp_path, workspace)  # max_iterations 4, max_cycles 1, max_tool_calls 16
    result = env.flow("tui", "--config", str(cfg), stdin="/status\n")
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "│ 4 " in _row(out, "max model turns (per role call)")
    assert "│ 1 " in _row(out, "max cycles")
    assert "│ 16 " in _row(out, "max tool calls (per task)")
    assert "│ 100000 " in _row(out, "max context chars")
    assert "ollama at http://127.0.0.1:9" in _row(out, "backend")
    assert "backend ollama" not in _row(out, "backend")  # the row's label is not repeated
    runs_as = "bwrap" if probe_bwrap().usable else "none"
    assert f"{runs_as} (mode auto, no network)" in _row(out, "sandbox")


def test_banner_fits_80_columns_when_piped(env, h, tmp_path, workspace) -> None:
    env.vars["COLUMNS"] = "80"
    big = "qwen2.5-coder:32b-instruct-q4_K_M"
    small = "qwen2.5-coder:7b-instruct-q4_K_M"
    cfg = h.operator_config(tmp_path / "op.toml", workspace, model=small)
    cfg.write_text(cfg.read_text() + f'\n[models]\ncoder = "{big}"\n')
    result = env.flow("tui", "--config", str(cfg), stdin="")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    models = [line for line in lines if big in line or small in line]
    assert models == [
        f"models: {small} (planner, reviewer)",
        f"        {big} (coder)",
    ]
    # The workspace line is kept whole (soft-wrapped: a terminal wraps it, a pipe keeps it).
    assert f"workspace: {workspace}" in lines
    banner = [line for line in lines[: lines.index(models[-1]) + 1] if str(workspace) not in line]
    assert all(len(line) <= 80 and not line.rstrip().endswith(",") for line in banner), banner
    assert "backend ollama at http://127.0.0.1:9" in lines


@pytest.mark.slow
def test_after_a_run_the_plan_and_the_reviewers_verdict_are_shown(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    def critical(request: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        if request.get("format"):
            verdict = {
                "approved": False,
                "summary": "the comment is misleading",
                "findings": ["calc.py: the comment says [bold] subtraction"],
            }
            return json.dumps(verdict), []
        return script(request)

    fake = fake_ollama(critical)
    cfg = _cfg(h, tmp_path, workspace, fake.url)
    result = env.flow("tui", "--config", str(cfg), "--trusted", stdin="add a comment\n")
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "Plan\n  Plan: add a comment to calc.py." in out
    assert "Review: not approved: the comment is misleading" in out
    assert "  - calc.py: the comment says [bold] subtraction" in out  # text, never markup
