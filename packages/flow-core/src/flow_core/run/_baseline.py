"""The baseline check run, before any model request: is there anything to fix, and can it
ever be verified? (``docs/architecture.md``, "Evidence").

A trusted run runs its baseline checks once on the untouched tree before the planner's first
request: every check with structured results (their results are the evidence later runs are
judged by) and every required test, lint, type or diagnostics check. Then:

* a required lint/typecheck/diagnostics check that already fails means no run can end
  verified, however good the change: the run stops with ``baseline_failing`` (the finding
  count and the fix in the message) before the model spends any time, unless the operator
  allows it (``agent.allow_failing_baseline``, ``flow run --allow-failing-baseline``). Then
  that check is judged by *new* findings only: it passes when every finding line it prints
  (line and column numbers left out) was printed at baseline too, and its output was not
  cut to the kept tail. A failing check whose output is cut already at baseline (a real
  project's ruff prints about 600 bytes a finding), or holds no ``path:line:`` finding
  lines, could never pass that way, so it stops the run with ``baseline_failing`` even
  then, saying to print one line a finding;
* a required test check that already passes means the tests do not show the problem: a
  ``baseline_passing`` warning (the run goes on; the report's ``warnings``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from flow_core._catalogue import codes_of
from flow_core._report import CheckResult, ErrorInfo
from flow_core.verify._results import effective_results

if TYPE_CHECKING:
    from flow_core.config import FlowConfig

__all__ = [
    "BASELINE_CODES",
    "BaselineGuard",
    "baseline_check_names",
    "finding_count",
    "unjudgeable",
]

#: The baseline's codes, each with its meaning (a view of the catalogue's rows).
BASELINE_CODES: dict[str, str] = codes_of("baseline")

_STATIC = frozenset({"lint", "typecheck", "diagnostics"})
#: ``path:line:col: message`` / ``path:line: message``, the shape most linters print.
_FINDING = re.compile(r"^(?P<path>[^\s:][^:\n]*):(?P<line>\d+)(?::\d+)?:?\s*(?P<rest>.*)$")
_SUMMARY = re.compile(r"\bFound (\d+) (?:errors?|problems?|issues?)\b|\b(\d+) errors? found\b")
#: An output tail this long may have lost its beginning (``verify/_checks.OUTPUT_TAIL_BYTES``).
_CUT_CHARS = 15 * 1024


def baseline_check_names(config: FlowConfig) -> list[str]:
    """The checks the baseline runs, in config order (see the module docstring)."""
    return [
        name
        for name, c in config.checks.items()
        if effective_results(c) is not None
        or (c.required and (c.kind in _STATIC or c.kind == "test"))
    ]


def finding_count(output: str) -> int | None:
    """How many findings a check printed: its own summary (``Found 107 errors``), else the
    ``path:line:`` lines in ``output``; None when neither is there."""
    for m in _SUMMARY.finditer(output):
        return int(m.group(1) or m.group(2))
    lines = sum(1 for line in output.splitlines() if _FINDING.match(line))
    return lines or None


def _findings(output: str) -> Counter[str]:
    keys: Counter[str] = Counter()
    for line in output.splitlines():
        m = _FINDING.match(line)
        if m:
            keys[f"{m.group('path')}: {m.group('rest').strip()}"] += 1
    return keys


def unjudgeable(output: str) -> str | None:
    """Why new findings in a failing check's ``output`` cannot be told from old ones (the
    rest of a fix's sentence), or None when they can: judging needs the whole output and
    ``path:line:`` finding lines in it.

    Args:
        output: the check's kept output tail (``CheckResult.output_tail``).
    """
    if len(output) >= _CUT_CHARS:
        return (
            "its output is longer than the 16 KiB Flow keeps of a check, so have it print "
            "one line a finding (ruff check --output-format=concise, flake8, mypy)"
        )
    if not _findings(output):
        return "have it print one 'path:line: message' line a finding"
    return None


@dataclass
class BaselineGuard:
    """The baseline's results and what they mean for one run.

    Args:
        allow_failing: judge failing static checks by new findings instead of stopping.
    """

    allow_failing: bool = False
    results: dict[str, CheckResult] = field(default_factory=dict)

    def add(self, result: CheckResult) -> None:
        """Record one baseline check's result."""
        self.results[result.name] = result

    def stops(self) -> list[ErrorInfo]:
        """``baseline_failing`` for each failing required static check that no run could
        get past: every one, unless failing ones are allowed; then those whose findings
        cannot be compared (``unjudgeable``)."""
        out: list[ErrorInfo] = []
        for r in self.results.values():
            if not (r.required and r.kind in _STATIC and r.status == "failed"):
                continue
            count = finding_count(r.output_tail)
            many = f"{count} finding(s)" if count is not None else f"exit {r.exit_code}"
            head = f"required {r.kind} check {r.name!r} already fails on the untouched tree"
            blind = unjudgeable(r.output_tail)
            if not self.allow_failing:
                also = f"; {blind} for that to work" if blind else ""
                fix = (
                    f"scope checks.{r.name}.cmd to the files the task is about, or run with "
                    "--allow-failing-baseline (agent.allow_failing_baseline) to judge only "
                    f"new findings{also}"
                )
            elif blind:
                fix = f"scope checks.{r.name}.cmd to the files the task is about; {blind}"
                head += " and --allow-failing-baseline cannot tell new findings from old"
            else:
                continue
            message = f"{head} ({many}), so no run could be verified; fix: {fix}"
            out.append(ErrorInfo(code="baseline_failing", message=message))
        return out

    def warnings(self) -> list[ErrorInfo]:
        """``baseline_passing`` for each required test check that passes already."""
        return [
            ErrorInfo(
                code="baseline_passing",
                message=f"required test check {r.name!r} already passes on the untouched "
                "tree: it does not show the problem, so a pass after the change proves "
                f"little; fix: add a test that fails now, or scope checks.{r.name}.cmd to it",
            )
            for r in self.results.values()
            if r.required and r.kind == "test" and r.status == "passed"
        ]

    def judge(self, result: CheckResult) -> CheckResult:
        """``result`` judged by new findings when its baseline failed and that is allowed.

        A failing static check passes when every finding it prints now was printed at
        baseline (line and column numbers left out) and neither output was cut; otherwise it
        stays failed and its message says which findings are new.
        """
        before = self.results.get(result.name)
        if (
            not self.allow_failing
            or before is None
            or before.status != "failed"
            or result.kind not in _STATIC
            or result.status != "failed"
        ):
            return result
        cut = max(len(before.output_tail), len(result.output_tail)) >= _CUT_CHARS
        new = _findings(result.output_tail) - _findings(before.output_tail)
        if not cut and not new and _findings(result.output_tail):
            return result.model_copy(update={"status": "passed", "error": None})
        shown = "; ".join(list(new)[:5]) if new else "its output was cut or unreadable"
        why = f"new findings beyond the baseline's: {shown}"
        return result.model_copy(
            update={"error": ErrorInfo(code="check_failed", message=why)},
        )
