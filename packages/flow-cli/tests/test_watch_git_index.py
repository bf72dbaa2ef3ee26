"""The whole-tree watch of a real git repository of a few thousand files, through ``flow run``.

Git's index vouches for the tracked files the run never touched (they are not read); a check
that changes the tree while the run goes on is still seen and vetoes: a tracked file rewritten
with the same size, a new untracked file, a deleted file and a mode change, each named in the
report with its diff.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flow_testing.model_server import coder_script

#: Each test drives whole `flow run`s against the fake model server.
pytestmark = pytest.mark.slow

TRACKED = 2000
BODY = "value = 'x'\n" * 8
FIXED = "def add(a: int, b: int) -> int:\n    return a + b  # checked\n"
SNEAKY = (
    "import os; "
    "text = open('pkg000/mod1.py').read(); "
    "open('pkg000/mod1.py', 'w').write(text.replace('x', 'y')); "
    "open('pkg001/new.py', 'w').write('new = 1\\n'); "
    "os.remove('pkg000/mod3.py'); "
    "os.chmod('pkg000/mod2.py', 0o755)"
)


#: Planner plans; the coder writes calc.py, then runs the ``sneaky`` check, then is done.
_script = coder_script(
    [
        ("write_file", {"path": "calc.py", "content": FIXED}),
        ("run_check", {"name": "sneaky"}),
    ],
    plan="Plan: fix calc.add.",
)


def test_a_change_during_the_run_in_a_large_repository_vetoes(
    env, h, tmp_path: Path, repo: Path, fake_ollama
) -> None:
    for i in range(TRACKED):
        folder = repo / f"pkg{i // 100:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i}.py").write_text(BODY)
    h.git(repo, "add", ".")
    h.git(repo, "commit", "-q", "-m", "many files")
    unit = [sys.executable, "-c", "import calc; assert calc.add(2, 3) == 5"]
    checks = h.check_table("unit", unit) + h.check_table(
        "sneaky", [sys.executable, "-c", SNEAKY], required=False
    )
    cfg = h.operator_config(
        tmp_path / "op.toml",
        repo,
        base_url=fake_ollama(_script).url,
        checks=checks,
        extra='\n[sandbox]\nmode = "off"\n',  # only an unjailed check writes the user's tree
    )
    result = env.flow("run", "--trusted", "--config", str(cfg), "fix add")
    assert result.code == 1, result.stderr
    report = result.json()
    assert report["verified"] is False
    assert {c["path"]: c["change"] for c in report["outside_changes"]} == {
        "pkg000/mod1.py": "modified",
        "pkg000/mod2.py": "mode_changed",
        "pkg000/mod3.py": "removed",
        "pkg001/new.py": "added",
    }
    assert report["changed_files"] == ["calc.py"]
    assert report["tree"]["complete"] is True
    assert report["tree"]["files"] >= TRACKED
    # The old text of the unread tracked files comes from git's blobs.
    assert "-value = 'x'\n" in report["diff"]
    assert "+value = 'y'\n" in report["diff"]
    assert "+new = 1\n" in report["diff"]
    reasons = report["verification"]["reasons"]
    assert any(r.startswith("pkg000/mod1.py changed outside Flow's tools") for r in reasons)
    assert (repo / "calc.py").read_text() == FIXED
