"""Follow README.md: its example operator config, for a real Python project, with real pytest
and ruff checks, must give correct JSON from ``flow status`` and ``flow check``.

The TOML is taken from the README itself; only the project path and the interpreter (the
README's ``.venv/bin/python``) are replaced with this test's.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"

LIB = '''"""A tiny library."""


def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b
'''
TESTS = """from mathlib import divide


def test_divide() -> None:
    assert divide(6, 3) == 2
"""


def _readme_config(workspace: Path) -> str:
    blocks = re.findall(r"```toml\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README.md has no toml example"
    text = blocks[0]
    assert '".venv/bin/python"' in text
    text = text.replace('"/home/me/src/mathlib"', f'"{workspace}"')
    return text.replace('".venv/bin/python"', f'"{sys.executable}"')


@pytest.fixture
def project(tmp_path: Path) -> Path:
    pytest.importorskip("ruff", reason="the test dependency group installs ruff")
    root = tmp_path / "mathlib"
    root.mkdir()
    (root / "mathlib.py").write_text(LIB)
    (root / "test_mathlib.py").write_text(TESTS)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "mathlib"\nversion = "0"\n\n[tool.ruff.lint]\nselect = ["E", "F"]\n'
    )
    return root


def test_readme_config_status_and_check(env, tmp_path: Path, project: Path) -> None:
    cfg = tmp_path / "flow-mathlib.toml"
    cfg.write_text(_readme_config(project))

    result = env.flow("status", "--config", str(cfg))
    assert result.code == 0, result.stderr
    status = result.json()
    assert status["workspace"] == str(project)
    assert status["config_sources"] == [str(cfg)]
    assert status["models"] == {
        "planner": "qwen2.5-coder:7b",
        "coder": "qwen2.5-coder:7b",
        "reviewer": "qwen2.5-coder:7b",
    }
    specs = {c["name"]: c for c in status["configured_checks"]}
    assert specs["tests"]["argv"] == [
        sys.executable,
        "-m",
        "pytest",
        "-q",
    ]
    assert specs["tests"]["evidence"] == "test_results"  # results = "auto": Flow's --junitxml
    assert status["weak_evidence"] == []
    assert specs["tests"]["timeout_ms"] == 60000
    assert specs["lint"]["kind"] == "lint"
    concise = "--output-format=concise"  # one line a finding: old ones can be told apart
    assert specs["lint"]["argv"] == [sys.executable, "-m", "ruff", "check", concise, "."]

    result = env.flow("check", "--config", str(cfg), "--trusted")
    assert result.code == 0, result.stderr + result.stdout
    report = result.json()
    assert report["status"] == "passed"
    assert {c["name"]: c["status"] for c in report["checks"]} == {
        "tests": "passed",
        "lint": "passed",
    }
    assert "1 passed" in report["checks"][0]["output_tail"]
    assert report["checks"][0]["evidence"] == "test_results"
    assert report["checks"][0]["tests"]["passed"] == 1

    # Break lint (an unused import): only the lint check fails, and the exit code says so.
    (project / "mathlib.py").write_text("import os\n" + LIB)
    result = env.flow("--trusted", "check", "lint", "--config", str(cfg))
    assert result.code == 1
    (lint,) = result.json()["checks"]
    assert lint["status"] == "failed"
    assert "F401" in lint["output_tail"]

    # Break a test: the tests check fails.
    (project / "mathlib.py").write_text(LIB.replace("a / b", "a * b"))
    result = env.flow("check", "tests", "--config", str(cfg), "--trusted")
    assert result.code == 1
    assert result.json()["checks"][0]["status"] == "failed"
