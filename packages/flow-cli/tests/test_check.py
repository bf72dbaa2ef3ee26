"""``flow check``: trust, unknown names, pass/fail exit codes, stdout purity, interrupts."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from flow_testing.procs import leader_gone

PASS = [sys.executable, "-c", "print('all good')"]
FAIL = [sys.executable, "-c", "import sys; print('broken'); sys.exit(3)"]
# Prints through Python's stdout, straight to descriptor 1, and to stderr.
NOISY = [
    sys.executable,
    "-c",
    "import os, sys; print('NOISE-PRINT'); sys.stdout.flush(); "
    "os.write(1, b'NOISE-FD1\\n'); print('NOISE-ERR', file=sys.stderr)",
]


#: For checks that talk to the test through files outside the workspace (pid files, markers),
#: which the default jail hides: group-kill behaviour is tested without it.
UNJAILED = '\n[sandbox]\nmode = "off"\n'


def _config(h, tmp_path: Path, workspace: Path, checks: str) -> Path:
    return h.operator_config(tmp_path / "op.toml", workspace, checks=checks)


def test_check_needs_trusted(env, h, tmp_path, workspace) -> None:
    cfg = _config(h, tmp_path, workspace, h.check_table("ok", PASS))
    result = env.flow("check", "--config", str(cfg))
    assert result.code == 2
    assert "--trusted" in result.stderr
    report = result.json()
    assert report["status"] == "error"
    assert report["errors"][0]["code"] == "not_trusted"
    assert report["checks"] == []


def test_check_all_pass(env, h, tmp_path, workspace) -> None:
    checks = h.check_table("one", PASS) + h.check_table("two", PASS, kind="lint")
    cfg = _config(h, tmp_path, workspace, checks)
    result = env.flow("--trusted", "check", "--config", str(cfg))
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["kind"] == "check"
    assert report["status"] == "passed"
    assert [c["name"] for c in report["checks"]] == ["one", "two"]
    assert all(c["status"] == "passed" for c in report["checks"])


def test_check_failure_exits_1_and_names_the_check(env, h, tmp_path, workspace) -> None:
    cfg = _config(h, tmp_path, workspace, h.check_table("ok", PASS) + h.check_table("bad", FAIL))
    result = env.flow("check", "--config", str(cfg), "--trusted")
    assert result.code == 1
    report = result.json()
    assert report["status"] == "failed"
    bad = next(c for c in report["checks"] if c["name"] == "bad")
    assert bad["status"] == "failed"
    assert bad["exit_code"] == 3
    # The JSON is on stdout; stderr says why, on one line: required or not, exit code, output.
    assert "flow: check bad: failed (required, exit 3): broken [check_failed]\n" in result.stderr
    assert "check ok" not in result.stderr


def test_check_one_by_name(env, h, tmp_path, workspace) -> None:
    cfg = _config(h, tmp_path, workspace, h.check_table("ok", PASS) + h.check_table("bad", FAIL))
    result = env.flow("check", "ok", "--config", str(cfg), "--trusted")
    assert result.code == 0, result.stderr
    assert [c["name"] for c in result.json()["checks"]] == ["ok"]


def test_unknown_check_name_is_a_usage_error(env, h, tmp_path, workspace) -> None:
    cfg = _config(h, tmp_path, workspace, h.check_table("ok", PASS))
    result = env.flow("check", "nope", "--config", str(cfg), "--trusted")
    assert result.code == 2
    assert "nope" in result.stderr
    assert result.json()["errors"][0]["code"] == "check_unknown"


def test_missing_executable_is_a_failed_check(env, h, tmp_path, workspace) -> None:
    missing = [str(tmp_path / "no-such-tool"), "--version"]
    cfg = _config(h, tmp_path, workspace, h.check_table("gone", missing))
    result = env.flow("check", "--config", str(cfg), "--trusted")
    assert result.code == 1
    (check,) = result.json()["checks"]
    assert check["status"] == "missing"
    assert (
        f"flow: check gone: missing (required): executable '{missing[0]}' was not found"
        in result.stderr
    )


def test_failed_check_line_shows_the_last_output_lines_cleaned(env, h, tmp_path, workspace) -> None:
    script = (
        "import sys\n"
        "print('\\n'.join(f'line {i}' for i in range(50)))\n"
        "print('\\x1b[31mFAILED test_x - assert 1 == 2\\x1b[0m', flush=True)\n"
        "print('1 failed in 0.01s', file=sys.stderr)\n"
        "sys.exit(1)\n"
    )
    cfg = _config(h, tmp_path, workspace, h.check_table("t", [sys.executable, "-c", script]))
    result = env.flow("check", "--config", str(cfg), "--trusted")
    assert result.code == 1
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("flow: check t:")]
    assert line == "flow: check t: failed (required, exit 1): FAILED test_x - assert 1 == 2 | " + (
        "1 failed in 0.01s [check_failed]"
    )


def test_error_reports_carry_the_loaded_config(env, h, tmp_path, workspace) -> None:
    cfg = _config(h, tmp_path, workspace, h.check_table("ok", PASS))
    for args in (["check", "nosuch", "--trusted"], ["check"]):
        result = env.flow(*args, "--config", str(cfg))
        assert result.code == 2
        report = result.json()
        assert report["status"] == "error"
        assert report["ok"] is False
        assert report["kind"] == "check"
        assert report["workspace"] == str(workspace)
        assert report["config_sources"] == [str(cfg)]
        assert [c["name"] for c in report["configured_checks"]] == ["ok"]
        assert report["checks"] == []
        assert len(report["errors"]) == 1


def test_stdout_stays_one_json_object_when_checks_and_libraries_print(
    env, h, tmp_path, workspace
) -> None:
    # A "library" inside the flow process that prints to sys.stdout and to fd 1 whenever a
    # subprocess starts, i.e. while the check runs.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, sys\n"
        "def _hook(event, args):\n"
        "    if event == 'subprocess.Popen':\n"
        "        print('LIBRARY-PRINT')\n"
        "        os.write(1, b'LIBRARY-FD1\\n')\n"
        "sys.addaudithook(_hook)\n"
    )
    env.vars["PYTHONPATH"] = str(site)
    cfg = _config(h, tmp_path, workspace, h.check_table("noisy", NOISY))
    result = env.flow("check", "--config", str(cfg), "--trusted")
    assert result.code == 0, result.stderr
    report = result.json()  # the whole stdout is one JSON value
    assert report["status"] == "passed"
    assert result.stdout.startswith("{")
    assert result.stdout.count("\n") == 1  # one line: the report, nothing before or after
    assert "LIBRARY" not in result.stdout
    assert "LIBRARY-PRINT" in result.stderr
    assert "LIBRARY-FD1" in result.stderr


def _wait_for(path: Path, proc, deadline_s: float = 60.0) -> int:
    """Poll the filesystem (bounded) until the check wrote its pid."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_long_check_kills_its_group(env, h, tmp_path, workspace, sig) -> None:
    pidfile = tmp_path / "check.pid"
    child_pidfile = tmp_path / "grandchild.pid"
    # The check starts a grandchild in its process group, records both pids, then waits.
    script = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(child_pidfile)!r}, 'w').write(str(child.pid))\n"
        f"open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(300)\n"
    )
    slow = h.check_table("slow", [sys.executable, "-c", script]) + UNJAILED
    cfg = _config(h, tmp_path, workspace, slow)
    proc = env.popen("check", "--config", str(cfg), "--trusted")
    try:
        pid = _wait_for(pidfile, proc)
        grandchild = int(child_pidfile.read_text())
        assert os.getpgid(pid) == pid  # the check leads its own process group
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    import json

    report = json.loads(stdout)
    assert report["status"] == "interrupted"
    assert report["ok"] is False
    assert leader_gone(pid), "the check process group survived"
    assert leader_gone(grandchild), "a process in the check's group survived"


