"""Every ending of ``flow run`` leaves a usable record: SIGHUP, SIGTERM and SIGKILL.

A real ``flow run`` subprocess gets a real signal while the fake model server holds one of its
requests (the plan, the coder's last turn, the review), so the moment is exact and no sleep is
needed. Each test asserts the exit code, the report, the record (``flow runs``), the files on
disk and ``git worktree list``.
"""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

#: Each test drives whole `flow run`s against the fake model server.
pytestmark = pytest.mark.slow

FIXED = "def add(a: int, b: int) -> int:\n    return a + b  # checked\n"
ORIGINAL = "def add(a: int, b: int) -> int:\n    return a + b\n"


def _signalled(env, h, tmp_path: Path, repo: Path, fake_ollama, phase: str, sig: int, *more: str):
    """Start ``flow run``, send ``sig`` while the model holds ``phase``; return the process's
    exit code, stdout and stderr once it ended."""
    hold, held = threading.Event(), threading.Event()

    def wait_here() -> None:
        held.set()
        hold.wait(60)

    fake = fake_ollama(h.calc_script(FIXED, {phase: wait_here}))
    cfg = h.calc_config(tmp_path, repo, fake.url)
    proc = env.popen("run", "--trusted", "--config", str(cfg), *more, "fix add")
    try:
        assert held.wait(60), f"the run never reached the {phase} request"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=90)
    finally:
        hold.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    return proc.returncode, out, err


def _runs(env, repo: Path) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = env.flow("runs", "--json", "--workspace", str(repo)).json()[
        "runs"
    ]
    return listed


def _worktrees(h, repo: Path) -> int:
    return int(h.git(repo, "worktree", "list", "--porcelain").count("worktree "))


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
@pytest.mark.parametrize("phase", ["plan", "code", "review"])
def test_hup_and_term_end_an_in_place_run_like_ctrl_c(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama, phase: str, sig: int
) -> None:
    code, out, err = _signalled(env, h, tmp_path, repo, fake_ollama, phase, sig)
    assert code == 130, err
    report = json.loads(out)  # exactly one JSON object: the report
    assert report["status"] == "interrupted"
    assert "interrupted; check process groups were killed [interrupted]" in err
    (run,) = _runs(env, repo)
    assert (run["id"], run["status"]) == (report["run_id"], "interrupted")
    if phase == "plan":  # nothing was written yet
        assert (repo / "calc.py").read_text() == ORIGINAL
        assert h.git(repo, "status", "--porcelain") == ""
        return
    assert (repo / "calc.py").read_text() == FIXED  # the change is kept and listed
    assert run["changed_files"] == ["calc.py", "notes.md"]
    undone = env.flow("undo", run["id"], "--workspace", str(repo))
    assert undone.code == 0, undone.stderr
    assert (repo / "calc.py").read_text() == ORIGINAL
    assert h.git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
def test_hup_and_term_remove_the_worktree_and_keep_the_change(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama, sig: int
) -> None:
    code, out, err = _signalled(env, h, tmp_path, repo, fake_ollama, "code", sig, "--isolate")
    assert code == 130, err
    report = json.loads(out)
    assert report["status"] == "interrupted"
    assert report["isolation"]["applied"] is False
    assert _worktrees(h, repo) == 1
    assert not (Path(report["run_dir"]) / "tree").exists()
    assert (repo / "calc.py").read_text() == ORIGINAL  # the workspace was never touched
    (run,) = _runs(env, repo)
    assert run["status"] == "interrupted"
    assert "+    return a + b  # checked" in env.flow("show", run["id"], "--diff").stdout
    applied = env.flow("apply", run["id"], "--workspace", str(repo))
    assert applied.code == 0, applied.stderr
    assert (repo / "calc.py").read_text() == FIXED
    assert (repo / "notes.md").read_text() == "n\n"


def test_after_sigkill_the_next_reader_settles_an_isolated_run_once(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama
) -> None:
    code, out, _err = _signalled(
        env, h, tmp_path, repo, fake_ollama, "code", signal.SIGKILL, "--isolate"
    )
    assert (code, out) == (-signal.SIGKILL, "")
    assert _worktrees(h, repo) == 2  # the dead run's worktree is still registered
    (run,) = _runs(env, repo)  # this first read settles the record
    assert (run["status"], run["interrupted"], run["applied"]) == ("abandoned", True, False)
    assert run["changed_files"] == ["calc.py", "notes.md"]
    assert _worktrees(h, repo) == 1
    assert not (Path(run["dir"]) / "tree").exists()
    assert (repo / "calc.py").read_text() == ORIGINAL
    shown = env.flow("show", run["id"], "--workspace", str(repo))
    assert "abandoned (process gone)" in shown.stdout
    diff = env.flow("show", run["id"], "--diff").stdout
    assert "+    return a + b  # checked" in diff
    assert "+n" in diff
    applied = env.flow("apply", run["id"], "--workspace", str(repo))
    assert applied.code == 0, applied.stderr
    assert (repo / "calc.py").read_text() == FIXED
    assert (repo / "notes.md").read_text() == "n\n"
    assert _runs(env, repo)[0]["status"] == "abandoned"  # settled once, then only read
    h.git(repo, "worktree", "prune")
    assert _worktrees(h, repo) == 1


def test_no_record_says_running_for_a_dead_process(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama
) -> None:
    code, _out, _err = _signalled(env, h, tmp_path, repo, fake_ollama, "review", signal.SIGKILL)
    assert code == -signal.SIGKILL
    (meta,) = (state / "flow" / "runs").glob("*/meta.json")
    assert json.loads(meta.read_text())["status"] == "running"  # on disk, before anyone looked
    (run,) = _runs(env, repo)
    assert run["status"] == "abandoned"
    assert json.loads(meta.read_text())["status"] == "abandoned"
    assert (repo / "calc.py").read_text() == FIXED
    assert "+    return a + b  # checked" in env.flow("show", run["id"], "--diff").stdout


class _Held(threading.Event):
    """A hold for the fake server that tells when the request it holds has arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.arrived.set()
        return super().wait(timeout)


@pytest.mark.parametrize("command", ["run", "check"])
def test_term_while_the_server_holds_the_model_list_ends_at_once(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama, command: str
) -> None:
    """The model preflight's ``GET /api/tags`` comes before the run's first request; a server
    busy generating for another client holds it (llama.cpp's Python server does). SIGTERM
    then ends the command as interrupted, without waiting for the server. Before, the stop
    found no run to stop: the listing waited, and the run then went on to its verdict."""
    from flow_testing.model_server import Reply

    fake = fake_ollama(h.calc_script(FIXED, {}))
    held = _Held()
    tags = json.dumps({"models": [{"name": m, "model": m} for m in fake.models]}).encode()
    fake.queue("GET", "/api/tags", Reply(200, [tags], hold=held))
    cfg = h.calc_config(tmp_path, repo, fake.url)
    argv = ["fix add"] if command == "run" else []
    proc = env.popen(command, "--trusted", "--config", str(cfg), *argv)
    try:
        assert held.arrived.wait(60), "flow never asked the server for its models"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=90)
    finally:
        held.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == 130, err
    assert json.loads(out)["status"] == "interrupted"
    assert (repo / "calc.py").read_text() == ORIGINAL
