"""More ways a person's work meets ``flow undo`` and ``flow apply``; none may lose a byte.

Real ``flow`` subprocesses; the person acts during the review (inside the fake model
server's reviewer turn, no sleep) or before ``flow apply``. Each test asserts bytes and
permission bits on disk, and that undoing the forced undo gives the person's state back.
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
ORIGINAL = "def add(a: int, b: int) -> int:\n    return a + b\n"
BROKEN = "def add(a: int, b: int) -> int:\n    return a - b\n"
MINE = "my own notes, written over the run's during the review\n"


def _run(
    env, h, tmp_path: Path, ws: Path, fake_ollama, hooks: Any, *more: str, content: str = FIXED
) -> str:
    cfg = h.calc_config(tmp_path, ws, fake_ollama(h.calc_script(content, hooks)).url)
    result = env.flow("run", "--trusted", "--config", str(cfg), *more, "fix add")
    assert result.code in (0, 1), result.stderr
    run_id: str = result.json()["run_id"]
    return run_id


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_chmod_during_review_is_kept_and_comes_back_after_a_forced_undo(
    env, h, tmp_path: Path, workspace: Path, state: Path, fake_ollama
) -> None:
    calc = workspace / "calc.py"
    calc.chmod(0o644)
    run_id = _run(env, h, tmp_path, workspace, fake_ollama, {"review": lambda: calc.chmod(0o755)})
    refused = env.invoke("undo", run_id, "--workspace", str(workspace))
    assert refused.code == 1
    assert "calc.py (permissions changed since the run (644 to 755))" in refused.stderr
    assert (calc.read_text(), _mode(calc)) == (FIXED, 0o755)
    assert (workspace / "notes.md").read_text() == "n\n"

    forced = env.invoke("undo", run_id, "--force", "--workspace", str(workspace))
    assert forced.code == 0, forced.stderr
    assert (calc.read_text(), _mode(calc)) == (ORIGINAL, 0o644)
    back = env.invoke("undo", json.loads(forced.stdout)["undo_id"], "--workspace", str(workspace))
    assert back.code == 0, back.stderr
    assert (calc.read_text(), _mode(calc)) == (FIXED, 0o755)  # bytes and bits, as they were


def test_a_file_the_run_created_and_the_person_rewrote_is_never_removed_unasked(
    env, h, tmp_path: Path, workspace: Path, state: Path, fake_ollama
) -> None:
    notes = workspace / "notes.md"
    hooks = {"review": lambda: notes.write_text(MINE)}
    run_id = _run(env, h, tmp_path, workspace, fake_ollama, hooks)
    refused = env.invoke("undo", run_id, "--workspace", str(workspace))
    assert refused.code == 1
    assert "notes.md (changed since the run)" in refused.stderr
    assert notes.read_text() == MINE
    assert (workspace / "calc.py").read_text() == FIXED  # nothing else undone either

    forced = env.invoke("undo", run_id, "--force", "--workspace", str(workspace))
    assert forced.code == 0, forced.stderr
    assert not notes.exists()
    back = env.invoke("undo", json.loads(forced.stdout)["undo_id"], "--workspace", str(workspace))
    assert back.code == 0, back.stderr
    assert notes.read_text() == MINE


def test_apply_never_writes_through_a_link_and_keeps_the_persons_bits(
    env, h, tmp_path: Path, repo: Path, state: Path, fake_ollama
) -> None:
    """An isolated run, not verified (so kept, not applied). Before ``flow apply`` the person
    (a) turned ``calc.py`` into a link to a file holding the very bytes the run started from,
    and later (b) made it a plain file again with other permission bits."""
    run_id = _run(env, h, tmp_path, repo, fake_ollama, {}, "--isolate", content=BROKEN)
    calc, kept = repo / "calc.py", repo / "kept.py"
    calc.rename(kept)
    calc.symlink_to("kept.py")
    refused = env.invoke("apply", run_id, "--workspace", str(repo))
    assert refused.code == 1
    assert "calc.py (" in refused.stderr
    assert "symbolic link" in refused.stderr
    assert os.readlink(calc) == "kept.py"
    assert kept.read_text() == ORIGINAL  # the link's target was not written through
    assert not (repo / "notes.md").exists()  # nothing written at all

    calc.unlink()
    kept.rename(calc)
    calc.chmod(0o700)
    applied = env.invoke("apply", run_id, "--workspace", str(repo))
    assert applied.code == 0, applied.stderr
    assert (calc.read_text(), _mode(calc)) == (BROKEN, 0o700)
    assert (repo / "notes.md").read_text() == "n\n"
    undone = env.invoke("undo", run_id, "--workspace", str(repo))
    assert undone.code == 0, undone.stderr
    assert (calc.read_text(), _mode(calc)) == (ORIGINAL, 0o700)
    assert not (repo / "notes.md").exists()