def test_progress_is_silent_when_stderr_is_not_a_terminal(env, h, tmp_path, workspace) -> None:
    cfg = _config(h, tmp_path, workspace, h.check_table("quiet", PASS))
    result = env.flow("check", "--config", str(cfg), "--trusted")
    assert result.code == 0
    assert result.stderr == ""


@pytest.mark.slow
def test_live_progress_on_a_terminal_stderr(env, h, tmp_path, workspace) -> None:
    pexpect = pytest.importorskip("pexpect")
    go = tmp_path / "go"
    started = tmp_path / "started"
    # The check announces itself, then waits (bounded) until the test has seen the live view.
    script = (
        "import pathlib, time\n"
        f"pathlib.Path({str(started)!r}).write_text('1')\n"
        "end = time.monotonic() + 60\n"
        f"while not pathlib.Path({str(go)!r}).exists() and time.monotonic() < end:\n"
        "    time.sleep(0.02)\n"
    )
    waits = h.check_table("waits", [sys.executable, "-c", script]) + UNJAILED
    cfg = _config(h, tmp_path, workspace, waits)
    out = tmp_path / "report.json"
    command = f"{sys.executable} -m flow_cli check --config {cfg} --trusted > {out}; echo EXIT=$?"
    child = pexpect.spawn(
        "/bin/sh",
        ["-c", command],
        env={**env.vars, "TERM": "xterm-256color"},
        encoding="utf-8",
        timeout=60,
        dimensions=(30, 120),
    )
    try:
        child.expect("waits running")  # stderr is the terminal: the live view draws there
        # The view says "running" once the check process is started; on a loaded machine its
        # first line may run a moment later, so wait for that event itself (bounded).
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert started.exists()
        # A check has no roles and no tool calls: the view is the check's name and time only.
        assert "role" not in child.before
        assert "tool calls" not in child.before
        child.expect(r"waits running \d+\.\ds")
        go.write_text("1")
        child.expect("EXIT=0")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    import json

    report = json.loads(out.read_text())
    assert report["status"] == "passed"


