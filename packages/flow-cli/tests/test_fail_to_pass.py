"""Consent to test edits through a real ``flow run --trusted`` with the run store on.

With ``--allow-test-edits`` (or ``[agent] allow_test_edits = true``) a test file the model
changed or added counts, each test only when it fails on the baseline tree (the baseline plus
only the test changes) and passes on the changed tree: ``report.fail_to_pass``. Without
consent the same file is ``tests_changed`` only (``docs/architecture.md``, "The evidence run").
The scripted model's reviewer approves whatever it sees: the gate decides; the checks are real
pytest and ruff.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import evidence_harness as h
import pytest

#: A genuine new test: 2 + 3 + 4 is 9, the buggy sum gives 5.
NEW_TEST = h.write(
    "tests_more/test_more.py",
    '"""More sums."""\n\nimport calc\n\n\n'
    "def test_two_to_four() -> None:\n    assert calc.inclusive_sum(2, 4) == 9\n",
)
COUNTED = "tests: tests_more.test_more::test_two_to_four"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return h.make_project(tmp_path)


def flow_run(
    env, tmp_path: Path, project: Path, fake_ollama, calls: list[h.Call], *, consent: str = ""
) -> tuple[int, dict[str, Any], Any]:
    """``flow run`` with ``consent`` "flag" (``--allow-test-edits``), "config" (the
    ``[agent]`` key) or "" (none)."""
    fake = fake_ollama(h.script(calls))
    cfg = h.config(tmp_path, project, fake.url)
    if consent == "config":
        cfg.write_text(cfg.read_text().replace("[agent]\n", "[agent]\nallow_test_edits = true\n"))
    flags = ["--allow-test-edits"] if consent == "flag" else []
    result = env.flow("run", "--config", str(cfg), "--trusted", *flags, "Fix inclusive_sum")
    report = result.json()
    assert report["run_id"], result.stderr  # recorded in the run store, as users run it
    return result.code, report, fake


def reviewer_text(fake) -> str:
    (review,) = [r for r in fake.requests if r.get("format")]
    return h.request_text(review)


def test_consent_counts_a_new_test_that_fails_without_the_fix(
    env, tmp_path, project, fake_ollama
) -> None:
    code, report, fake = flow_run(
        env, tmp_path, project, fake_ollama, [h.FIX, NEW_TEST], consent="flag"
    )
    assert code == 0, report["verification"]
    assert report["fail_to_pass"] == [COUNTED]
    assert report["fail_to_pass_rejected"] == []
    assert report["tests_changed"] == ["tests_more/test_more.py"]
    assert report["fixed_tests"] == ["tests: test_calc::test_one_to_three"]
    assert f"pass with it (run with the operator's consent to test edits): {COUNTED}" in (
        reviewer_text(fake)
    )


def test_without_consent_the_same_test_is_only_listed(env, tmp_path, project, fake_ollama) -> None:
    code, report, fake = flow_run(env, tmp_path, project, fake_ollama, [h.FIX, NEW_TEST])
    assert code == 0, report["verification"]
    assert report["tests_changed"] == ["tests_more/test_more.py"]
    assert (report["fail_to_pass"], report["fail_to_pass_rejected"]) == ([], [])
    assert "consent to test edits" not in reviewer_text(fake)


def test_a_test_edited_to_pass_on_the_baseline_does_not_count(
    env, tmp_path, project, fake_ollama
) -> None:
    vacuous = h.write("test_calc.py", h.TESTS.replace("assert calc", "assert True or calc"))
    code, report, _ = flow_run(env, tmp_path, project, fake_ollama, [vacuous], consent="config")
    assert code == 1
    assert report["verified"] is False
    assert h.checks_of(report)["tests"]["status"] == "failed"  # the baseline's test still decides
    assert report["fail_to_pass"] == []
    assert report["fail_to_pass_rejected"] == [
        "tests: test_calc::test_one_to_three: passes on the baseline tree too (vacuous)"
    ]
    assert "range(start, stop))" in (project / "calc.py").read_text()


WRONG = (
    '"""Wrong."""\n\nimport calc\n\n\n'
    "def test_seven() -> None:\n    assert calc.inclusive_sum(1, 3) == 7\n"
)
EXIT_ON_BASELINE = (
    '"""Ends pytest before any result on the buggy code."""\n\nimport os\n\nimport calc\n\n'
    "if calc.inclusive_sum(1, 3) != 6:\n    os._exit(0)\n\n\n"
    "def test_sum() -> None:\n    assert calc.inclusive_sum(1, 3) == 6\n"
)
SKIP_ON_BASELINE = (
    '"""Skips itself on the buggy code."""\n\nimport pytest\n\nimport calc\n\n'
    "if calc.inclusive_sum(1, 3) != 6:\n    pytest.skip('buggy', allow_module_level=True)\n\n\n"
    "def test_sum() -> None:\n    assert calc.inclusive_sum(1, 3) == 6\n"
)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (WRONG, "test_wrong::test_seven: failed on the changed tree"),
        (EXIT_ON_BASELINE, "test_wrong::test_sum: the baseline tree gave no readable test results"),
        (SKIP_ON_BASELINE, "test_wrong::test_sum: skipped on the baseline tree"),
    ],
    ids=["fails-on-both", "exit0-on-baseline", "skip-on-baseline"],
)
def test_a_new_test_that_does_not_fail_then_pass_does_not_count(
    env, tmp_path, project, fake_ollama, content: str, why: str
) -> None:
    code, report, fake = flow_run(
        env,
        tmp_path,
        project,
        fake_ollama,
        [h.FIX, h.write("test_wrong.py", content)],
        consent="flag",
    )
    assert report["fail_to_pass"] == []
    assert report["fail_to_pass_rejected"] == [f"tests: {why}"]
    assert report["tests_changed"] == ["test_wrong.py"]
    # The baseline's tests decide, as without consent; the reviewer is told what did not count.
    assert code == 0, report["verification"]
    assert f"Changed or new tests that do not count: tests: {why}" in reviewer_text(fake)
