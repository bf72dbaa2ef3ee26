"""``flow undo`` and ``flow apply`` as a three-way merge per file: nobody's work is lost.

Real ``flow`` subprocesses on real files (and a real git repository where it matters). The
person's edits happen while the run is in review (inside the fake model server's reviewer
turn, so no sleep is needed) or after it; every test asserts the bytes on disk afterwards.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

#: Each test drives whole `flow run`s against the fake model server.
pytestmark = pytest.mark.slow

FIXED = "def add(a: int, b: int) -> int:\n    return a + b  # checked\n"
BROKEN = "def add(a: int, b: int) -> int:\n    return a - b\n"
ORIGINAL = "def add(a: int, b: int) -> int:\n    return a + b\n"
MINE = "# my own edit, saved during the review\n" + ORIGINAL


def _run(env, h, tmp_path: Path, ws: Path, fake_ollama, script, *more: str) -> dict[str, Any]:
    cfg = h.calc_config(tmp_path, ws, fake_ollama(script).url)
    result = env.flow("run", "--trusted", "--config", str(cfg), *more, "fix add")
    assert result.code in (0, 1), result.stderr
    return result.json()


def test_an_edit_saved_during_review_is_never_undone(
    env, h, tmp_path: Path, workspace: Path, state: Path, fake_ollama
) -> None:
    calc = workspace / "calc.py"
    report = _run(
        env,
        h,
        tmp_path,
        workspace,
        fake_ollama,
        h.calc_script(FIXED, {"review": lambda: calc.write_text(MINE)}),
    )
    run_id = report["run_id"]
    refused = env.invoke("undo", run_id, "--workspace", str(workspace))
    assert refused.code == 1, refused.stderr
    assert json.loads(refused.stdout)["error"]["code"] == "undo_conflict"
    assert "calc.py (changed since the run)" in refused.stderr
    assert calc.read_text() == MINE  # the person's text is still there
    assert (workspace / "notes.md").read_text() == "n\n"  # and nothing else was undone

    # --force keeps the person's text in the undo's own record before it restores.
    forced = env.invoke("undo", run_id, "--force", "--workspace", str(workspace))
    assert forced.code == 0, forced.stderr
    body = json.loads(forced.stdout)
    assert body["forced"] == ["calc.py"]
    assert calc.read_text() == ORIGINAL
    assert not (workspace / "notes.md").exists()
    back = env.invoke("undo", body["undo_id"], "--workspace", str(workspace))
    assert back.code == 0, back.stderr
    assert calc.read_text() == MINE
    assert (workspace / "notes.md").read_text() == "n\n"


@pytest.mark.parametrize("change", ["deleted", "created", "chmod", "symlink", "directory"])
def test_every_kind_of_later_change_is_a_conflict(
    env, h, tmp_path: Path, workspace: Path, state: Path, fake_ollama, change: str
) -> None:
    report = _run(env, h, tmp_path, workspace, fake_ollama, h.calc_script(BROKEN))
    run_id = report["run_id"]
    notes, calc = workspace / "notes.md", workspace / "calc.py"
    target = notes
    if change == "deleted":  # (notes.md deleted would already be as before the run)
        calc.unlink()
        target = calc
        why = "calc.py (deleted since the run)"
    elif change == "created":  # undo of the undo: the person made notes.md again meanwhile
        first = env.invoke("undo", run_id, "--workspace", str(workspace))
        assert first.code == 0, first.stderr
        run_id = json.loads(first.stdout)["undo_id"]
        notes.write_text("mine\n")
        why = "notes.md (created since the run)"
    elif change == "chmod":
        was = stat.S_IMODE(calc.stat().st_mode)
        os.chmod(calc, was | 0o111)
        target = calc
        why = f"calc.py (permissions changed since the run ({was:o} to {was | 0o111:o}))"
    elif change == "symlink":
        notes.unlink()
        notes.symlink_to("calc.py")
        why = "notes.md (is now a symbolic link)"
    else:
        notes.unlink()
        notes.mkdir()
        why = "notes.md (is now a directory)"
    before = {p.name: (p.is_symlink(), p.is_file() and p.read_bytes()) for p in (calc, notes)}
    mode = stat.S_IMODE(os.lstat(target).st_mode) if target.exists() else None
    refused = env.invoke("undo", run_id, "--workspace", str(workspace))
    assert refused.code == 1, refused.stderr
    assert why in refused.stderr
    after = {p.name: (p.is_symlink(), p.is_file() and p.read_bytes()) for p in (calc, notes)}
    assert after == before
    if mode is not None:
        assert stat.S_IMODE(os.lstat(target).st_mode) == mode
    if change in ("symlink", "directory"):  # never replaced, even with --force
        forced = env.invoke("undo", run_id, "--force", "--workspace", str(workspace))
        assert forced.code == 1
        assert json.loads(forced.stdout)["error"]["code"] == "undo_failed"
        assert notes.is_symlink() or notes.is_dir()
        assert calc.read_text() == BROKEN


def test_undo_names_the_later_run_that_changed_the_file(
    env, h, tmp_path: Path, workspace: Path, state: Path, fake_ollama
) -> None:
    first = _run(env, h, tmp_path, workspace, fake_ollama, h.calc_script(BROKEN))
    second = _run(env, h, tmp_path, workspace, fake_ollama, h.calc_script("x = 1\n"))
    refused = env.invoke("undo", first["run_id"], "--workspace", str(workspace))
    assert refused.code == 1
    assert f"calc.py (changed since the run; run {second['run_id']} wrote it later)" in (
        refused.stderr
    )
    assert (workspace / "calc.py").read_text() == "x = 1\n"
    # Undoing the later run first, then the earlier one, walks back cleanly.
    for run in (second, first):
        done = env.invoke("undo", run["run_id"], "--workspace", str(workspace))
        assert done.code == 0, done.stderr
    assert (workspace / "calc.py").read_text() == ORIGINAL
    assert not (workspace / "notes.md").exists()


def test_apply_merges_per_file_and_names_only_real_changes(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama
) -> None:
    workspace = repo
    calc = workspace / "calc.py"
    report = _run(env, h, tmp_path, workspace, fake_ollama, h.calc_script(BROKEN), "--isolate")
    run_id = report["run_id"]
    assert report["isolation"]["applied"] is False  # BROKEN fails the unit check
    calc.write_text(MINE)  # the person's edit to a file the run also changed
    refused = env.invoke("apply", run_id, "--workspace", str(workspace))
    assert refused.code == 1
    assert "calc.py (changed since the run started)" in refused.stderr
    assert "notes.md" not in refused.stderr.split("refused")[1].split(";")[0]
    assert calc.read_text() == MINE
    assert not (workspace / "notes.md").exists()
    calc.write_text(BROKEN)  # the person made the same change: nothing to write there
    applied = env.invoke("apply", run_id, "--workspace", str(workspace))
    assert applied.code == 0, applied.stderr
    body = json.loads(applied.stdout)
    assert (body["written"], body["already"]) == (["notes.md"], ["calc.py"])
    assert (workspace / "notes.md").read_text() == "n\n"
    undone = env.invoke("undo", run_id, "--workspace", str(workspace))
    assert undone.code == 0, undone.stderr
    assert calc.read_text() == ORIGINAL
    assert not (workspace / "notes.md").exists()
