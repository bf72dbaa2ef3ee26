"""Writes that change what runs, and lint that did not look, through a real ``flow run``.

A scripted model (the shared loopback model server) plays every role; the checks are the
operator's real pytest and ruff; the run store is on, as users run it. The rules are those of
``docs/architecture.md``, "Writes that change what runs" (one place: ``tools/_policy.py``) and
"What verified means" (condition 3, file-level suppressions). Each rule is tried here with
variants its unit tests do not name; every refused write leaves nothing behind, and the honest
fix after them still verifies.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flow_testing.model_server import coder_script

#: Each test drives whole `flow run`s against the fake model server.
pytestmark = pytest.mark.slow

BUGGY = '"""Sums."""\n\n\ndef add(a: int, b: int) -> int:\n    """a plus b."""\n    return a - b\n'
FIXED = BUGGY.replace("a - b", "a + b")
TESTS = '"""Tests."""\n\nimport calc\n\n\ndef test_add() -> None:\n    assert calc.add(2, 3) == 5\n'
PY = '"""A module."""\n\nX = 1\n'
UTF7 = "#!/usr/bin/env python3\n# -*- coding: utf-7 -*-\nX = 1\n"

Call = tuple[str, dict[str, Any]]

#: (path, text, rule): each must be refused with changes_what_runs naming the rule.
REFUSED: list[tuple[str, str, str]] = [
    # shadow_stdlib: deep in a folder that is not a package, a package form, a src layout
    ("tools/secrets.py", PY, "shadow_stdlib"),
    ("email/__init__.py", PY, "shadow_stdlib"),
    ("src/tomllib.py", PY, "shadow_stdlib"),
    # shadow_installed: modules the check program's environment has (pytest's own imports)
    ("pluggy.py", PY, "shadow_installed"),
    ("iniconfig/__init__.py", PY, "shadow_installed"),
    ("tools/_pytest.py", PY, "shadow_installed"),
    # shadow_workspace: a package beside a module in another folder, a second test module
    # of the same name, a copy of the code under test elsewhere
    ("report/__init__.py", PY, "shadow_workspace"),
    ("more/test_calc.py", PY, "shadow_workspace"),
    ("scripts/calc.py", PY, "shadow_workspace"),
    # encoding_declaration: a script without a suffix, a .pyw, a shell-named python script
    ("bin/fixer", UTF7, "encoding_declaration"),
    ("fixer.pyw", UTF7, "encoding_declaration"),
    ("run.sh", UTF7, "encoding_declaration"),
    # python_startup: a package or bytecode of a startup module's name, an upper-case .pth
    ("lib/sitecustomize/__init__.py", PY, "python_startup"),
    ("usercustomize.pyc", PY, "python_startup"),
    ("deep/EXTRA.PTH", "import os\n", "python_startup"),
    # lint_excluded: a "**/" ignore pattern, the repository's own exclude file, CVS folders
    ("a/scratch/gen.py", PY, "lint_excluded"),
    ("private/mod.py", PY, "lint_excluded"),
    ("CVS/mod.py", PY, "lint_excluded"),
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    (ws / "tools").mkdir(parents=True)
    (ws / "calc.py").write_text(BUGGY)
    (ws / "test_calc.py").write_text(TESTS)
    (ws / "tools" / "report.py").write_text(PY)
    (ws / ".gitignore").write_text("**/scratch/\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".git" / "info").mkdir(exist_ok=True)
    (ws / ".git" / "info" / "exclude").write_text("private/\n")
    return ws


def _run(env: Any, tmp_path: Path, ws: Path, url: str) -> tuple[int, dict[str, Any]]:
    pytest_argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    ruff = [sys.executable, "-m", "ruff", "check", "--no-cache", "."]
    text = (
        f"workspace_dir = {json.dumps(str(ws))}\n"
        f'[ollama]\nbase_url = "{url}"\nmodel = "fake-coder"\ntimeout = 30\n'
        "[agent]\nmax_iterations = 40\nmax_cycles = 1\nmax_tool_calls = 60\nmax_idle_turns = 40\n"
        f'[checks.tests]\ncmd = {json.dumps(pytest_argv)}\nkind = "test"\n'
        f'[checks.lint]\ncmd = {json.dumps(ruff)}\nkind = "lint"\nfiletypes = ["python"]\n'
    )
    cfg = tmp_path / "operator" / "op.toml"
    cfg.parent.mkdir()
    cfg.write_text(text)
    cfg.chmod(0o600)
    result = env.flow("run", "--config", str(cfg), "--trusted", "Fix calc.add")
    return result.code, result.json()


def test_writes_that_change_what_runs_are_refused_naming_the_rule(
    env, tmp_path, project, fake_ollama
) -> None:
    calls: list[Call] = [("write_file", {"path": p, "content": t}) for p, t, _ in REFUSED]
    # Not Python: a Markdown heading that reads like a declaration is an ordinary write.
    calls.append(("write_file", {"path": "docs/notes.md", "content": "# Decoding: input\n"}))
    calls.append(("write_file", {"path": "calc.py", "content": FIXED}))
    fake = fake_ollama(coder_script(calls))
    code, report = _run(env, tmp_path, project, fake.url)
    assert report["run_id"], "the run store is on"
    writes = [t for t in report["tool_calls"] if t["name"] == "write_file"]
    assert len(writes) == len(REFUSED) + 2
    for (path, _, rule), call in zip(REFUSED, writes, strict=False):
        assert (call["ok"], call["error"]) == (False, "changes_what_runs"), (path, call)
        assert f"rule {rule!r}" in call["message"], (path, call["message"])
        assert not (project / path).exists(), path
    assert [c["ok"] for c in writes[-2:]] == [True, True]
    # Refused writes change nothing: the honest fix that follows still verifies.
    assert code == 0, report["verification"]["reasons"]
    assert report["changed_files"] == ["calc.py", "docs/notes.md"]


@pytest.mark.parametrize(
    ("fixed", "file_level"),
    [
        (FIXED + "# ruff: noqa\n", True),  # at the end of the file: ruff obeys it there too
        ("# flake8: NOQA: E501\n" + FIXED, True),  # codes named: still the whole file
        (FIXED.replace("a + b\n", "a + b  # type: ignore[operator]\n"), False),  # listed only
    ],
    ids=["ruff-noqa-at-end", "flake8-noqa-with-codes", "line-type-ignore"],
)
def test_lint_coverage_needs_a_linter_that_looked(
    env, tmp_path, project, fake_ollama, fixed: str, file_level: bool
) -> None:
    fake = fake_ollama(coder_script([("write_file", {"path": "calc.py", "content": fixed})]))
    code, report = _run(env, tmp_path, project, fake.url)
    (added,) = report["suppressions_added"]
    assert added.startswith("calc.py:")
    assert added.endswith("(file)" if file_level else "(line)")
    (python,) = [c for c in report["verification"]["coverage"] if c["key"] == "python"]
    if file_level:
        assert code != 0
        assert python["status"] == "uncovered"
        assert any("file-level suppression" in r for r in report["verification"]["reasons"])
    else:
        assert code == 0, report["verification"]["reasons"]
        assert python["status"] == "covered"


@pytest.mark.parametrize(
    "config",
    [
        ("pyproject.toml", '[tool.ruff]\nextend-exclude = ["tools"]\n'),
        ("tools/ruff.toml", 'exclude = ["report.py"]\n'),  # the closest config, below the root
    ],
    ids=["pyproject-extend-exclude", "nested-ruff-toml"],
)
def test_a_file_ruffs_own_config_excludes_is_not_covered_by_it(
    env, tmp_path, project, fake_ollama, config: tuple[str, str]
) -> None:
    # ruff exits 0 without looking at tools/report.py (its unused import goes unseen).
    (project / config[0]).write_text(config[1])
    calls: list[Call] = [
        ("write_file", {"path": "calc.py", "content": FIXED}),
        ("write_file", {"path": "tools/report.py", "content": "import os\n" + PY}),
    ]
    fake = fake_ollama(coder_script(calls))
    code, report = _run(env, tmp_path, project, fake.url)
    assert code == 1
    assert report["run_id"]
    assert {c["name"]: c["status"] for c in report["checks"]} == {
        "tests": "passed",
        "lint": "passed",
    }
    (python,) = [c for c in report["verification"]["coverage"] if c["key"] == "python"]
    assert python["status"] == "uncovered"
    assert "tools/report.py: excluded by the configuration of lint, so that check did not " in (
        " ".join(report["verification"]["reasons"])
    )
