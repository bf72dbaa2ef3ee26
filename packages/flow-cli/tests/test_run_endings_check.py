"""Signals while a check is running: SIGHUP, SIGTERM and SIGKILL reach ``flow run`` while its
required check (and a child the check started) runs, in place and ``--isolate``.

The check writes a file once it is running past the baseline (the coder has written
``calc.py``) and then blocks; the test waits for that file, never for a time. Each case
asserts the exit code, the record, the files on disk, ``git worktree list``, and that no
process of the check is left in the process table (each carries a token in its command line).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

#: Each test drives whole `flow run`s against the fake model server.
pytestmark = pytest.mark.slow

FIXED = "def add(a: int, b: int) -> int:\n    return a + b  # checked\n"
ORIGINAL = "def add(a: int, b: int) -> int:\n    return a + b\n"
CHILD = "import time; time.sleep(600)"
CHECK = f"""\
import pathlib, subprocess, sys, time
started, token = pathlib.Path(sys.argv[1]), sys.argv[2]
if "# checked" in pathlib.Path("calc.py").read_text():
    child = subprocess.Popen([sys.executable, "-c", {CHILD!r}, token])
    try:
        started.write_text(str(child.pid))
    except OSError:  # jailed: the test's folder may not be there; the process table tells
        pass
    time.sleep(600)
import calc
assert calc.add(2, 3) == 5
"""
BOUND_S = 120.0


def _wait_for(what: str, ready: Any) -> None:
    """Poll ``ready()`` until true (at most :data:`BOUND_S`); a condition, never a duration."""
    deadline = time.monotonic() + BOUND_S
    while not ready():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.05)


def _holders(token: str, *also: str) -> list[int]:
    """Live processes whose command line carries ``token`` and each of ``also`` (zombies have
    none)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path("/proc", entry, "cmdline").read_bytes()
        except OSError:
            continue
        argv = cmdline.split(b"\0")
        if all(word.encode() in argv for word in (token, *also)):
            found.append(int(entry))
    return found


def _signalled(
    env, h, tmp_path: Path, repo: Path, fake_ollama, sig: int, *more: str, sandbox: str = "off"
):
    """Start ``flow run``, send ``sig`` once the check and its child run; return exit code,
    stdout, stderr and the token. Unjailed, the check's file lands where the test sees it;
    jailed (``sandbox = "bwrap"``) it lands in the jail, and the process table tells."""
    token = f"flow-check-token-{os.getpid()}-{tmp_path.name}"
    started = tmp_path / "check-started"
    # On the command line, not in a file: a jailed check sees no file of the test's folder.
    unit = [sys.executable, "-c", CHECK, str(started), token]
    lint = [sys.executable, "-m", "py_compile", "calc.py"]
    checks = h.check_table("unit", unit) + h.check_table(
        "compile", lint, kind="lint", filetypes=["python", "docs"]
    )
    url = fake_ollama(h.calc_script(FIXED)).url
    extra = f'\n[sandbox]\nmode = "{sandbox}"\n'
    cfg = h.operator_config(tmp_path / "op.toml", repo, base_url=url, checks=checks, extra=extra)
    proc = env.popen("run", "--trusted", "--config", str(cfg), *more, "fix add")
    try:
        if sandbox == "off":
            _wait_for("the check to start", lambda: started.exists() or proc.poll() is not None)
        # The child exists only once the check runs past the baseline (a jail's bwrap carries
        # the check's argv too, so the check's own processes do not tell).
        _wait_for("the check's child", lambda: _holders(token, CHILD) or proc.poll() is not None)
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    return proc.returncode, out, err, token


@pytest.fixture(autouse=True)
def _kill_leftovers(tmp_path: Path):
    """A failing case must not leave its sleeping check behind for the next test."""
    yield
    token = f"flow-check-token-{os.getpid()}-{tmp_path.name}"
    for pid in _holders(token):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _runs(env, repo: Path) -> list[dict[str, Any]]:
    result = env.flow("runs", "--json", "--workspace", str(repo))
    runs: list[dict[str, Any]] = result.json()["runs"]
    return runs


