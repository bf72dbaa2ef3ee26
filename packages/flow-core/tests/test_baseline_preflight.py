"""The baseline check run before any model request (run/_baseline.py), through Runtime.run
with real check subprocesses and a scripted model."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from flow_core import ChatResponse, FlowConfig, Runtime, ScriptedBackend, ToolCall
from flow_core.run._baseline import finding_count

PY = sys.executable
TESTS = {"cmd": [PY, "-c", "import app, sys; sys.exit(app.x != 2)"], "kind": "test"}
#: A linter with three old findings in old.py; a line "x = 3" in app.py adds a new one.
LINT_SRC = (
    "import sys\n"
    "for n in range(1, 4): print(f'old.py:{n}:1: F401 unused import m{n}')\n"
    "new = 'x = 3' in open('app.py').read()\n"
    "if new: print('app.py:1:1: E999 something new')\n"
    "print(f'Found {3 + new} errors.')\n"
    "sys.exit(1)\n"
)
LINT = {"cmd": [PY, "-c", LINT_SRC], "kind": "lint", "filetypes": ["python"]}
PLAN = ChatResponse("Plan: set x in app.py to 2.")
REVIEW_OK = ChatResponse(json.dumps({"approved": True, "summary": "ok", "findings": []}))


def fix(new: str) -> list[ChatResponse]:
    edit = ToolCall("e1", "edit_file", {"path": "app.py", "old_text": "x = 1", "new_text": new})
    return [PLAN, ChatResponse("", tool_calls=(edit,)), ChatResponse("Done."), REVIEW_OK]


@pytest.fixture
def make(flow_config: Callable[..., FlowConfig], tmp_path: Path) -> Callable[..., FlowConfig]:
    (tmp_path / "ws" / "app.py").write_text("x = 1\n")
    return flow_config


def test_a_lint_check_failing_before_any_change_stops_the_run_before_the_model(
    make: Callable[..., FlowConfig],
) -> None:
    backend = ScriptedBackend(fix("x = 2"))
    report = Runtime(make({"tests": TESTS, "lint": LINT}), trusted=True, backend=backend).run("t")
    assert report.status == "error"
    assert backend.requests == []  # not one model request
    failing = [e for e in report.errors if e.code == "baseline_failing"]
    assert len(failing) == 1
    assert "'lint'" in failing[0].message
    assert "3 finding(s)" in failing[0].message
    assert "--allow-failing-baseline" in failing[0].message


@pytest.mark.parametrize(("new", "verified"), [("x = 2", True), ("x = 3", False)])
def test_allowed_a_failing_lint_check_is_judged_by_new_findings(
    make: Callable[..., FlowConfig], new: str, verified: bool
) -> None:
    # "x = 3" both adds a lint finding and fails the test: not verified either way round.
    config = make(
        {"tests": TESTS, "lint": LINT}, agent={"allow_failing_baseline": True, "max_cycles": 1}
    )
    report = Runtime(config, trusted=True, backend=ScriptedBackend(fix(new))).run("t")
    assert report.verified is verified, report.errors
    lint = next(c for c in report.checks if c.name == "lint")
    assert lint.exit_code == 1  # the real exit status is kept
    assert (lint.status == "passed") is verified
    if not verified:
        assert lint.error is not None
        assert "E999 something new" in lint.error.message


def test_a_test_check_passing_before_any_change_is_a_warning(
    make: Callable[..., FlowConfig], tmp_path: Path
) -> None:
    (tmp_path / "ws" / "app.py").write_text("x = 2\n")
    lint_ok = {"cmd": [PY, "-c", "print('ok')"], "kind": "lint", "filetypes": ["python"]}
    replies = [PLAN, ChatResponse("Nothing to change."), REVIEW_OK]
    config = make({"tests": TESTS, "lint": lint_ok}, agent={"max_cycles": 1})
    report = Runtime(config, trusted=True, backend=ScriptedBackend(replies)).run("t")
    assert [w.code for w in report.warnings] == ["baseline_passing"]
    assert report.status in ("verified", "unverified")  # the run went on


@pytest.mark.parametrize(
    ("output", "count"),
    [
        ("a.py:1:1: F401 x\nFound 107 errors.\n", 107),
        ("src/m.py:3: error: bad\nFound 2 errors in 1 file (checked 3 source files)\n", 2),
        ("a.py:1:2: E1 x\nb.py:4:5: E2 y\n", 2),
        ("Traceback (most recent call last):\n", None),
    ],
)
def test_finding_count(output: str, count: int | None) -> None:
    assert finding_count(output) == count


#: A linter whose old findings are ruff's full format: several lines each, about 600 bytes.
LONG_LINT_SRC = (
    "import sys\n"
    "for n in range(1, 108):\n"
    "    print(f'F401 [*] `m{n}` imported but unused\\n --> old.py:{n}:8\\n' + '  |\\n' * 100)\n"
    "print('Found 107 errors.')\n"
    "sys.exit(1)\n"
)


@pytest.mark.parametrize(
    ("src", "why"),
    [
        (LONG_LINT_SRC, "--output-format=concise"),  # old findings fill more than is kept
        ("import sys; print('lint: it failed'); sys.exit(1)", "'path:line: message'"),
    ],
)
@pytest.mark.parametrize("allowed", [True, False])
def test_a_failing_lint_check_whose_findings_cannot_be_compared_says_so_before_the_model(
    make: Callable[..., FlowConfig], src: str, why: str, allowed: bool
) -> None:
    # --allow-failing-baseline could never pass such a check: the run stops at once, allowed
    # or not, and the fix says how to make the check's findings comparable.
    lint = {"cmd": [PY, "-c", src], "kind": "lint", "filetypes": ["python"]}
    config = make({"tests": TESTS, "lint": lint}, agent={"allow_failing_baseline": allowed})
    backend = ScriptedBackend(fix("x = 2"))
    report = Runtime(config, trusted=True, backend=backend).run("t")
    assert report.status == "error"
    assert backend.requests == []
    (failing,) = [e for e in report.errors if e.code == "baseline_failing"]
    assert why in failing.message
    assert ("cannot tell new findings from old" in failing.message) is allowed
