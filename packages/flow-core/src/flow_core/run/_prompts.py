"""The texts the runtime writes into the roles' user messages.

The system prompts are the bundled prompt files (``flow_core.prompts``); these are the per-run
parts: the task, the plan, the configured checks, the previous cycle's failures and the diff
the reviewer judges. Sizes are in characters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flow_core.run._fence import DATA_NOTICE, fence

if TYPE_CHECKING:
    from flow_core._report import CheckResult, Review, Verification
    from flow_core.config import CheckConfig

__all__ = [
    "FEEDBACK_TAIL_CHARS",
    "ReviewEvidence",
    "checks_text",
    "coder_prompt",
    "feedback_text",
    "planner_prompt",
    "retry_text",
    "reviewer_prompt",
]

#: Characters of a failed check's output tail fed back to the next coder cycle.
FEEDBACK_TAIL_CHARS = 2_000


def checks_text(checks: Mapping[str, CheckConfig]) -> str:
    """The configured checks, one line each, as the planner and the coder see them."""
    if not checks:
        return "No named checks are configured."
    lines = ["Configured checks (the host runs all of them after the coder):"]
    for name, c in checks.items():
        req = "required" if c.required else "optional"
        types = ", ".join(c.filetypes) or "-"
        lines.append(f"- {name}: kind={c.kind}, {req}, filetypes={types}")
    return "\n".join(lines)


def planner_prompt(task: str, checks: Mapping[str, CheckConfig]) -> str:
    """The planner's user message (its read tools' output comes fenced, ``_fence.py``)."""
    return f"{DATA_NOTICE}\n\nTask:\n{task}\n\n{checks_text(checks)}"


def coder_prompt(
    task: str, plan: str | None, checks: Mapping[str, CheckConfig], feedback: str
) -> str:
    """The coder's user message; ``feedback`` is the previous cycle's (empty in cycle 1)."""
    text = f"Task:\n{task}\n\nPlan:\n{plan}\n\n{checks_text(checks)}"
    if feedback:
        text += "\n\n" + feedback
    return text


@dataclass(frozen=True)
class ReviewEvidence:
    """What the host found beyond the checks, for the reviewer (``docs/architecture.md``,
    "The evidence run").

    Attributes:
        tests_changed: test and harness files the model changed or added (workspace paths).
        weak: test checks whose pass rests on the exit status alone (check names).
        fail_to_pass: with the operator's consent to test edits, ``(counted, rejected)``: the
            changed or new tests that failed without the change and pass with it, and those
            that did not count with why (``run/_fail_to_pass.py``); None without consent.
    """

    tests_changed: Sequence[str] = ()
    weak: Sequence[str] = ()
    fail_to_pass: tuple[Sequence[str], Sequence[str]] | None = None


def reviewer_prompt(
    task: str,
    plan: str | None,
    checks: Sequence[CheckResult],
    diff: str,
    *,
    limit: int,
    evidence: ReviewEvidence = ReviewEvidence(),
) -> str:
    """The reviewer's user message; the diff is cut to a third of ``limit`` characters.

    Besides the task, the plan, the checks' statuses and the diff it carries the evidence the
    host gathered (``ReviewEvidence``): the baseline tests that now pass, the test and harness
    files the model changed or added (which decided nothing), the test checks whose pass rests
    on the exit status alone and, with the operator's consent to test edits, which changed or
    new tests fail without the change and pass with it. Test ids and paths are workspace text,
    so that block is fenced like the diff (``run/_fence.py``).
    """
    cap = max(1_000, limit // 3)
    if len(diff) > cap:
        diff = diff[:cap] + "\n[diff cut to fit the context budget]"
    summary = "\n".join(
        f"- {r.name} ({r.kind}, {'required' if r.required else 'optional'}): {r.status}"
        for r in checks
    )
    host = _evidence_block(checks, evidence)
    # The plan was written from workspace files and the diff is workspace text: both are
    # fenced as data with ids the coder never saw (_fence.py).
    return (
        f"{DATA_NOTICE}\n\nTask:\n{task}\n\nPlan:\n{fence('plan', plan or '')}\n\n"
        f"Checks run by the host:\n{summary}\n\n"
        f"Evidence gathered by the host:\n{host}\n\n"
        f"Diff:\n{fence('diff', diff) if diff else '(no changes)'}\n\n"
        "Reply with the JSON review object only."
    )


def _evidence_block(checks: Sequence[CheckResult], evidence: ReviewEvidence) -> str:
    tests_changed, weak, fail_to_pass = evidence.tests_changed, evidence.weak, evidence.fail_to_pass
    fixed = [f"{r.name}: {t}" for r in checks for t in r.fixed_tests]
    lines = [
        "Baseline tests that failed before and pass now: "
        + (", ".join(fixed) if fixed else "none"),
        "Test or test-harness files the coder changed or added (the host ran the baseline's "
        "versions instead; they prove nothing): "
        + (", ".join(tests_changed) if tests_changed else "none"),
    ]
    if fail_to_pass is not None:
        counted, rejected = fail_to_pass
        lines += [
            "Changed or new tests that fail without the change and pass with it (run with "
            "the operator's consent to test edits): " + (", ".join(counted) or "none"),
            "Changed or new tests that do not count: " + ("; ".join(rejected) or "none"),
        ]
    if weak:
        lines.append(
            "WEAK EVIDENCE: the pass of these test checks rests on their exit status alone: "
            + ", ".join(weak)
        )
    return fence("evidence", "\n".join(lines))


def feedback_text(
    cycle: int,
    verification: Verification,
    checks: Sequence[CheckResult],
    review: Review | None,
) -> str:
    """What the next coder cycle is told: failed checks, the rejection, the gate's reasons."""
    lines = [
        f"Cycle {cycle} was not verified. Fix the following and finish again.",
        DATA_NOTICE,
    ]
    for r in checks:
        if r.status != "passed":
            lines.append(f"Check {r.name} {r.status} (exit code {r.exit_code}):")
            if r.error is not None:
                lines.append(r.error.message)
            if r.output_tail:
                lines.append(
                    fence(f"output of check {r.name}", r.output_tail[-FEEDBACK_TAIL_CHARS:])
                )
    if review is not None and not review.approved:
        lines.append(f"Reviewer: {review.summary}")
        lines.extend(f"- {f}" for f in review.findings)
    lines.append("Gate reasons:")
    lines.extend(f"- {r}" for r in verification.reasons)
    return "\n".join(lines)


def retry_text(problems: str) -> str:
    """Sent after a reply the host could not use (parse issues or no text)."""
    return (
        f"Your last reply could not be used ({problems}). Use a structured "
        "tool call, or finish with a plain-text reply and no tool call."
    )
