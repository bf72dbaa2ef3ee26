"""Suppression comments the model added (verify/_suppress.py) and the gate's coverage."""

from __future__ import annotations

import pytest

from flow_core._report import CheckResult, Review
from flow_core.verify import GateFacts, evaluate_gate
from flow_core.verify._suppress import added_suppressions

OLD = b'"""Calc."""\n\nimport os  # noqa: F401\n\n\ndef add(a, b):\n    return a - b\n'


@pytest.mark.parametrize(
    "head",
    [
        "# ruff: noqa\n",
        "# flake8: noqa\n",
        "# mypy: ignore-errors\n",
        "# type: ignore\n",
        "#!/usr/bin/env python\n# pylint: skip-file\n",
        "# RUFF: NOQA: F401\n",
        "// @ts-nocheck\n",
        "/* eslint-disable */\n",
        "#![allow(warnings)]\n",
    ],
)
def test_file_level_suppressions_are_found(head: str) -> None:
    (found,) = added_suppressions("calc.py", OLD, head.encode() + OLD)
    assert found.file_level, found
    assert found.path == "calc.py"


def test_line_suppressions_are_listed_not_file_level() -> None:
    new = OLD.replace(b"return a - b", b"return a - b  # type: ignore[operator]  # noqa")
    new += b"x = 1  # nosec\n"
    found = added_suppressions("calc.py", OLD, new)
    assert [(s.line, s.file_level) for s in found] == [(7, False), (8, False)]
    assert str(found[0]).startswith("calc.py:7: return a - b")


def test_suppressions_the_baseline_had_are_not_added() -> None:
    assert added_suppressions("calc.py", OLD, OLD.replace(b"a - b", b"a + b")) == []
    # A "# type: ignore" after the first statement covers one line only.
    late = OLD + b"# type: ignore\n"
    (found,) = added_suppressions("calc.py", OLD, late)
    assert not found.file_level


def _facts(suppressed: list[str]) -> GateFacts:
    lint = CheckResult(name="lint", kind="lint", required=True, argv=["ruff"], status="passed")
    return GateFacts(
        within_budgets=True,
        required_checks=["lint"],
        checks=[lint],
        check_filetypes={"lint": ["python"]},
        changed_files=["calc.py"],
        review=Review(approved=True, summary="ok"),
        hashes_before_checks={"calc.py": "a"},
        hashes_after_review={"calc.py": "a"},
        suppressed=suppressed,
    )


def test_a_file_level_suppression_leaves_the_file_uncovered() -> None:
    assert evaluate_gate(_facts([])).verified
    verdict = evaluate_gate(_facts(["calc.py"]))
    assert not verdict.verified
    (entry,) = verdict.coverage
    assert entry.status == "uncovered"
    assert any("file-level suppression" in r for r in verdict.reasons)


@pytest.mark.parametrize("head", ["# pylint: disable=all\n", "# ruff:noqa\n", "# Flake8: NOQA\n"])
def test_file_level_spellings_nobody_named(head: str) -> None:
    (found,) = added_suppressions("calc.py", OLD, head.encode() + OLD)
    assert found.file_level, found


def test_a_file_level_suppression_at_the_end_counts_too() -> None:
    (found,) = added_suppressions("calc.py", OLD, OLD + b"# ruff: noqa\n")
    assert found.file_level
