"""The verification gate: five conditions, judged by the host from recorded facts.

Source: ``docs/architecture.md``, section "What verified means". A run is verified only when

1. the planner and coder completed within their budgets;
2. at least one required named check ran, and every required check passed;
3. every file changed through Flow has passing static analysis for its language;
4. a separate read-only reviewer returned a valid structured approval;
5. the edited files did not change between verification and the end of review, no editor
   buffer is dirty, and nothing else in the workspace changed outside Flow's tools since the
   coder started (the whole-tree fingerprint).

Nothing here asks the model anything: the inputs are check results, hashes, editor freshness
and the validated review that the runtime recorded.

Coverage rules (condition 3):

* Each changed file maps to one key (:func:`language_key`), checked in this order:

  1. ``"tool-config"`` for a file that configures the tools the checks run (``pytest.ini``,
     ``pyproject.toml``, ``conftest.py``, ``ruff.toml``, ``package.json``, ``Makefile``,
     ``.github/workflows/*.yml``, ... see :func:`is_tool_config`). Its entry is always
     ``vetoed``: editing ``addopts = --co`` into ``pytest.ini`` or ``exclude = ["*"]`` into
     ``ruff.toml`` switches the checks off while they still exit 0, so no check result can
     vouch for such a run. Nothing covers this key, not even ``"*"`` or native editor lint.
  2. ``"docs"`` for documentation and data: a known extension (``.md``, ``.json``, ``.toml``,
     ``.yaml``, ``.txt``, ...) or a well-known document name without extension (``README``,
     ``LICENSE``, ...). Such files need the named gate (condition 2) but no linter: their
     entry is ``not_required``.
  3. ``"file:NAME"`` for any other file without an extension (``scripts/python`` →
     ``"file:python"``). The namespace keeps an extension-less file from passing for a
     language or for documentation: only a ``filetypes`` entry ``"file:NAME"`` or ``"*"``
     covers it.
  4. The language name for a known extension (``".py"`` → ``"python"``), otherwise the
     lower-cased extension (``".foo"``).

* A cycle that changed no file has nothing to cover (condition 3 holds); conditions 2, 4 and 5
  still apply.
* A file is covered by a *passing required* check of kind ``lint``, ``typecheck`` or
  ``diagnostics`` whose ``filetypes`` include the file's key, its ``.ext`` (files with an
  extension only), or ``"*"``; ``filetypes`` entries and keys are compared case-insensitively.
  ``test``, ``build`` and ``check`` kinds never give static coverage; optional checks never
  replace a required gate.
* A changed file to which the model added a file-level suppression comment (``# ruff: noqa``,
  ``# mypy: ignore-errors``, ...; ``verify/_suppress.py``) is covered by no check: the linter
  did not examine it.
* A native Rose lint result covers its files only with ``status == "ok"`` and ``verified``;
  ``"unavailable"`` never covers. A result with ``error_count > 0`` or ``stale`` for a file
  vetoes that file's language entry, whatever else passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from flow_core._protocols import EditorLintResult
from flow_core._report import (
    CheckResult,
    CoverageEntry,
    GateConditions,
    Review,
    Verification,
)
from flow_core.verify._filetypes import DOC_KEY, TOOL_CONFIG_KEY, language_key

__all__ = ["STATIC_KINDS", "GateFacts", "evaluate_gate"]

#: Check kinds that establish static language coverage.
STATIC_KINDS = frozenset({"lint", "typecheck", "diagnostics"})


def _keys_for(path: str) -> frozenset[str]:
    """Every lower-cased filetypes entry that covers this file: its key, ``.ext`` and ``*``.

    A file without an extension is covered only by its ``file:NAME`` key or ``*``.
    """
    p = PurePosixPath(path)
    keys = {language_key(path).lower(), "*"}
    if p.suffix:
        keys.add(p.suffix.lower())
    return frozenset(keys)


@dataclass(frozen=True)
class GateFacts:
    """What the host recorded for one cycle; the only input of :func:`evaluate_gate`.

    Attributes:
        within_budgets: planner and coder completed without exhausting a budget.
        budget_reasons: why not, when ``within_budgets`` is False.
        required_checks: names of every configured required check.
        checks: results of the checks the host ran this cycle (required and optional).
        check_filetypes: ``filetypes`` of each configured check, by name.
        changed_files: workspace-relative paths changed through Flow.
        native_lint: Rose native lint results gathered by the host (may be empty).
        review: the validated review, or None when there was none or it was invalid.
        review_reason: why there is no valid review (e.g. "review_invalid").
        hashes_before_checks / hashes_after_review: sha256 per edited file (None = unreadable),
            taken when the coder finished (before any check ran) and at the end of review, so
            a check or anything else that rewrites an edited file is seen.
        freshness_equal: the editor snapshot was the same before the checks and after review
            (True when no editor is attached).
        dirty_buffers: unsaved buffers at the end of review.
        outside_changes: one reason per workspace change Flow's tools did not make (the
            whole-tree fingerprint, ``run/_evidence.py``), or that the tree could not be
            watched whole; any of them fails condition 5.
        suppressed: changed files to which the model added a file-level suppression comment
            (``verify/_suppress.py``): no lint check examined them, so none covers them.
        not_examined: check name -> changed files that check's own configuration excludes
            (``run/_lint_scope.py``): that check does not cover them.
    """

    within_budgets: bool
    required_checks: Sequence[str]
    checks: Sequence[CheckResult]
    check_filetypes: Mapping[str, Sequence[str]]
    changed_files: Sequence[str]
    review: Review | None
    hashes_before_checks: Mapping[str, str | None]
    hashes_after_review: Mapping[str, str | None]
    native_lint: Sequence[EditorLintResult] = ()
    budget_reasons: Sequence[str] = ()
    review_reason: str = "no review"
    freshness_equal: bool = True
    dirty_buffers: Sequence[str] = ()
    outside_changes: Sequence[str] = ()
    suppressed: Sequence[str] = ()
    not_examined: Mapping[str, Sequence[str]] = field(default_factory=dict)


def _coverage(facts: GateFacts, reasons: list[str]) -> tuple[list[CoverageEntry], bool]:
    """One coverage entry per language key of the changed files, and whether every key
    that needs static analysis is covered; each gap appends its reason to ``reasons``."""
    passed_static = _passed_static(facts)
    native_ok, vetoed = _native_lint_verdicts(facts)
    by_key: dict[str, list[str]] = {}
    for path in sorted(set(facts.changed_files)):
        by_key.setdefault(language_key(path), []).append(path)

    entries: list[CoverageEntry] = []
    all_ok = True
    for key, files in sorted(by_key.items()):
        if key == DOC_KEY:
            entries.append(CoverageEntry(key=key, files=files, status="not_required"))
            continue
        if key == TOOL_CONFIG_KEY:
            # Never covered: the checks' own configuration cannot be vouched for by the checks.
            all_ok = False
            listed = ", ".join(files)
            it, verb = ("it", "configures") if len(files) == 1 else ("them", "configure")
            reasons.append(
                f"{listed} {verb} the tools the checks run; a run that edits {it} cannot be "
                "verified by those checks — review the diff yourself"
            )
            entries.append(CoverageEntry(key=key, files=files, status="vetoed"))
            continue
        by: set[str] = set()
        uncovered: list[str] = []
        for path in files:
            names = _covering(path, facts, passed_static, native_ok, reasons)
            by.update(names)
            if not names:
                uncovered.append(path)
        status = _key_status(key, [p for p in files if p in vetoed], uncovered, reasons)
        all_ok = all_ok and status == "covered"
        entries.append(CoverageEntry(key=key, files=files, status=status, by=sorted(by)))
    return entries, all_ok


def _passed_static(facts: GateFacts) -> list[tuple[str, frozenset[str]]]:
    """The required static checks that passed, each with its file types (lower case)."""
    passed: list[tuple[str, frozenset[str]]] = []
    for result in facts.checks:
        if result.required and result.status == "passed" and result.kind in STATIC_KINDS:
            types = facts.check_filetypes.get(result.name, ())
            passed.append((result.name, frozenset(t.lower() for t in types)))
    return passed


def _native_lint_verdicts(facts: GateFacts) -> tuple[set[str], set[str]]:
    """The files the editor's lint vouched for, and the files it vetoed (an error or a
    stale result anywhere vetoes the file, whatever else vouched)."""
    native_ok: set[str] = set()
    vetoed: set[str] = set()
    for lint in facts.native_lint:
        if lint.error_count > 0 or lint.stale:
            vetoed.update(lint.files)
        elif lint.status == "ok" and lint.verified:
            native_ok.update(lint.files)
    return native_ok - vetoed, vetoed


def _covering(
    path: str,
    facts: GateFacts,
    passed_static: list[tuple[str, frozenset[str]]],
    native_ok: set[str],
    reasons: list[str],
) -> list[str]:
    """The checks that examined ``path`` and passed; a check whose configuration excluded
    it, or a suppression comment the change adds, appends its reason to ``reasons``."""
    wanted = _keys_for(path)
    names = [n for n, types in passed_static if types & wanted]
    skipped = [n for n in names if path in facts.not_examined.get(n, ())]
    if skipped:
        names = [n for n in names if n not in skipped]
        reasons.append(
            f"{path}: excluded by the configuration of {', '.join(skipped)}, so "
            "that check did not examine it"
        )
    if path in facts.suppressed:
        names = []
        reasons.append(
            f"{path}: the change adds a file-level suppression comment, so no lint "
            "check examined it"
        )
    if path in native_ok and path not in facts.suppressed:
        names.append("rose:editor_lint")
    return names


def _key_status(
    key: str, bad: list[str], uncovered: list[str], reasons: list[str]
) -> Literal["vetoed", "uncovered", "covered"]:
    """A language key's coverage: vetoed (editor lint vetoed ``bad``), uncovered (no passing
    check examined the ``uncovered`` files) or covered; a gap appends its reason."""
    if bad:
        reasons.append(
            f"static analysis for {key!r} vetoed: editor lint reported errors or stale "
            f"results for {', '.join(bad)}"
        )
        return "vetoed"
    if uncovered:
        reasons.append(
            f"no passing required lint/typecheck/diagnostics check covers {key!r} "
            f"({', '.join(uncovered)})"
        )
        return "uncovered"
    return "covered"


def _required_passed(facts: GateFacts, reasons: list[str]) -> bool:
    if not facts.required_checks:
        reasons.append("no required named check is configured")
        return False
    results = {r.name: r for r in facts.checks}
    ok = True
    for name in facts.required_checks:
        result = results.get(name)
        if result is None:
            reasons.append(f"required check {name!r} did not run")
            ok = False
        elif result.status != "passed" or not result.required:
            code = result.error.code if result.error else result.status
            reasons.append(f"required check {name!r} did not pass: {result.status} ({code})")
            ok = False
    return ok


def _unchanged(facts: GateFacts, reasons: list[str]) -> bool:
    ok = True
    for path in sorted(set(facts.hashes_before_checks) | set(facts.hashes_after_review)):
        before = facts.hashes_before_checks.get(path)
        after = facts.hashes_after_review.get(path)
        if before is None or after is None or before != after:
            reasons.append(f"{path} changed (or became unreadable) during verification/review")
            ok = False
    missing = set(facts.changed_files) - set(facts.hashes_before_checks)
    if missing:
        reasons.append("no verification hash for " + ", ".join(sorted(missing)))
        ok = False
    if not facts.freshness_equal:
        reasons.append("editor workspace snapshot changed during verification/review")
        ok = False
    if facts.outside_changes:
        # The whole tree (run/_evidence.py): what Flow's tools did not write is unverified.
        reasons.extend(facts.outside_changes)
        ok = False
    if facts.dirty_buffers:
        reasons.append("unsaved editor buffers: " + ", ".join(sorted(facts.dirty_buffers)))
        ok = False
    return ok


def evaluate_gate(facts: GateFacts) -> Verification:
    """Judge the five conditions; ``verified`` is their conjunction and nothing else.

    Args:
        facts: what the host recorded for the cycle.

    Returns:
        A ``Verification`` with each condition, the coverage entries (one per language key) and
        a human-readable reason for every condition that failed.
    """
    reasons: list[str] = []
    within = facts.within_budgets
    if not within:
        reasons.extend(facts.budget_reasons or ["a role did not complete within its budget"])
    required = _required_passed(facts, reasons)
    coverage, static_ok = _coverage(facts, reasons)
    approved = facts.review is not None and facts.review.approved
    if facts.review is None:
        reasons.append(f"reviewer did not approve: {facts.review_reason}")
    elif not facts.review.approved:
        reasons.append("reviewer rejected the change")
    unchanged = _unchanged(facts, reasons)
    conditions = GateConditions(
        within_budgets=within,
        required_checks_passed=required,
        static_coverage=static_ok,
        review_approved=approved,
        unchanged=unchanged,
    )
    verified = all(_conditions(conditions))
    return Verification(
        verified=verified, conditions=conditions, coverage=coverage, reasons=reasons
    )


def _conditions(c: GateConditions) -> Iterable[bool]:
    return (
        c.within_budgets,
        c.required_checks_passed,
        c.static_coverage,
        c.review_approved,
        c.unchanged,
    )
