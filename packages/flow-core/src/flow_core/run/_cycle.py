"""One ``flow run``: the planner, then coder → checks → reviewer → gate cycles.

1. **planner**: fresh context (bundled prompt + task), read-only tools; ends with a plan text.
   A model that cannot receive tool definitions gets none and the project map instead
   (``tools/_map.py``).
2. Without trust the run stops here: nothing is written, no check runs, status
   ``"read_only"``, error ``not_trusted``.
3. For each cycle up to ``agent.max_cycles``:

   a. **coder**: fresh context (task, plan, the previous cycle's failures and findings), write
      tools and ``run_check``;
   (before the planner, in a trusted run: the baseline check run and the whole tree's base
   fingerprint; ``run/_baseline.py``, ``run/_evidence.py``; a required static check that
   already fails stops the run here, status ``"error"``)

   b. fingerprints of every edited file and the editor's freshness snapshot are taken;
   c. the host runs **every** configured check in config order and, with an editor attached,
      Rose's native linter over the changed source files;
   d. **reviewer**: fresh context, read-only tools, a reply validated by ``ReviewReply``; it
      runs only when the coder completed and every required check passed;
   e. fingerprints and freshness again, and the whole tree compared with its base (every
      change Flow's tools did not make is a gate reason); the gate (``flow_core.verify``)
      judges the conditions;
   f. verified → stop; otherwise failures and findings feed the next cycle.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flow_core._errors import BackendError, EditorError
from flow_core._protocols import ChatBackend, EditorBridge, EditorLintResult, Event, Role, ToolCall
from flow_core._report import CheckResult, CycleRecord, Review, Verification
from flow_core.prompts import load_prompt
from flow_core.run._fail_to_pass import judge_changed_tests
from flow_core.run._fence import fence
from flow_core.run._guided import guided_format, probe_format, probe_messages, probe_passed
from flow_core.run._lint_scope import excluded_by_config, is_ruff
from flow_core.run._loop import RoleSpec, guarded, run_role
from flow_core.run._prompts import (
    ReviewEvidence,
    coder_prompt,
    feedback_text,
    planner_prompt,
    reviewer_prompt,
)
from flow_core.run._reporting import blocked_verification
from flow_core.run._review import REVIEW_SCHEMA, validate_review
from flow_core.run._state import Interrupted, RoleOutcome, RunEnded, RunState
from flow_core.tools._map import MAP_CHARS, check_views, file_views, project_map, task_files
from flow_core.verify import (
    DOC_KEY,
    STATIC_KINDS,
    TOOL_CONFIG_KEY,
    GateFacts,
    evaluate_gate,
    language_key,
)
from flow_core.verify._results import is_weak
from flow_core.verify._suppress import added_suppressions

if TYPE_CHECKING:
    from flow_core._report import ReportStatus
    from flow_core.config import FlowConfig
    from flow_core.run._run import Run
    from flow_core.tools import ToolBox

__all__ = ["RunDriver"]


class RunDriver:
    """Drives one ``Run`` through the workflow of the module docstring on ``backend``.

    It reads the run's config, state, changes and editor, and acts through the run's
    ``toolbox``, ``run_check``, ``baseline`` and ``watch`` (``run/_run.py``).
    """

    def __init__(self, run: Run, backend: ChatBackend) -> None:
        self.run = run
        self.backend = backend
        self.config: FlowConfig = run.config
        self.trusted = run.trusted
        self.state: RunState = run.state
        self.changes = run.changes
        self.editor: EditorBridge | None = run.editor
        #: Whether each model's server passed the guided probe (``guided = "auto"``).
        self._probed: dict[str, bool] = {}

    def drive(self, task: str) -> ReportStatus:
        """Plan, then cycle until verified or out of cycles; returns the report status."""
        state = self.state
        if self.trusted:
            # The baseline, before any model request: the evidence later checks are judged by
            # (test results, the tree's base fingerprint), and whether a run can verify at all.
            stops = self.run.baseline()
            if stops:
                state.errors.extend(stops)
                reasons = ["a required check already fails before any change (baseline_failing)"]
                state.verification = blocked_verification(reasons, within_budgets=True)
                return "error"
        planner = self._role(
            "planner", planner_prompt(task, self.config.checks), cycle=None, map_for=task
        )
        if not planner.completed:
            state.verification = blocked_verification(
                [f"planner did not complete: {planner.failure}"], within_budgets=False
            )
            return "failed"
        state.plan = planner.text
        state.journal.plan(planner.text)
        if not self.trusted:
            reason = "read-only run (no --trusted): planned only; nothing written, no check run"
            state.error("not_trusted", reason)
            state.verification = blocked_verification([reason], within_budgets=True)
            return "read_only"
        feedback = ""
        for cycle in range(1, self.config.agent.max_cycles + 1):
            state.cycles = cycle
            verification = self._cycle(task, cycle, feedback)
            if verification.verified:
                return "verified"
            if state.ledger.exhausted or state.stop or state.out_of_time:
                break
            review = state.history[-1].review if state.history else None
            feedback = feedback_text(cycle, verification, state.final_checks, review)
        state.check_stop()
        return "unverified"

    def _role(
        self,
        role: Role,
        user: str,
        *,
        cycle: int | None,
        response_format: Mapping[str, Any] | None = None,
        map_for: str | None = None,
    ) -> RoleOutcome:
        """Run ``role`` on ``user`` (``_invoke``), and say in the report how it stopped
        (``roles.ROLE.stopped``: ``answer``, or the code that ended it)."""
        stopped: str | None = None
        try:
            outcome = self._invoke(role, user, cycle, response_format, map_for)
            stopped = "answer" if outcome.completed else outcome.failure
            return outcome
        except BackendError as err:
            stopped = err.code
            raise
        except Interrupted:
            stopped = "interrupted"
            raise
        finally:
            usage = self.state.roles.get(role)
            if usage is not None and stopped is not None:
                usage.stopped = stopped

    def _invoke(
        self,
        role: Role,
        user: str,
        cycle: int | None,
        response_format: Mapping[str, Any] | None,
        map_for: str | None,
    ) -> RoleOutcome:
        """One invocation of ``role``. A read-only role whose model cannot receive tool
        definitions gets none, its prompt without tools and, with ``map_for`` (the task), the
        project map (``docs/architecture.md``, "A role without tools"); a guided role with
        ``map_for`` gets the numbered lines of the task's files instead (``file_views``;
        "Guided tool calls")."""
        toolbox = self.run.toolbox(role, cycle)
        model = self.config.model_for(role)
        options = self.config.options_for(role)
        try:
            tools = role == "coder" or guarded(
                self.state,
                functools.partial(self.backend.tool_definitions_reach, model),
                name=f"flow-{role}-tools",
            )
            guided = (
                self._guided(model, options, toolbox, map_for or "")
                if tools and response_format is None
                else None
            )
            budget = min(MAP_CHARS, self.config.agent.max_context_chars // 4)
            if not tools and map_for is not None:
                found = project_map(toolbox.workspace, map_for, budget=budget)
                user += "\n\n" + fence("project map", found)
            shown: tuple[ToolCall, ...] = ()
            if guided is not None and map_for is not None and tools:
                user, shown = self._first_views(toolbox, user, map_for, budget)
            spec = RoleSpec(
                role=role,
                model=model,
                system=load_prompt(role, tools=tools, guided=guided is not None),
                user=user,
                toolbox=toolbox,
                cycle=cycle,
                response_format=response_format,
                options=options,
                tools=tools,
                guided=guided,
                shown=shown,
            )
            return run_role(self.state, self.backend, self.config.agent, spec)
        except RunEnded as ended:
            return RoleOutcome(False, failure=ended.code)

    def _first_views(
        self, toolbox: ToolBox, user: str, task: str, budget: int
    ) -> tuple[str, tuple[ToolCall, ...]]:
        """A guided role's first message and the calls it already answers: the numbered
        lines of the task's files (``file_views``; a file shown whole counts as read) and,
        before any change, the baseline's check results as ``run_check`` shows them
        (``check_views``; each counts as run until the first write), each within ``budget``
        characters (``docs/architecture.md``, "Guided tool calls")."""
        views = file_views(toolbox.workspace, task, budget=budget)
        if views:
            user += "\n\nThe files the task concerns, as read_file shows them:\n"
            user += "\n\n".join(v.text for v in views)
        shown = [
            ToolCall(f"shown-{i}", "read_file", {"path": v.path})
            for i, v in enumerate(views)
            if v.whole
        ]
        names = toolbox.check_names if "run_check" in toolbox.names else ()
        if not self.run.changes.pre:  # the workspace is still the baseline's tree
            results = self.run.evidence.guard.results
            checks = check_views({n: results[n] for n in names if n in results}, budget=budget)
            if checks:
                user += "\n\nThe checks as the host ran them before any change (run_check "
                user += "shows the same until a file changes):\n"
                user += "\n\n".join(text for _, text in checks)
            shown += [ToolCall(f"shown-{n}", "run_check", {"name": n}) for n, _ in checks]
        return user, tuple(shown)

    def _guided(
        self, model: str, options: Mapping[str, Any], toolbox: ToolBox, task: str
    ) -> Callable[..., dict[str, Any]] | None:
        """What builds the guided reply schema of each request of a role with tools, or None
        (``run/_guided.py``): the
        ``guided`` option ``on``, or ``auto`` and the server passed the probe (once per run
        and model).

        Raises:
            RunEnded, Interrupted: the run's time ran out, or it was asked to stop, meanwhile.
        """
        mode = options.get("guided", "off")
        if mode == "off" or not toolbox.schemas:
            return None
        if mode == "auto" and model not in self._probed:
            # With the role's tools, as its requests go: a server whose own function-call
            # grammar wins over the reply schema when tools are sent fails the probe.
            probe = functools.partial(
                self.backend.chat,
                model,
                probe_messages(),
                tools=toolbox.schemas,
                format=probe_format(),
                options={**options, "max_reply_tokens": 32},
            )
            try:
                passed = probe_passed(guarded(self.state, probe, name="flow-guided-probe"))
            except BackendError:
                passed = False
            self._probed[model] = passed
        if mode == "auto" and not self._probed[model]:
            return None
        first = task_files(toolbox.workspace, task) if task else []
        return functools.partial(
            guided_format,
            toolbox.schemas,
            toolbox.workspace,
            task=task,
            first=first,
            fixed=self._fixed(),
        )

    def _fixed(self) -> Callable[[str], bool] | None:
        """The paths a guided role is not offered to change (``guided_format``'s ``fixed``):
        without ``agent.allow_test_edits``, the test harness of a pytest check (its test
        files, ``conftest.py``, pytest's configuration files: ``verify/_harness.py``), which
        the evidence run puts back to its baseline bytes, so a change there decides nothing
        (``docs/architecture.md``, "The evidence run"). None: every file may change."""
        from flow_core.verify._harness import baseline_test_files, is_harness_name
        from flow_core.verify._results import pytest_position

        pytest_checks = [
            n for n, c in self.config.checks.items() if pytest_position(c.cmd) is not None
        ]
        if self.config.agent.allow_test_edits or not pytest_checks:
            return None
        evidence = self.run.evidence
        files = set(evidence.plan.files) if evidence.plan is not None else set()
        tests = {
            path
            for name in pytest_checks
            for path in baseline_test_files(evidence.baseline.get(name), files)
        }
        return lambda path: path in tests or is_harness_name(path)

    def _cycle(self, task: str, cycle: int, feedback: str) -> Verification:
        """One coder → checks → reviewer → gate cycle (steps a-f of the module docstring)."""
        state, config = self.state, self.config
        budget_reasons: list[str] = []
        coder = self._role(
            "coder",
            coder_prompt(task, state.plan, config.checks, feedback),
            cycle=cycle,
            map_for=task,
        )
        if not coder.completed:
            budget_reasons.append(f"coder did not complete: {coder.failure}")

        # Verification starts here: what the checks and the reviewer judge must still be on
        # disk (and in the editor) at the end of review (docs/architecture.md, "What verified
        # means").
        hashes_checked = self.changes.hashes()
        fresh_checked = self._freshness(cycle)
        checks = [self.run.run_check(name, cycle, evidence=True) for name in config.checks]
        state.check_stop()
        judge_changed_tests(self.run)  # with [agent] allow_test_edits only
        state.final_checks = checks
        changed = self.changes.changed_files()
        native = self._native_lint(changed, cycle)

        review, review_reason = self._review_if_due(task, cycle, coder, checks)
        if state.ledger.exhausted and not any("budget_tool_calls" in r for r in budget_reasons):
            budget_reasons.append("tool-call budget spent (budget_tool_calls)")
        if state.out_of_time and not any("budget_time" in r for r in budget_reasons):
            budget_reasons.append("the run's wall-clock limit ran out (budget_time)")
        hashes_reviewed = self.changes.hashes()
        # The whole tree: anything Flow's tools did not write, since the coder started.
        outside = self.run.watch(hashes_checked)
        fresh_reviewed = self._freshness(cycle)
        snapshot_equal = (
            fresh_checked is not None
            and fresh_reviewed is not None
            and fresh_checked[0] == fresh_reviewed[0]
        ) or self.editor is None
        dirty = list(fresh_reviewed[1]) if fresh_reviewed is not None else []
        if self.editor is not None and fresh_reviewed is None:
            dirty = ["<editor freshness unavailable>"]

        verification = evaluate_gate(
            GateFacts(
                within_budgets=not budget_reasons,
                budget_reasons=budget_reasons,
                required_checks=[n for n, c in config.checks.items() if c.required],
                checks=checks,
                check_filetypes={n: c.filetypes for n, c in config.checks.items()},
                changed_files=changed,
                native_lint=native,
                review=review,
                review_reason=review_reason,
                hashes_before_checks=hashes_checked,
                hashes_after_review=hashes_reviewed,
                freshness_equal=snapshot_equal,
                dirty_buffers=dirty,
                outside_changes=outside,
                suppressed=self._suppressions(changed),
                not_examined=self._not_examined(changed),
            )
        )
        state.verification = verification
        state.history.append(
            CycleRecord(cycle=cycle, checks=checks, verification=verification, review=review)
        )
        reasons = tuple(verification.reasons)
        state.emit(Event("verification", cycle=cycle, ok=verification.verified, reasons=reasons))
        return verification

    def _suppressions(self, changed: Sequence[str]) -> list[str]:
        """Suppression comments the model added to ``changed`` files, kept for the report
        (``RunState.suppressions``); returns the files with a file-level one, which no lint
        check covers (``verify/_suppress.py``; docs/architecture.md, "What verified means")."""
        added = [
            s
            for p in changed
            for s in added_suppressions(p, self.changes.pre.get(p), self.changes.read_disk(p))
        ]
        self.state.suppressions = [str(s) for s in added]
        return sorted({s.path for s in added if s.file_level})

    def _not_examined(self, changed: Sequence[str]) -> dict[str, list[str]]:
        """Per ruff lint check, the ``changed`` files its own configuration excludes, which it
        does not cover (``run/_lint_scope.py``)."""
        out: dict[str, list[str]] = {}
        for name, check in self.config.checks.items():
            if check.kind in STATIC_KINDS and is_ruff(check.cmd):
                paths = excluded_by_config(check.cmd, changed, self.changes.read_disk)
                if paths:
                    out[name] = paths
        return out

    def _review_if_due(
        self, task: str, cycle: int, coder: RoleOutcome, checks: Sequence[CheckResult]
    ) -> tuple[Review | None, str]:
        """The reviewer's verdict, or why it did not run (step d of the module docstring)."""
        state = self.state
        required_ok = all(r.status == "passed" for r in checks if r.required) and any(
            r.required for r in checks
        )
        if not coder.completed:
            return None, "review skipped: the coder did not complete"
        if not required_ok:
            return None, "review skipped: required checks did not pass"
        if state.ledger.exhausted:
            return None, "review skipped: tool-call budget spent"
        if state.out_of_time:
            return None, "review skipped: the run's time (agent.max_seconds) ran out"
        return self._review(task, cycle, checks)

    def _native_lint(self, changed: Sequence[str], cycle: int) -> list[EditorLintResult]:
        """Rose's native linter over the changed source files (not docs or tool config)."""
        sources = [p for p in changed if language_key(p) not in (DOC_KEY, TOOL_CONFIG_KEY)]
        if self.editor is None or not sources:
            return []
        try:
            return [self.editor.lint(sources)]
        except EditorError as err:
            self.state.error(err.code, f"editor lint failed: {err.message}", cycle=cycle)
            return []

    def _freshness(self, cycle: int) -> tuple[str, tuple[str, ...]] | None:
        """The editor's (snapshot, dirty buffers); ``("", ())`` without an editor."""
        if self.editor is None:
            return ("", ())
        try:
            fresh = self.editor.freshness()
        except EditorError as err:
            self.state.error(err.code, f"editor freshness unavailable: {err.message}", cycle=cycle)
            return None
        return fresh.snapshot, tuple(fresh.dirty_buffers)

    def _review(
        self, task: str, cycle: int, checks: Sequence[CheckResult]
    ) -> tuple[Review | None, str]:
        state, evidence = self.state, self.run.evidence
        user = reviewer_prompt(
            task,
            state.plan,
            checks,
            self.changes.diff(),
            limit=self.config.agent.max_context_chars,
            evidence=ReviewEvidence(
                tests_changed=sorted(evidence.tests_changed),
                weak=[n for n, c in self.config.checks.items() if is_weak(c)],
                fail_to_pass=(evidence.fail_to_pass, evidence.fail_to_pass_rejected)
                if self.config.agent.allow_test_edits
                else None,
            ),
        )
        outcome = self._role("reviewer", user, cycle=cycle, response_format=REVIEW_SCHEMA)
        if not outcome.completed:
            if outcome.failure == "budget_tool_calls":
                return None, "review ended: tool-call budget spent"
            return None, f"reviewer did not finish ({outcome.failure})"
        review = validate_review(outcome.text)
        if review is None:
            message = "the reviewer's reply is not a JSON object matching the review schema"
            state.error("review_invalid", message, role="reviewer", cycle=cycle)
            state.emit(Event("review", role="reviewer", cycle=cycle, ok=False))
            return None, f"invalid reviewer output (review_invalid): {message}"
        state.emit(
            Event(
                "review", role="reviewer", cycle=cycle, ok=review.approved, summary=review.summary
            )
        )
        return review, "approved" if review.approved else "rejected"
