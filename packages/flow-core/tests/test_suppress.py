"""Suppression comments the model added (verify/_suppress.py), ruff's configured excludes
(run/_lint_scope.py) and the gate's coverage."""

from __future__ import annotations

import dataclasses

import pytest

from flow_core._report import CheckResult, Review
from flow_core.run._lint_scope import excluded_by_config, is_ruff
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


def test_a_file_the_lint_checks_own_config_excludes_is_uncovered() -> None:
    facts = _facts([])
    verdict = evaluate_gate(dataclasses.replace(facts, not_examined={"lint": ["calc.py"]}))
    assert not verdict.verified
    (entry,) = verdict.coverage
    assert entry.status == "uncovered"
    assert any("excluded by the configuration of lint" in r for r in verdict.reasons)
    other = dataclasses.replace(facts, not_examined={"mypy": ["calc.py"]})
    assert evaluate_gate(other).verified


RUFF = ["python", "-m", "ruff", "check", "."]


def test_ruffs_configured_excludes_are_read_as_ruff_finds_them() -> None:
    files = {
        "pyproject.toml": b'[tool.ruff]\nextend-exclude = ["legacy", "gen/*.py"]\n',
        "pkg/ruff.toml": b'extend = "../base.toml"\nexclude = ["skip_me.py"]\n',
        "base.toml": b'exclude = ["vendored/"]\n',
        "other/pyproject.toml": b'[project]\nname = "x"\n',  # no [tool.ruff]: not ruff's
        "bad/ruff.toml": b"exclude = [\n",  # unparsable: ruff itself fails on it
    }
    changed = [
        "legacy/old.py",
        "a/legacy/x.py",
        "gen/out.py",
        "gen/sub/keep.py",
        "calc.py",
        "pkg/skip_me.py",
        "pkg/vendored/lib.py",
        "pkg/legacy/y.py",  # pkg/ruff.toml is closest: the root's patterns do not apply
        "other/legacy/z.py",
        "bad/legacy/w.py",
    ]
    assert is_ruff(RUFF)
    assert is_ruff(["/usr/bin/ruff", "check"])
    assert not is_ruff(["mypy", "."])
    found = excluded_by_config(RUFF, changed, files.get)
    assert found == [
        "a/legacy/x.py",
        "bad/legacy/w.py",
        "gen/out.py",
        "gen/sub/keep.py",  # '*' crosses folders here: the error is on the uncovered side
        "legacy/old.py",
        "other/legacy/z.py",
        "pkg/skip_me.py",
        "pkg/vendored/lib.py",
    ]
    argv = [*RUFF, "--extend-exclude", "calc.py,x", "--config=pkg/ruff.toml"]
    assert excluded_by_config(argv, ["calc.py", "legacy/old.py", "q/x/y.py"], files.get) == [
        "calc.py",
        "q/x/y.py",
    ]
    assert excluded_by_config([*RUFF, "--isolated"], ["legacy/old.py"], files.get) == []