def test_a_check_timeout_in_seconds_by_mistake_is_named_everywhere(
    env, h, tmp_path, workspace
) -> None:
    """timeout = 60 meant as a minute: status warns, check warns first, the timeout says so."""
    slow = [sys.executable, "-c", "import time; time.sleep(30)"]
    cfg = h.operator_config(
        tmp_path / "op.toml", workspace, checks=h.check_table("slow", slow, timeout_ms=60)
    )
    status = env.flow("status", "--config", str(cfg))
    report = status.json()
    (hint,) = [w for w in report["warnings"] if w["code"] == "check_timeout_short"]
    assert "did you mean 60000" in hint["message"]
    assert report["ok"] is True  # a hint, not a reason the setup cannot verify
    assert "checks.slow.timeout = 60 is in milliseconds" in status.stderr

    result = env.flow("check", "--config", str(cfg), "--trusted")
    assert result.code == 1
    assert "did you mean 60000" in result.stderr.split("\n")[0]  # said before the check runs
    (check,) = result.json()["checks"]
    assert check["status"] == "timeout"
    assert "check timeouts are milliseconds: did you mean 60000?" in check["error"]["message"]


def test_a_timeout_of_a_second_or_more_gets_no_hint(env, h, tmp_path, workspace) -> None:
    ok = [sys.executable, "-c", "pass"]
    cfg = h.operator_config(
        tmp_path / "op.toml", workspace, checks=h.check_table("ok", ok, timeout_ms=1000)
    )
    status = env.flow("status", "--config", str(cfg))
    assert not [w for w in status.json()["warnings"] if w["code"] == "check_timeout_short"]
