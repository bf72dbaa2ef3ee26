"""Shared by the evidence and forgery suites: a scripted model, the operator config with real
pytest and ruff checks, a project with one bug, and running ``flow run`` on it."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flow_testing.model_server import coder_script

CALC_BUGGY = (
    '"""Sums."""\n\n\ndef inclusive_sum(start: int, stop: int) -> int:\n'
    '    """Sum of the integers from start to stop, both included."""\n'
    "    return sum(range(start, stop))\n"
)
CALC_FIXED = CALC_BUGGY.replace("range(start, stop)", "range(start, stop + 1)")
TESTS = (
    '"""Tests for calc."""\n\nimport calc\n\n\n'
    "def test_one_to_three() -> None:\n    assert calc.inclusive_sum(1, 3) == 6\n\n\n"
    "def test_empty() -> None:\n    assert calc.inclusive_sum(3, 2) == 0\n"
)
EXIT_AT_IMPORT = '"""Ends the test run early."""\n\nimport os\n\nos._exit(0)\n'

Call = tuple[str, dict[str, Any]]
RUFF = [sys.executable, "-m", "ruff", "check", "--no-cache", "."]


def request_text(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in request["messages"])


def script(calls: list[Call], *, approve: bool = True) -> Callable[..., Any]:
    """Planner: a plan. Coder: ``calls`` one per turn, then "Done.". Reviewer: a verdict."""
    return coder_script(calls, plan="Plan: fix calc.inclusive_sum.", approve=approve)


def write(path: str, content: str) -> Call:
    return ("write_file", {"path": path, "content": content})


FIX = write("calc.py", CALC_FIXED)


#: Every protection must hold with the check sandbox off too.
SANDBOX_MODES = pytest.mark.parametrize("sandbox", ["auto", "off"])


def pytest_argv(*, junit: bool = True) -> list[str]:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    return [*argv, "--junitxml={junit_xml}"] if junit else argv


def config(
    tmp_path: Path,
    ws: Path,
    url: str,
    *,
    junit: bool = True,
    extra_checks: str = "",
    name: str = "op.toml",
    sandbox: str = "auto",
) -> Path:
    """An operator config with the real pytest (JUnit results) and ruff checks."""
    argv = pytest_argv(junit=junit)
    # Without {junit_xml} the check says outright that its exit status is all it gives: the
    # negative control (the default, results = "auto", reads pytest's results regardless).
    results = 'results = "junit"\n' if junit else 'results = "exit_status"\n'
    text = (
        f"workspace_dir = {json.dumps(str(ws))}\n"
        f'[ollama]\nbase_url = "{url}"\nmodel = "fake-coder"\ntimeout = 30\n'
        # Scripted attacks are refused turn after turn: no early no_progress stop here.
        "[agent]\nmax_iterations = 40\nmax_cycles = 1\nmax_tool_calls = 60\nmax_idle_turns = 40\n"
        f'[sandbox]\nmode = "{sandbox}"\n'
        f'[checks.tests]\ncmd = {json.dumps(argv)}\nkind = "test"\n{results}'
        f"[checks.lint]\ncmd = {json.dumps(RUFF)}\n"
        'kind = "lint"\nfiletypes = ["python"]\n'
        f"{extra_checks}"
    )
    folder = tmp_path / "operator"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(text)
    path.chmod(0o600)
    return path


def run(env, cfg: Path) -> tuple[int, dict[str, Any], str]:
    result = env.flow("run", "--config", str(cfg), "--trusted", "Fix inclusive_sum")
    return result.code, result.json(), result.stderr


def checks_of(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in report["checks"]}


def make_project(tmp_path: Path) -> Path:
    """The project: ``calc.py`` with its bug, and ``test_calc.py``."""
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "calc.py").write_text(CALC_BUGGY)
    (ws / "test_calc.py").write_text(TESTS)
    return ws
