"""One workspace, one writer: a second ``flow run`` refuses, waits or runs isolated.

Run A is a real ``flow run`` held by its fake model server after it wrote its files; run B
starts on the same workspace meanwhile. Each test asserts B's exit code and report, the files
on disk and, after SIGKILL, that the dead holder's lock is not in the way.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

#: Each test drives whole `flow run`s against the fake model server.
pytestmark = pytest.mark.slow

#: How long run A may be held (seconds), and its model timeout: a bound only, so that a broken
#: test cannot hang; the test releases A as soon as its block ends. Run B's whole run (plan,
#: code, checks, review, in an isolated tree) happens while A is held, which can take minutes
#: on a loaded machine, and A's model request must not time out (and end A) meanwhile.
HOLD_S = 600

FIXED = "def add(a: int, b: int) -> int:\n    return a + b  # checked\n"
OTHER = "def add(a: int, b: int) -> int:\n    return b + a  # checked\n"


@contextmanager
def _held_run(env, h, tmp_path: Path, ws: Path, fake_ollama) -> Iterator[subprocess.Popen[str]]:
    """Run A, held in its coder's last turn (after both writes) until the block ends."""
    hold, held = threading.Event(), threading.Event()

    def wait_here() -> None:
        held.set()
        hold.wait(HOLD_S)

    fake = fake_ollama(h.calc_script(FIXED, {"code": wait_here}))
    cfg = h.calc_config(tmp_path / "a", ws, fake.url, model_timeout=HOLD_S + 60)
    proc = env.popen("run", "--trusted", "--config", str(cfg), "fix add")
    try:
        assert held.wait(60), "run A never reached its coder's last turn"
        yield proc
    finally:
        hold.set()
        if proc.poll() is None:
            proc.communicate(timeout=90)


def _config_b(h, tmp_path: Path, ws: Path, fake_ollama, when_busy: str) -> Path:
    fake = fake_ollama(h.calc_script(OTHER))
    (tmp_path / "b").mkdir(exist_ok=True)
    return h.calc_config(tmp_path / "b", ws, fake.url, f'[runs]\nwhen_busy = "{when_busy}"\n')


def test_a_second_run_is_refused_and_a_dead_holder_does_not_block(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama
) -> None:
    (tmp_path / "a").mkdir()
    cfg_b = _config_b(h, tmp_path, repo, fake_ollama, "refuse")
    with _held_run(env, h, tmp_path, repo, fake_ollama) as run_a:
        refused = env.flow("run", "--trusted", "--config", str(cfg_b), "fix add")
        assert refused.code == 1, refused.stderr
        report = refused.json()
        assert [e["code"] for e in report["errors"]] == ["workspace_busy"]
        assert f"pid {run_a.pid}" in report["errors"][0]["message"]
        assert "[workspace_busy]" in refused.stderr
        assert (repo / "calc.py").read_text() == FIXED  # run A's write, nothing of B's
        run_a.send_signal(signal.SIGKILL)
        run_a.communicate(timeout=60)
        # The kernel dropped the dead holder's lock: B runs at once.
        done = env.flow("run", "--trusted", "--config", str(cfg_b), "fix add")
        assert done.code == 0, done.stderr
    assert (repo / "calc.py").read_text() == OTHER
    statuses = [
        r["status"] for r in env.flow("runs", "--json", "--workspace", str(repo)).json()["runs"]
    ]
    assert statuses == ["verified", "abandoned"]  # the refused run wrote nothing, no record


def test_a_second_run_waits_for_the_first_when_told_to(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama
) -> None:
    (tmp_path / "a").mkdir()
    cfg_b = _config_b(h, tmp_path, repo, fake_ollama, "wait")
    with _held_run(env, h, tmp_path, repo, fake_ollama) as run_a:
        run_b = env.popen("run", "--trusted", "--config", str(cfg_b), "fix add")
        assert run_b.stderr is not None
        lines = [run_b.stderr.readline() for _ in range(1)]
        while not lines[-1].startswith("flow: waiting:") and lines[-1] and len(lines) < 20:
            lines.append(run_b.stderr.readline())  # B says it waits, and for whom
        assert lines[-1].startswith("flow: waiting: the workspace"), lines
        assert f"pid {run_a.pid}" in lines[-1]
        assert (repo / "calc.py").read_text() == FIXED
    out, err = run_b.communicate(timeout=120)
    assert run_b.returncode == 0, err
    assert json.loads(out)["status"] == "verified"
    assert run_a.returncode == 0
    assert (repo / "calc.py").read_text() == OTHER
    a, b = reversed(env.flow("runs", "--json", "--workspace", str(repo)).json()["runs"])
    assert a["ended"] <= b["created"]  # B's record began once A's had ended


def test_a_second_run_runs_isolated_and_is_not_applied_while_the_first_writes(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama
) -> None:
    (tmp_path / "a").mkdir()
    cfg_b = _config_b(h, tmp_path, repo, fake_ollama, "isolate")
    with _held_run(env, h, tmp_path, repo, fake_ollama) as run_a:
        result = env.flow("run", "--trusted", "--config", str(cfg_b), "fix add")
        assert result.code == 1, result.stderr
        report = result.json()
        assert report["verified"] is True
        assert report["isolation"]["applied"] is False
        assert [e["code"] for e in report["errors"]] == ["workspace_busy"]
        assert (repo / "calc.py").read_text() == FIXED  # A's bytes; B waits in its record
        busy = env.flow("apply", report["run_id"], "--workspace", str(repo))
        assert busy.code == 1
        assert json.loads(busy.stdout)["error"]["code"] == "workspace_busy"
    assert run_a.returncode == 0
    applied = env.flow("apply", report["run_id"], "--workspace", str(repo))
    assert applied.code == 0, applied.stderr  # B started from A's files, which are unchanged
    assert (repo / "calc.py").read_text() == OTHER
    h.git(repo, "worktree", "prune")
    assert h.git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
