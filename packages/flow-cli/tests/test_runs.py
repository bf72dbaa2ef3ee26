"""``flow runs``, ``flow show``, ``flow undo``, ``flow apply``, ``run --isolate`` and preflight.

Real ``flow`` subprocesses, real git repositories in temp dirs, the run store under a temporary
``XDG_STATE_HOME``, and a loopback model server that speaks Ollama's ``/api/chat``.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import threading
from pathlib import Path

import pytest

#: Each test drives whole `flow run`s against the fake model server.
pytestmark = pytest.mark.slow

FIXED = "def add(a: int, b: int) -> int:\n    return a + b  # checked\n"
BROKEN = "def add(a: int, b: int) -> int:\n    return a - b\n"
ORIGINAL = "def add(a: int, b: int) -> int:\n    return a + b\n"


def _config(h, tmp_path: Path, workspace: Path, url: str, extra: str = "") -> Path:
    return h.calc_config(tmp_path, workspace, url, extra)


def test_unverified_run_lists_what_it_left_and_undo_restores(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama
) -> None:
    fake = fake_ollama(h.calc_script(BROKEN))
    cfg = _config(h, tmp_path, repo, fake.url)
    result = env.flow("run", "--trusted", "--config", str(cfg), "fix add")
    assert result.code == 1, result.stderr
    report = result.json()
    run_id = report["run_id"]
    assert report["status"] == "unverified"
    assert report["run_dir"] == str(state / "flow" / "runs" / run_id)
    assert stat.S_IMODE(os.stat(report["run_dir"]).st_mode) == 0o700
    assert (
        "flow: left changed in the workspace, not verified: calc.py, notes.md"
        in result.stderr.splitlines()
    )
    assert f"flow: to undo: flow undo {run_id}   (details: flow show {run_id})" in result.stderr

    listed = env.invoke("runs", "--json", "--config", str(cfg)).json()["runs"]
    assert [(r["id"], r["status"], r["changed_files"]) for r in listed] == [
        (run_id, "unverified", ["calc.py", "notes.md"])
    ]
    table = env.invoke("runs", "--config", str(cfg))
    assert table.stdout.splitlines()[0].split()[:3] == ["ID", "TIME", "(UTC)"]
    assert run_id in table.stdout
    shown = env.invoke("show", "--config", str(cfg))
    assert shown.code == 0
    assert f"run {run_id}" in shown.stdout
    assert "calc.py (changed)" in shown.stdout
    assert "notes.md (created)" in shown.stdout
    assert "-    return a + b" in env.invoke("show", run_id[:12], "--diff").stdout
    assert env.invoke("show", run_id, "--plan").stdout == "Plan: change calc.py and add notes.md.\n"
    transcript = [
        json.loads(x) for x in env.invoke("show", run_id, "--transcript").stdout.splitlines()
    ]
    writes = [x for x in transcript if x["type"] == "tool_call"]
    assert writes[0]["arguments"] == {"path": "calc.py", "content": BROKEN}
    assert env.invoke("show", run_id, "--json").json()["run_id"] == run_id

    undone = env.invoke("undo", "--config", str(cfg))
    assert undone.code == 0, undone.stderr
    body = json.loads(undone.stdout)
    assert body["restored"] == ["calc.py"]
    assert body["removed"] == ["notes.md"]
    assert (repo / "calc.py").read_text() == ORIGINAL
    assert not (repo / "notes.md").exists()
    assert h.git(repo, "status", "--porcelain") == ""
    # The undo is a record too; undoing it puts the run's change back.
    redo = env.invoke("undo", body["undo_id"], "--config", str(cfg))
    assert redo.code == 0, redo.stderr
    assert (repo / "calc.py").read_text() == BROKEN


def test_undo_refused_after_an_external_change(
    env, h, tmp_path: Path, workspace: Path, state: Path, fake_ollama
) -> None:
    fake = fake_ollama(h.calc_script(BROKEN))
    cfg = _config(h, tmp_path, workspace, fake.url)
    run_id = env.flow("run", "--trusted", "--config", str(cfg), "fix add").json()["run_id"]
    (workspace / "calc.py").write_text("# my own edit\n")
    refused = env.invoke("undo", run_id, "--config", str(cfg))
    assert refused.code == 1
    assert json.loads(refused.stdout)["error"]["code"] == "undo_conflict"
    assert "calc.py (changed since the run)" in refused.stderr
    assert (workspace / "calc.py").read_text() == "# my own edit\n"
    assert (workspace / "notes.md").read_text() == "n\n"  # nothing at all was undone
    forced = env.invoke("undo", run_id, "--force", "--config", str(cfg))
    assert forced.code == 0, forced.stderr
    assert (workspace / "calc.py").read_text() == ORIGINAL


def test_a_run_killed_mid_way_keeps_a_readable_record_and_undo_works(
    env, h, tmp_path: Path, workspace: Path, state: Path, fake_ollama
) -> None:
    hold, held = threading.Event(), threading.Event()
    fake = fake_ollama(h.calc_script(BROKEN, {"code": lambda: (held.set(), hold.wait(60))}))
    cfg = _config(h, tmp_path, workspace, fake.url)
    proc = env.popen("run", "--trusted", "--config", str(cfg), "fix add")
    try:
        assert held.wait(60), "the coder never reached its last request"
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        hold.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert (workspace / "calc.py").read_text() == BROKEN
    (run,) = env.invoke("runs", "--json", "--config", str(cfg)).json()["runs"]
    assert run["status"] == "abandoned"  # the first reader settled the dead run's record
    assert run["interrupted"] is True
    assert run["changed_files"] == ["calc.py", "notes.md"]
    shown = env.invoke("show", run["id"], "--config", str(cfg))
    assert "abandoned (process gone)" in shown.stdout
    lines = env.invoke("show", run["id"], "--transcript").stdout.splitlines()
    assert [json.loads(x)["type"] for x in lines].count("tool_call") == 2
    undone = env.invoke("undo", run["id"], "--config", str(cfg))
    assert undone.code == 0, undone.stderr
    assert (workspace / "calc.py").read_text() == ORIGINAL
    assert not (workspace / "notes.md").exists()


def test_isolated_verified_run_is_applied(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama
) -> None:
    fake = fake_ollama(h.calc_script(FIXED))
    cfg = _config(h, tmp_path, repo, fake.url)
    result = env.flow("run", "--trusted", "--isolate", "--config", str(cfg), "fix add")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["isolation"] == {"mode": "git-worktree", "applied": True, "reason": None}
    assert (repo / "calc.py").read_text() == FIXED
    assert (repo / "notes.md").read_text() == "n\n"
    assert h.git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert sorted(h.git(repo, "status", "--porcelain").splitlines()) == [
        " M calc.py",
        "?? notes.md",
    ]


def test_isolated_unverified_run_is_kept_and_applied_on_request(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama
) -> None:
    fake = fake_ollama(h.calc_script(BROKEN))
    cfg = _config(h, tmp_path, repo, fake.url, extra="[runs]\nisolate = true\n")
    result = env.flow("run", "--trusted", "--config", str(cfg), "fix add")
    assert result.code == 1
    report = result.json()
    run_id = report["run_id"]
    assert report["isolation"]["applied"] is False
    assert (repo / "calc.py").read_text() == ORIGINAL
    assert not (repo / "notes.md").exists()
    assert h.git(repo, "status", "--porcelain") == ""
    assert f"flow: see it: flow show {run_id} --diff; apply it: flow apply {run_id}" in (
        result.stderr.splitlines()
    )
    assert "+    return a - b" in env.invoke("show", run_id, "--diff").stdout
    assert env.invoke("undo", run_id, "--config", str(cfg)).code == 1  # nothing was applied
    applied = env.invoke("apply", run_id, "--config", str(cfg))
    assert applied.code == 0, applied.stderr
    assert (repo / "calc.py").read_text() == BROKEN
    again = env.invoke("apply", run_id, "--config", str(cfg))
    assert again.code == 1
    assert json.loads(again.stdout)["error"]["code"] == "apply_refused"


@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("no_checks", "preflight_no_required_check"),
        ("missing_program", "preflight_check_missing"),
        ("blank_task", "preflight_empty_task"),
        ("tree_too_large", "preflight_tree_too_large"),
    ],
)
def test_preflight_refuses_before_any_model_request(
    env, h, tmp_path: Path, workspace: Path, state: Path, fake_ollama, case: str, code: str
) -> None:
    fake = fake_ollama(h.calc_script(FIXED))
    task = "fix add"
    if case == "no_checks":
        cfg = h.operator_config(tmp_path / "op.toml", workspace, base_url=fake.url)
    elif case == "missing_program":
        checks = h.check_table("unit", ["no-such-flow-check-xyz"])
        cfg = h.operator_config(tmp_path / "op.toml", workspace, base_url=fake.url, checks=checks)
    elif case == "tree_too_large":  # 12 files, a watch of 10: refused before the planner
        for n in range(11):
            (workspace / f"data{n}.txt").write_text("x\n")
        cfg = _config(h, tmp_path, workspace, fake.url, "[runs]\nwatch_max_files = 10\n")
    else:
        cfg = _config(h, tmp_path, workspace, fake.url)
        task = "  \n "
    result = env.flow("run", "--trusted", "--config", str(cfg), task)
    assert result.code == 2, result.stderr
    report = result.json()
    assert [e["code"] for e in report["errors"]] == [code]
    assert "fix" in report["errors"][0]["message"]
    assert fake.requests == []
    assert (workspace / "calc.py").read_text() == ORIGINAL
    assert not (state / "flow" / "runs").exists() or not os.listdir(state / "flow" / "runs")
    status = env.flow("status", "--config", str(cfg))
    if case not in ("blank_task", "tree_too_large"):  # status never walks the tree
        assert status.code == 0
        assert code in [w["code"] for w in status.json()["warnings"]]
        assert status.json()["ok"] is False


def test_store_inside_the_workspace_is_refused(
    env, h, tmp_path: Path, workspace: Path, fake_ollama
) -> None:
    env.vars["XDG_STATE_HOME"] = str(workspace / ".state")
    fake = fake_ollama(h.calc_script(FIXED))
    cfg = _config(h, tmp_path, workspace, fake.url)
    result = env.flow("run", "--trusted", "--config", str(cfg), "fix add")
    assert result.code == 2
    assert result.json()["errors"][0]["code"] == "run_store_unusable"
    assert (workspace / "calc.py").read_text() == ORIGINAL
    assert not (workspace / ".state").exists()
    # flow status opens no store, but refuses one inside the workspace all the same.
    status = env.flow("status", "--config", str(cfg))
    assert status.code == 2
    assert status.json()["errors"][0]["code"] == "run_store_unusable"
    assert not (workspace / ".state").exists()


def test_tui_lists_shows_diffs_and_undoes_runs(
    env, h, tmp_path: Path, workspace: Path, state: Path, fake_ollama
) -> None:
    fake = fake_ollama(h.calc_script(BROKEN))
    cfg = _config(h, tmp_path, workspace, fake.url)
    env.vars["COLUMNS"] = "200"
    stdin = "fix add\n/runs\n/show\n/diff\n/undo\n/runs\n/quit\n"
    result = env.flow("tui", "--config", str(cfg), "--trusted", stdin=stdin)
    assert result.code == 0, result.stderr
    out = result.stdout
    run_id = sorted(os.listdir(state / "flow" / "runs"))[0]  # the run; the undo came later
    assert "left changed in the workspace, not verified: calc.py, notes.md" in out
    assert f"to undo: /undo {run_id}" in out
    assert "Runs (newest first)" in out
    assert "calc.py (changed)" in out  # /show
    assert "-    return a + b" in out  # /diff
    assert "restored calc.py" in out  # /undo
    assert "removed notes.md (the run created it)" in out
    assert "undone by" in out  # the second /runs
    assert (workspace / "calc.py").read_text() == ORIGINAL
    assert not (workspace / "notes.md").exists()


def test_show_cleans_terminal_escapes_on_a_tty_and_keeps_bytes_in_a_pipe(
    env, tmp_path: Path, workspace: Path, state: Path
) -> None:
    pexpect = pytest.importorskip("pexpect")
    from flow_core.store import RunStore

    store = RunStore(state / "flow" / "runs")
    rec = store.begin(workspace=str(workspace), task="t")
    rec.write_file("plan.md", b"step one \x1b]0;pwned\x07 done\n")
    rec.finish("unverified")
    piped = env.flow("show", rec.id, "--plan")
    assert piped.stdout == "step one \x1b]0;pwned\x07 done\n"  # what a script asked for
    child = pexpect.spawn(
        sys.executable,
        ["-m", "flow_cli", "show", rec.id, "--plan"],
        env={**env.vars, "TERM": "xterm-256color"},
        encoding="utf-8",
        timeout=60,
    )
    child.expect(pexpect.EOF)
    child.close()
    assert "step one" in child.before
    assert "\x1b]" not in child.before
    assert "\x07" not in child.before


def test_runs_show_and_undo_work_from_any_folder(
    env, h, tmp_path: Path, repo: Path, fake_ollama
) -> None:
    # The state folder lies inside the home folder, where the commands are typed.
    env.vars["XDG_STATE_HOME"] = str(env.home / ".local" / "state")
    fake = fake_ollama(h.calc_script(BROKEN))
    cfg = _config(h, tmp_path, repo, fake.url)
    run_id = env.flow("run", "--trusted", "--config", str(cfg), "fix add").json()["run_id"]

    from_home = env.invoke("runs", "--json")  # cwd: the home folder, which holds the store
    assert from_home.code == 0, from_home.stderr
    assert [r["id"] for r in from_home.json()["runs"]] == [run_id]
    assert "listing every workspace's runs" in from_home.stderr
    assert run_id in env.invoke("runs").stdout
    (repo / "sub").mkdir()
    for folder in (repo, repo / "sub"):  # the workspace, or a folder inside it, filters
        listed = env.invoke("runs", "--json", cwd=folder)
        assert [r["id"] for r in listed.json()["runs"]] == [run_id]
        assert "every workspace" not in listed.stderr
    other = tmp_path / "other"
    other.mkdir()
    named = env.invoke("runs", "--json", "--workspace", str(other))
    assert named.json()["runs"] == []  # a named workspace filters strictly
    assert env.invoke("show", run_id, "--diff").stdout.count("-    return a + b") == 1
    no_id = env.invoke("show")
    assert no_id.code == 2
    assert no_id.stderr.rstrip().endswith("[run_not_found]")
    assert "-    return a + b" in env.invoke("show", "--diff", cwd=repo / "sub").stdout
    undone = env.invoke("undo", run_id)
    assert undone.code == 0, undone.stderr
    assert (repo / "calc.py").read_text() == ORIGINAL
    assert not (repo / "notes.md").exists()