def _worktrees(h, repo: Path) -> int:
    return int(h.git(repo, "worktree", "list", "--porcelain").count("worktree "))


def _no_orphans(token: str) -> None:
    _wait_for("the check's processes to end", lambda: _holders(token) == [])


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
def test_hup_and_term_during_a_check_in_place(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama, sig: int
) -> None:
    code, out, err, token = _signalled(env, h, tmp_path, repo, fake_ollama, sig)
    assert code == 130, err
    report = json.loads(out)
    assert report["status"] == "interrupted"
    assert "check process groups were killed" in err
    _no_orphans(token)
    (run,) = _runs(env, repo)
    assert (run["id"], run["status"]) == (report["run_id"], "interrupted")
    assert run["changed_files"] == ["calc.py", "notes.md"]
    assert (repo / "calc.py").read_text() == FIXED
    undone = env.flow("undo", run["id"], "--workspace", str(repo))
    assert undone.code == 0, undone.stderr
    assert (repo / "calc.py").read_text() == ORIGINAL
    assert h.git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
def test_hup_and_term_during_a_check_isolated(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama, sig: int
) -> None:
    code, out, err, token = _signalled(env, h, tmp_path, repo, fake_ollama, sig, "--isolate")
    assert code == 130, err
    report = json.loads(out)
    assert report["status"] == "interrupted"
    _no_orphans(token)
    assert _worktrees(h, repo) == 1
    assert not (Path(report["run_dir"]) / "tree").exists()
    assert (repo / "calc.py").read_text() == ORIGINAL
    (run,) = _runs(env, repo)
    assert run["status"] == "interrupted"
    applied = env.flow("apply", run["id"], "--workspace", str(repo))
    assert applied.code == 0, applied.stderr
    assert (repo / "calc.py").read_text() == FIXED


@pytest.mark.parametrize("isolate", [False, True])
def test_sigkill_during_a_check_leaves_no_process_and_a_settled_record(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama, isolate: bool
) -> None:
    more = ("--isolate",) if isolate else ()
    code, out, _err, token = _signalled(env, h, tmp_path, repo, fake_ollama, signal.SIGKILL, *more)
    assert (code, out) == (-signal.SIGKILL, "")
    (run,) = _runs(env, repo)  # the first reader settles the dead run
    assert run["status"] == "abandoned"
    assert run["changed_files"] == ["calc.py", "notes.md"]
    _no_orphans(token)
    assert _worktrees(h, repo) == 1
    if isolate:
        assert (repo / "calc.py").read_text() == ORIGINAL
        applied = env.flow("apply", run["id"], "--workspace", str(repo))
        assert applied.code == 0, applied.stderr
    assert (repo / "calc.py").read_text() == FIXED
    assert "+    return a + b  # checked" in env.flow("show", run["id"], "--diff").stdout


def _jail_usable() -> None:
    from flow_core.verify._sandbox import probe_bwrap

    probe = probe_bwrap()
    if not probe.usable:
        pytest.skip(f"bubblewrap cannot jail checks here: {probe}")


def test_a_jailed_check_dies_with_a_sigkilled_run(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama
) -> None:
    """bubblewrap's --die-with-parent: nothing is left even before anyone settles the run."""
    _jail_usable()
    code, _out, _err, token = _signalled(
        env, h, tmp_path, repo, fake_ollama, signal.SIGKILL, sandbox="bwrap"
    )
    assert code == -signal.SIGKILL
    _no_orphans(token)
    (run,) = _runs(env, repo)
    assert run["status"] == "abandoned"
    assert (repo / "calc.py").read_text() == FIXED


def test_a_jailed_check_ends_with_a_terminated_isolated_run(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama
) -> None:
    _jail_usable()
    code, out, err, token = _signalled(
        env, h, tmp_path, repo, fake_ollama, signal.SIGTERM, "--isolate", sandbox="bwrap"
    )
    assert code == 130, err
    assert json.loads(out)["status"] == "interrupted"
    _no_orphans(token)
    assert _worktrees(h, repo) == 1
    assert (repo / "calc.py").read_text() == ORIGINAL
