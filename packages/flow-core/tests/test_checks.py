"""The named-check runner: real subprocesses, process-group cleanup, capped captured output."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from flow_core import CheckConfig, kill_all_process_groups, run_check
from flow_core.verify._checks import OUTPUT_TAIL_BYTES, CheckWatch, live_process_groups
from flow_testing.editors import RecordingEditor
from flow_testing.procs import group_alive, process_state

PY = sys.executable


def check(cmd: list[str], *, timeout: int = 30_000, executable: str | None = "auto") -> CheckConfig:
    exe = cmd[0] if executable == "auto" else executable
    return CheckConfig(cmd=tuple(cmd), timeout=timeout, kind="test", executable=exe)


def test_passing_check_records_exit_code_duration_and_output(tmp_path: Path) -> None:
    result = run_check("t", check([PY, "-c", "import os; print(os.getcwd())"]), cwd=tmp_path)
    assert result.status == "passed"
    assert result.exit_code == 0
    assert result.error is None
    assert result.output_tail.strip() == str(tmp_path)  # cwd is the workspace root
    assert result.duration_ms > 0


def test_non_zero_exit_is_failed_with_its_own_code(tmp_path: Path) -> None:
    result = run_check(
        "t", check([PY, "-c", "import sys; print('boom'); sys.exit(3)"]), cwd=tmp_path
    )
    assert (result.status, result.exit_code) == ("failed", 3)
    assert result.error is not None
    assert result.error.code == "check_failed"
    assert "boom" in result.output_tail


def test_missing_executable_is_distinct(tmp_path: Path) -> None:
    result = run_check("t", check(["./nope"], executable=None), cwd=tmp_path)
    assert result.status == "missing"
    assert result.error is not None
    assert result.error.code == "check_missing"


def test_executable_removed_after_load_is_missing(tmp_path: Path) -> None:
    gone = str(tmp_path / "gone")
    result = run_check("t", check([gone], executable=gone), cwd=tmp_path)
    assert result.status == "missing"
    assert result.error is not None
    assert result.error.code == "check_missing"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")
def test_timeout_kills_the_whole_process_tree(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    script = f"sleep 1000 & echo $$ $! > {pid_file}; sleep 1000"
    result = run_check("t", check(["/bin/sh", "-c", script], timeout=300), cwd=tmp_path)
    assert result.status == "timeout"
    assert result.error is not None
    assert result.error.code == "check_timeout"
    leader, child = (int(x) for x in pid_file.read_text().split())
    assert not group_alive(leader), "a process of the check's group survived"
    for pid in (leader, child):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        # Still listed only as a zombie waiting for init to reap it.
        assert process_state(pid) == "Z"
    assert live_process_groups() == []


def test_background_children_do_not_outlive_a_passing_check(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    script = f"sleep 1000 & echo $$ > {pid_file}; exit 0"
    result = run_check("t", check(["/bin/sh", "-c", script]), cwd=tmp_path)
    assert result.status == "passed"
    assert not group_alive(int(pid_file.read_text()))


def test_output_is_captured_never_inherited(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code = "import sys; print('to-stdout'); print('to-stderr', file=sys.stderr)"
    result = run_check("t", check([PY, "-c", code]), cwd=tmp_path)
    out, err = capfd.readouterr()
    assert "to-stdout" not in out
    assert "to-stderr" not in out
    assert "to-stdout" not in err
    assert "to-stderr" not in err
    assert "to-stdout" in result.output_tail
    assert "to-stderr" in result.output_tail


def test_stdin_is_devnull(tmp_path: Path) -> None:
    code = "import sys; data = sys.stdin.read(); print(repr(data))"
    result = run_check("t", check([PY, "-c", code]), cwd=tmp_path)
    assert result.output_tail.strip() == "''"


def test_output_tail_is_capped(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('a' * 200000 + 'END')"
    result = run_check("t", check([PY, "-c", code]), cwd=tmp_path)
    assert result.status == "passed"
    assert len(result.output_tail.encode()) <= OUTPUT_TAIL_BYTES
    assert result.output_tail.endswith("END")


def test_kill_all_process_groups_interrupts_a_running_check(tmp_path: Path) -> None:
    started = tmp_path / "started"
    script = f"sleep 1000 & echo $$ > {started}; sleep 1000"
    done = threading.Event()
    results = []

    def target() -> None:
        results.append(run_check("t", check(["/bin/sh", "-c", script]), cwd=tmp_path))
        done.set()

    thread = threading.Thread(target=target)
    thread.start()
    # Wait until the check's group is registered and its script has written its pid.
    while not (live_process_groups() and started.exists() and started.read_text().strip()):
        assert not done.is_set()
        threading.Event().wait(0.01)
    assert kill_all_process_groups() == 1
    thread.join(timeout=10)
    assert not thread.is_alive()
    (result,) = results
    assert result.status == "interrupted"
    assert result.error is not None
    assert result.error.code == "check_interrupted"
    assert not group_alive(int(started.read_text()))


def test_sigterm_ignoring_check_is_killed(tmp_path: Path) -> None:
    code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(1000)"
    result = run_check("t", check([PY, "-c", code], timeout=200), cwd=tmp_path)
    assert result.status == "timeout"
    assert result.exit_code == -signal.SIGKILL


def test_check_refused_while_a_buffer_is_dirty(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    cmd = [PY, "-c", f"open({str(marker)!r}, 'w').close()"]
    dirty = CheckWatch(editor=RecordingEditor(dirty=("a.py",)))
    result = run_check("t", check(cmd), cwd=tmp_path, watch=dirty)
    assert result.status == "refused"
    assert result.error is not None
    assert result.error.code == "check_refused"
    assert not marker.exists()
    saved = CheckWatch(editor=RecordingEditor())
    clean = run_check("t", check(cmd), cwd=tmp_path, watch=saved)
    assert clean.status == "passed"
    assert marker.exists()


def test_keyboard_interrupt_kills_the_group_then_propagates(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"sleep 1000 & echo $$ > {pid_file}; sleep 1000"

    def ctrl_c_once_started() -> bool:
        if pid_file.exists() and pid_file.read_text().strip():
            raise KeyboardInterrupt
        return False

    with pytest.raises(KeyboardInterrupt):
        run_check(
            "t",
            check(["/bin/sh", "-c", script]),
            cwd=tmp_path,
            watch=CheckWatch(should_stop=ctrl_c_once_started),
        )
    assert not group_alive(int(pid_file.read_text()))
    assert live_process_groups() == []


def test_escaped_process_holding_the_pipe_does_not_stall_a_finished_check(tmp_path: Path) -> None:
    # A grandchild in its own session keeps stdout open; the leader's exit still ends the check.
    code = (
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3)'], "
        "start_new_session=True)\n"
        "print('leader done')"
    )
    result = run_check("t", check([PY, "-c", code], timeout=20_000), cwd=tmp_path)
    assert result.status == "passed"
    assert "leader done" in result.output_tail
    assert result.duration_ms < 2_500


def _script(path: Path, marker: str) -> None:
    path.write_text(f"#!/bin/sh\ntouch {marker}\n")
    path.chmod(0o755)


def test_executable_identity_is_pinned_at_load(tmp_path: Path) -> None:
    from flow_core import FlowConfig

    _script(tmp_path / "tool.sh", "ran-approved")
    cfg = FlowConfig(workspace_dir=tmp_path, checks={"t": {"cmd": ["./tool.sh"]}})
    pinned = cfg.checks["t"]
    assert pinned.executable == str(tmp_path / "tool.sh")
    assert pinned.executable_id is not None
    # The program an approved check runs is protected from the file tools.
    assert "tool.sh" in cfg.protected

    # Control: the approved program runs.
    assert run_check("t", pinned, cwd=tmp_path).status == "passed"
    assert (tmp_path / "ran-approved").exists()

    # Replaced through a rename (as an atomic write would do): refused, and never started.
    _script(tmp_path / "tool.new", "ran-replacement")
    os.replace(tmp_path / "tool.new", tmp_path / "tool.sh")
    result = run_check("t", pinned, cwd=tmp_path)
    assert result.status == "refused"
    assert result.error is not None
    assert result.error.code == "check_executable_changed"
    assert "start Flow again" in result.error.message
    assert not (tmp_path / "ran-replacement").exists()
