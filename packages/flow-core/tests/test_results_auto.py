"""results = "auto" (verify/_results.py): pytest's results are read by default; test checks
Flow cannot read are weak evidence, said in the status report and its warnings."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow_core import CheckConfig, FlowConfig, Runtime
from flow_core.verify._results import effective_results, is_weak, pytest_position, results_argv


@pytest.mark.parametrize(
    ("cmd", "at"),
    [
        (("pytest", "-q"), 1),
        (("/venv/bin/pytest",), 1),
        (("python3", "-m", "pytest", "-q", "tests"), 3),
        (("python", "-mpytest"), 2),
        (("uv", "run", "pytest", "-x"), 3),
        (("py.test",), 1),
        (("python", "-m", "unittest"), None),
        (("make", "test"), None),
        (("sh", "-c", "pytest -q"), None),
        (("tox", "--", "pytest"), None),
    ],
)
def test_where_pytest_options_start(cmd: tuple[str, ...], at: int | None) -> None:
    assert pytest_position(cmd) == at


def test_auto_adds_a_private_junitxml_right_after_pytest() -> None:
    check = CheckConfig(cmd=("python", "-m", "pytest", "-q", "--", "tests"), kind="test")
    assert check.results == "auto"
    assert effective_results(check) == "junit"
    assert results_argv(check, "/p/j.xml") == (
        "python",
        "-m",
        "pytest",
        "--junitxml=/p/j.xml",
        "-q",
        "--",
        "tests",
    )
    assert not is_weak(check)


@pytest.mark.parametrize(
    "check",
    [
        CheckConfig(cmd=("python", "-m", "unittest"), kind="test"),
        CheckConfig(cmd=("pytest", "--junitxml=out.xml"), kind="test"),  # the operator's own file
        CheckConfig(cmd=("pytest",), kind="test", results="exit_status"),
    ],
)
def test_test_checks_flow_cannot_read_are_weak(check: CheckConfig) -> None:
    assert effective_results(check) is None
    assert is_weak(check)


def test_a_lint_check_is_not_weak_evidence() -> None:
    assert not is_weak(CheckConfig(cmd=("ruff", "check", "."), kind="lint"))


def test_the_placeholder_is_filled_under_auto_and_junit() -> None:
    for results in ("auto", "junit"):
        check = CheckConfig(cmd=("pytest", "--junitxml={junit_xml}"), results=results)  # type: ignore[arg-type]
        assert results_argv(check, "/p/j.xml") == ("pytest", "--junitxml=/p/j.xml")


def test_status_reports_weak_evidence(tmp_path: Path) -> None:
    config = FlowConfig(
        workspace_dir=tmp_path,
        checks={
            "unit": CheckConfig(cmd=("python3", "-m", "unittest"), kind="test"),
            "tests": CheckConfig(cmd=("python3", "-m", "pytest"), kind="test"),
        },
    )
    with Runtime(config) as runtime:
        report = runtime.status()
    assert report.weak_evidence == ["unit"]
    specs = {c.name: c.evidence for c in report.configured_checks}
    assert specs == {"unit": "exit_status", "tests": "test_results"}
    (hint,) = [w for w in report.warnings if w.code == "weak_evidence"]
    assert "check unit" in hint.message
