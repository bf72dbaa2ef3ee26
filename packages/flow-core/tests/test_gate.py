"""The verification gate: coverage rules and the five conditions.

Source: docs/architecture.md, "What verified means".
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from flow_core import CheckResult, EditorLintResult, GateFacts, Review, evaluate_gate, language_key

H = {"app.py": "h1"}


def result(
    name: str, kind: str = "lint", status: str = "passed", required: bool = True
) -> CheckResult:
    return CheckResult(name=name, kind=kind, required=required, argv=["x"], status=status)  # type: ignore[arg-type]


def facts(**over: Any) -> GateFacts:
    base: dict[str, Any] = {
        "within_budgets": True,
        "required_checks": ["tests", "lint"],
        "checks": [result("tests", "test"), result("lint", "lint")],
        "check_filetypes": {"tests": ["python"], "lint": ["python"]},
        "changed_files": ["app.py"],
        "review": Review(approved=True, summary="ok"),
        "hashes_before_checks": H,
        "hashes_after_review": H,
    }
    base.update(over)
    return GateFacts(**base)


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("a/b.py", "python"),
        ("x.rs", "rust"),
        ("x.go", "go"),
        ("x.ts", "typescript"),
        ("x.tsx", "typescript"),
        ("x.js", "javascript"),
        ("x.c", "c"),
        ("x.h", "c"),
        ("default.nix", "nix"),
        ("x.weird", ".weird"),
        ("README.md", "docs"),
        ("data.json", "docs"),
        ("pyproject.toml", "tool-config"),
        ("c.yaml", "docs"),
        ("notes.txt", "docs"),
        ("LICENSE", "docs"),
        ("Makefile", "tool-config"),
        ("pytest.ini", "tool-config"),
        ("scripts/python", "file:python"),
        ("Jenkinsfile", "tool-config"),
    ],
)
def test_language_key(path: str, key: str) -> None:
    assert language_key(path) == key


def test_all_five_hold_is_verified() -> None:
    v = evaluate_gate(facts())
    assert v.verified
    assert v.reasons == []
    assert [(c.key, c.status, c.by) for c in v.coverage] == [("python", "covered", ["lint"])]


BROKEN: dict[str, dict[str, Any]] = {
    "within_budgets": {"within_budgets": False, "budget_reasons": ["coder: budget_iterations"]},
    "required_checks_passed": {"checks": [result("tests", "test", "failed"), result("lint")]},
    "static_coverage": {"check_filetypes": {"tests": ["python"], "lint": ["rust"]}},
    "review_approved": {"review": Review(approved=False, summary="no")},
    "unchanged": {"hashes_after_review": {"app.py": "h2"}},
}


@pytest.mark.parametrize("broken", list(BROKEN))
def test_each_broken_condition_alone_blocks_verification(broken: str) -> None:
    v = evaluate_gate(facts(**BROKEN[broken]))
    assert not v.verified
    assert v.reasons
    for name, value in v.conditions.model_dump().items():
        assert value is (name != broken), name


@pytest.mark.parametrize(
    "combo",
    [c for n in range(1, 6) for c in itertools.combinations(BROKEN, n)],
    ids=lambda c: "+".join(c),
)
def test_no_combination_of_broken_conditions_is_verified(combo: tuple[str, ...]) -> None:
    over: dict[str, Any] = {}
    for name in combo:
        over.update(BROKEN[name])
    v = evaluate_gate(facts(**over))
    assert not v.verified
    assert {n for n, ok in v.conditions.model_dump().items() if not ok} == set(combo)


def test_no_required_check_configured_is_not_verified() -> None:
    v = evaluate_gate(facts(required_checks=[], checks=[]))
    assert not v.verified
    assert not v.conditions.required_checks_passed


def test_required_check_that_did_not_run_blocks() -> None:
    v = evaluate_gate(facts(checks=[result("lint")]))
    assert not v.conditions.required_checks_passed
    assert any("'tests' did not run" in r for r in v.reasons)


def test_optional_checks_never_replace_a_required_gate() -> None:
    # The only lint is optional: it passes but gives no coverage.
    v = evaluate_gate(
        facts(
            required_checks=["tests"],
            checks=[result("tests", "test"), result("lint", required=False)],
        )
    )
    assert not v.conditions.static_coverage
    # A failing optional check is reported but does not veto.
    ok = evaluate_gate(facts(checks=[*facts().checks, result("extra", "test", "failed", False)]))
    assert ok.verified


@pytest.mark.parametrize("kind", ["test", "build", "check"])
def test_non_static_kinds_never_cover(kind: str) -> None:
    v = evaluate_gate(facts(checks=[result("tests", "test"), result("lint", kind)]))
    assert not v.conditions.static_coverage
    assert v.coverage[0].status == "uncovered"


@pytest.mark.parametrize("types", [["python"], [".py"], ["*"], ["PYTHON"]])
def test_filetype_spellings_cover(types: list[str]) -> None:
    assert evaluate_gate(facts(check_filetypes={"tests": [], "lint": types})).verified


@pytest.mark.parametrize("kind", ["typecheck", "diagnostics"])
def test_typecheck_and_diagnostics_cover(kind: str) -> None:
    assert evaluate_gate(facts(checks=[result("tests", "test"), result("lint", kind)])).verified


def test_docs_need_no_linter_but_need_the_named_gate() -> None:
    docs = {"README.md": "h", "data.json": "h"}
    v = evaluate_gate(
        facts(
            changed_files=list(docs),
            check_filetypes={"tests": [], "lint": []},
            hashes_before_checks=docs,
            hashes_after_review=docs,
        )
    )
    assert v.verified
    assert [(c.key, c.status) for c in v.coverage] == [("docs", "not_required")]
    blocked = evaluate_gate(
        facts(
            changed_files=list(docs),
            checks=[result("tests", "test", "failed"), result("lint")],
            hashes_before_checks=docs,
            hashes_after_review=docs,
        )
    )
    assert not blocked.verified


def test_each_language_needs_its_own_coverage() -> None:
    files = {"app.py": "h", "lib.rs": "h"}
    v = evaluate_gate(
        facts(changed_files=list(files), hashes_before_checks=files, hashes_after_review=files)
    )
    assert not v.verified
    assert {c.key: c.status for c in v.coverage} == {"python": "covered", "rust": "uncovered"}


def test_native_rose_lint_covers_only_when_ok_and_verified() -> None:
    no_lint = {"check_filetypes": {"tests": [], "lint": []}}
    ok = EditorLintResult("ok", True, ("app.py",))
    assert evaluate_gate(facts(native_lint=[ok], **no_lint)).verified
    assert evaluate_gate(facts(native_lint=[ok], **no_lint)).coverage[0].by == ["rose:editor_lint"]
    for bad in (
        EditorLintResult("unavailable", True, ("app.py",)),
        EditorLintResult("ok", False, ("app.py",)),
        EditorLintResult("error", True, ("app.py",)),
    ):
        assert not evaluate_gate(facts(native_lint=[bad], **no_lint)).verified


@pytest.mark.parametrize(
    "lint",
    [
        EditorLintResult("ok", True, ("app.py",), error_count=2),
        EditorLintResult("ok", True, ("app.py",), stale=True),
    ],
)
def test_native_errors_or_stale_veto_even_a_passing_linter(lint: EditorLintResult) -> None:
    v = evaluate_gate(facts(native_lint=[lint]))
    assert not v.verified
    assert v.coverage[0].status == "vetoed"


def test_editor_dirty_or_snapshot_change_blocks() -> None:
    assert not evaluate_gate(facts(dirty_buffers=["app.py"])).conditions.unchanged
    assert not evaluate_gate(facts(freshness_equal=False)).conditions.unchanged


def test_unreadable_file_counts_as_changed() -> None:
    v = evaluate_gate(
        facts(hashes_before_checks={"app.py": None}, hashes_after_review={"app.py": None})
    )
    assert not v.conditions.unchanged


def test_missing_review_is_not_approval() -> None:
    v = evaluate_gate(facts(review=None, review_reason="invalid reviewer output (review_invalid)"))
    assert not v.verified
    assert any("review_invalid" in r for r in v.reasons)


def test_facts_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        facts().within_budgets = False  # type: ignore[misc]
