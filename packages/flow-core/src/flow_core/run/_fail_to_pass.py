"""Fail-to-pass: the test files the model changed or added, with the operator's consent.

Source: ``docs/architecture.md``, "The evidence run". Without consent a test file the model
changed or added decides nothing (``Report.tests_changed``): the evidence run uses the
baseline's harness. With ``[agent] allow_test_edits`` (``flow run --allow-test-edits``) each
pytest check with structured results also runs the changed and new test files, by path,
twice, each time in a fresh tree made by the same machinery as the evidence run
(``verify/_tree.TreeSpec``):

1. the **baseline tree**: the baseline plus only the test and harness changes (every other
   path the model wrote keeps its baseline bytes, or is absent);
2. the **changed tree**: the baseline plus every change Flow's tools made.

A test counts when it did not pass on the first and passes on the second
(``verify/_harness.judge_fail_to_pass``), the way SWE-bench judges a test patch; the counted
ids are ``Report.fail_to_pass``, the others ``Report.fail_to_pass_rejected`` with why. The
baseline's own tests are judged as before, by the evidence run; these runs add evidence and
take none away.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flow_core.verify._harness import (
    baseline_test_files,
    changed_tests,
    judge_fail_to_pass,
)
from flow_core.verify._results import effective_results, pytest_position
from flow_core.verify._tree import TreeSpec

if TYPE_CHECKING:
    from flow_core.config import CheckConfig
    from flow_core.run._run import Run

__all__ = ["judge_changed_tests", "test_argv"]


def test_argv(check: CheckConfig, files: list[str]) -> tuple[str, ...]:
    """The check's argv run on ``files`` only: the paths appended, and ``--rootdir=.`` (the
    tree's root) unless the operator set a rootdir, so test ids name workspace paths."""
    rootdir = () if any(a.startswith("--rootdir") for a in check.cmd) else ("--rootdir=.",)
    return (*check.cmd, *rootdir, *files)


def judge_changed_tests(run: Run) -> None:
    """With consent, run and judge each pytest check's changed and new tests (module
    docstring); fill ``run.evidence.fail_to_pass`` and ``fail_to_pass_rejected`` as
    ``"CHECK: ..."`` entries. Without consent, or before the baseline, nothing runs.

    Raises:
        Interrupted: the run was asked to stop (its check groups are killed).
    """
    evidence = run.evidence
    evidence.fail_to_pass, evidence.fail_to_pass_rejected = [], []
    plan = evidence.plan
    if not run.config.agent.allow_test_edits or plan is None:
        return
    for name, check in run.config.checks.items():
        if effective_results(check) is None or pytest_position(check.cmd) is None:
            continue
        split = run.harness_split(name, check)
        tests = baseline_test_files(evidence.baseline.get(name), set(plan.files))
        files = changed_tests(split, tests)
        if not files:
            continue
        variant = check.model_copy(update={"cmd": test_argv(check, files)})
        _, before = run.results_on(name, variant, TreeSpec(plan, split.tests_only()))
        run.state.check_stop()
        _, after = run.results_on(name, variant, TreeSpec(plan, split.now))
        run.state.check_stop()
        verdict = judge_fail_to_pass(files, before, after, evidence.baseline.get(name))
        evidence.fail_to_pass += [f"{name}: {t}" for t in verdict.counted]
        evidence.fail_to_pass_rejected += [f"{name}: {r}" for r in verdict.rejected]
        run.journal.note(
            "fail_to_pass",
            check=name,
            files=files,
            counted=verdict.counted,
            rejected=verdict.rejected,
        )
