"""Evidence for one run: test results against the baseline, and the whole tree watched.

Source: ``docs/architecture.md``, section "Evidence". A check's exit status and the files Flow
wrote through its own tools are not enough: code the model wrote can end pytest with status 0
before any test ran, and a check can write files Flow never sees. So, per run:

1. **Structured results.** A check with ``results = "junit"`` gets a fresh private folder
   outside the workspace; ``{junit_xml}`` in its argv becomes a path there
   (:func:`prepare`). After it ran, the file is read and judged (``verify/_junit.py``): a
   check that exited 0 without results that prove a pass is turned into a failure with code
   ``check_evidence``. A check without structured results is reported with
   ``evidence = "exit_status"``: its pass rests on the exit status alone.
2. **The baseline.** Before the coder starts, every check with structured results runs once;
   the test ids it saw (passing and failing) are what later runs must still show, passing.
3. **The whole tree.** A fingerprint of every file (``verify/_fingerprint.py``) is taken
   after the baseline, before the coder starts, and again after each review. Every difference
   that Flow's tools did not make is an outside change: listed in the report, shown in the
   diff, and a reason the run is not verified.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from flow_core._report import (
    BaselineResult,
    CheckResult,
    ErrorInfo,
    OutsideChange,
    ResultCounts,
    TreeWatch,
)
from flow_core.run._baseline import BaselineGuard
from flow_core.run._changes import unified_diff
from flow_core.verify._fingerprint import (
    DEFAULT_MAX_FILES,
    KEEP_FILE_BYTES,
    Fingerprint,
    FingerprintScope,
    TreeChange,
    compare,
    take_fingerprint,
)
from flow_core.verify._gitindex import read_blob
from flow_core.verify._junit import (
    JUnitError,
    JUnitResults,
    judge,
    parse_junit,
    read_junit,
)
from flow_core.verify._results import effective_results, results_argv
from flow_core.verify._scratch import make_scratch, remove_scratch
from flow_core.verify._toolfiles import ROOT_PROTECTED

if TYPE_CHECKING:
    from flow_core.config import CheckConfig
    from flow_core.verify._tree import WorkspacePlan

__all__ = ["MAX_LISTED_CHANGES", "Prepared", "RunEvidence", "collect_results", "prepare"]

#: Outside changes named one by one in the gate's reasons (the report lists them all).
MAX_LISTED_CHANGES = 20
#: Protected files inside generated folders (``.vscode/tasks.json``) watched all the same.
_WATCH_ALSO = tuple(p for p in ROOT_PROTECTED if "/" in p)


@dataclass(frozen=True)
class Prepared:
    """A check ready to run: its argv with ``{junit_xml}`` filled, and where results go."""

    check: CheckConfig
    results_path: str | None = None
    folder: str | None = None

    def discard(self) -> None:
        """Remove the results folder (``verify/_scratch.py``); again is harmless."""
        if self.folder is not None:
            remove_scratch(self.folder)


def _inside(path: str, root: Path) -> bool:
    roots = {os.path.normpath(root), os.path.realpath(root)}
    real = os.path.realpath(path)
    return any(os.path.commonpath([r, real]) == r for r in roots)


def prepare(check: CheckConfig, workspace: Path) -> Prepared:
    """Give a check with test results (``verify/_results.py``) a path in a new private
    folder outside the workspace: its ``{junit_xml}`` filled, or pytest's ``--junitxml``.

    The folder is made by ``verify/_scratch.make_scratch`` (mode 0700; removed by
    ``Prepared.discard``, which ``Run.run_check`` calls whatever way the check ended); when
    the temp directory lies in the workspace, ``/tmp`` is used instead.

    Returns:
        The check unchanged when Flow reads no results from it; otherwise a copy whose argv
        names ``<folder>/junit.xml``.
    """
    if effective_results(check) is None:
        return Prepared(check)
    base = tempfile.gettempdir()
    if _inside(base, workspace):
        base = "/tmp"  # noqa: S108 - the temp folder lies inside the workspace
    folder = make_scratch("flow-results-", base)
    path = os.path.join(folder, "junit.xml")
    cmd = results_argv(check, path)
    return Prepared(check.model_copy(update={"cmd": cmd}), path, folder)


def _counts(results: JUnitResults) -> ResultCounts:
    return ResultCounts(
        passed=results.count("passed"),
        failed=results.count("failed"),
        errors=results.count("error"),
        skipped=results.count("skipped"),
    )


def collect_results(prepared: Prepared) -> tuple[JUnitResults | None, str | None]:
    """Read and parse a prepared check's results file, then remove its private folder.

    Returns:
        ``(results, None)``, or ``(None, why)`` when the file is missing or unusable.
    """
    assert prepared.results_path is not None
    try:
        return parse_junit(read_junit(prepared.results_path)), None
    except JUnitError as err:
        return None, str(err)
    finally:
        prepared.discard()


@dataclass
class RunEvidence:
    """What one run or check run gathers as evidence (see the module docstring)."""

    baseline: dict[str, JUnitResults | None] = field(default_factory=dict)
    baseline_records: list[BaselineResult] = field(default_factory=list)
    base: Fingerprint | None = None
    last: Fingerprint | None = None
    outside: list[TreeChange] = field(default_factory=list)
    tree: TreeWatch | None = None
    #: What every fingerprint of the run covers (``watch_start`` sets it).
    scope: FingerprintScope = field(default_factory=FingerprintScope)
    root: Path | None = None
    guard: BaselineGuard = field(default_factory=BaselineGuard)
    #: The workspace's files at the baseline, before any check ran: the evidence run's tree
    #: (``run/_run.Run.evidence_tree``); None outside a trusted run.
    plan: WorkspacePlan | None = None
    #: Harness files the model changed or added (``verify/_harness.py``).
    tests_changed: set[str] = field(default_factory=set)
    #: With ``agent.allow_test_edits``: the changed or new tests that counted, and those that
    #: did not with why, as of the latest verification (``run/_fail_to_pass.py``).
    fail_to_pass: list[str] = field(default_factory=list)
    fail_to_pass_rejected: list[str] = field(default_factory=list)

    # -- structured results ---------------------------------------------------------------------

    def conclude(
        self, result: CheckResult, prepared: Prepared, *, baseline: bool = False
    ) -> CheckResult:
        """Judge a finished check's structured results; record them when ``baseline``.

        Returns:
            The result with ``results``, ``evidence``, ``tests``, ``fixed_tests`` and
            ``evidence_problems`` filled; a check that exited 0 without results that prove a
            pass becomes ``failed`` with code ``check_evidence``.
        """
        if prepared.results_path is None:
            return result
        parsed, problem = collect_results(prepared)
        name = result.name
        if baseline:
            self.baseline[name] = parsed
            self.baseline_records.append(
                BaselineResult(
                    name=name,
                    status=result.status,
                    exit_code=result.exit_code,
                    tests=_counts(parsed) if parsed is not None else None,
                    failing=parsed.ids("failed", "error") if parsed is not None else [],
                    problem=problem,
                )
            )
        update: dict[str, object] = {"results": "junit", "evidence": "test_results"}
        if parsed is None:
            problems = [problem or "no results"]
        else:
            verdict = judge(parsed, None if baseline else self.baseline.get(name))
            problems = verdict.problems
            update["tests"] = _counts(parsed)
            update["fixed_tests"] = verdict.fixed
        update["evidence_problems"] = problems
        if result.status == "passed" and problems:
            update["status"] = "failed"
            update["error"] = ErrorInfo(
                code="check_evidence",
                message="the check exited 0 but its test results do not prove a pass: "
                + "; ".join(problems),
            )
        return result.model_copy(update=update)

    # -- the whole tree -------------------------------------------------------------------------

    def watch_start(self, root: Path, max_files: int = DEFAULT_MAX_FILES) -> None:
        """The base fingerprint (pre-images of small files kept for the diff); ``max_files``
        is ``[runs] watch_max_files``, kept for the later fingerprints too."""
        self.scope = FingerprintScope(_WATCH_ALSO, max_files=max_files)
        self.root = root
        self.base = self.last = take_fingerprint(root, scope=self.scope, keep=True)

    def watch_check(self, root: Path, written: Mapping[str, str | None]) -> list[str]:
        """Fingerprint again and compare with the base; return the gate's reasons.

        Args:
            root: the workspace root.
            written: SHA-256 per path as Flow's tools left it when verification began.

        Returns:
            One reason per outside change (at most :data:`MAX_LISTED_CHANGES`, then a count),
            and one when a fingerprint is incomplete; empty when nothing else changed.
        """
        if self.base is None:
            return []
        now = take_fingerprint(root, scope=self.scope, previous=self.last, read=written)
        self.last = now
        self.outside = compare(self.base, now, written=written)
        self.tree = TreeWatch(
            files=len(now.files),
            hashed_files=now.hashed_files,
            hashed_bytes=now.hashed_bytes,
            complete=self.base.complete and now.complete,
            problem=self.base.problem or now.problem,
        )
        reasons = [
            f"{c.path} changed outside Flow's tools ({c.change}: {c.detail})"
            for c in self.outside[:MAX_LISTED_CHANGES]
        ]
        if len(self.outside) > MAX_LISTED_CHANGES:
            more = len(self.outside) - MAX_LISTED_CHANGES
            reasons.append(f"... and {more} more changes outside Flow's tools")
        if not self.tree.complete:
            reasons.append(
                f"the workspace could not be watched whole ({self.tree.problem}); changes "
                "outside Flow's tools cannot be ruled out"
            )
        return reasons

    # -- report ---------------------------------------------------------------------------------

    def outside_changes(self) -> list[OutsideChange]:
        """The outside changes as the report lists them."""
        return [OutsideChange(path=c.path, change=c.change, detail=c.detail) for c in self.outside]

    def _blob(self, path: str) -> bytes | None:
        """The base content of a file git's index vouched for (so it was not read), from the
        repository's blob, when it is small enough to be kept."""
        state = self.base.files.get(path) if self.base is not None else None
        if state is None or not state.oid or state.size > KEEP_FILE_BYTES or self.root is None:
            return None
        return read_blob(self.root, state.oid)

    def diff(self, read: Callable[[str], bytes | None]) -> str:
        """Unified diffs of the outside changes (files rewritten after a tool wrote them are
        already in the tools' diff and left out here).

        Args:
            read: the current bytes of a path (None: missing or unreadable).
        """
        kept = self.base.kept if self.base is not None else {}
        parts: list[str] = []
        for c in self.outside:
            if "after Flow's tool wrote it" in c.detail:
                continue
            header = f"--- a/{c.path}\n+++ b/{c.path}\n"
            if c.change == "mode_changed":
                parts.append(f"{header}@@ {c.detail} @@\n")
                continue
            new = None if c.change == "removed" else read(c.path)
            old = None if c.change == "added" else kept.get(c.path) or self._blob(c.path)
            if c.change != "added" and old is None:
                parts.append(
                    f"{header}@@ {c.change}: {c.detail}; the earlier content was not kept @@\n"
                )
                if new is not None:
                    parts.append(unified_diff(c.path, None, new))
                continue
            if c.change != "removed" and new is None:
                parts.append(f"{header}@@ {c.change}: {c.detail}; the content cannot be read @@\n")
                continue
            parts.append(unified_diff(c.path, old, new))
        return "".join(parts)
