"""Report assembly: the ``Report`` of a status, a check run or a run, from its ``RunState``."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from flow_core.__about__ import __version__
from flow_core._report import (
    Budget,
    Budgets,
    CheckSpec,
    GateConditions,
    Report,
    ReportStatus,
    SandboxStatus,
    Timings,
    Verification,
)
from flow_core._roles import ROLES
from flow_core.verify._results import effective_results, is_weak

if TYPE_CHECKING:
    from flow_core.config import AgentConfig, FlowConfig
    from flow_core.run._changes import ChangeTracker
    from flow_core.run._evidence import RunEvidence
    from flow_core.run._state import RunState

__all__ = [
    "blocked_verification",
    "build_report",
    "check_specs",
    "status_report",
    "weak_checks",
]


def check_specs(config: FlowConfig) -> list[CheckSpec]:
    """The configured checks as the report lists them (config order)."""
    return [
        CheckSpec(
            name=n,
            kind=c.kind,
            required=c.required,
            filetypes=list(c.filetypes),
            argv=list(c.cmd),
            timeout_ms=c.timeout,
            executable=c.executable,
            evidence="test_results" if effective_results(c) else "exit_status",
        )
        for n, c in config.checks.items()
    ]


def weak_checks(config: FlowConfig) -> list[str]:
    """Names of the test checks whose pass rests on the exit status alone
    (``verify/_results.py``, ``is_weak``)."""
    return [n for n, c in config.checks.items() if is_weak(c)]


def blocked_verification(reasons: list[str], *, within_budgets: bool) -> Verification:
    """A verdict for a run that never reached the gate: every other condition false."""
    return Verification(
        verified=False,
        conditions=GateConditions(
            within_budgets=within_budgets,
            required_checks_passed=False,
            static_coverage=False,
            review_approved=False,
            unchanged=False,
        ),
        reasons=reasons,
    )


def status_report(
    config: FlowConfig, *, trusted: bool, sources: Sequence[str], remembered: bool = False
) -> Report:
    """``Runtime.status()``: the configuration only, never a run in progress (``remembered``:
    see ``flow_core.config_status``)."""
    return Report(
        kind="status",
        ok=True,
        status="ok",
        flow_version=__version__,
        workspace=str(config.workspace_dir),
        trusted=trusted,
        config_sources=list(sources),
        models={role: config.model_for(role) for role in ROLES},
        configured_checks=check_specs(config),
        weak_evidence=weak_checks(config),
        sandbox=_sandbox(config, remembered=remembered),
    )


def _sandbox(config: FlowConfig, *, remembered: bool = False) -> SandboxStatus:
    """How checks are jailed here (imported on use: cold start stays small); only the
    ``flow status`` command takes a remembered probe (``verify/_probe_cache.py``)."""
    from flow_core.verify._probe import sandbox_status

    return sandbox_status(config.sandbox, remembered=remembered)


class ReportParts(Protocol):
    """What a report is made of: the run's config and flags, state, changes and evidence
    (``run/_run.Run`` has them all)."""

    @property
    def config(self) -> FlowConfig: ...
    @property
    def trusted(self) -> bool: ...
    @property
    def sources(self) -> Sequence[str]: ...
    @property
    def state(self) -> RunState: ...
    @property
    def changes(self) -> ChangeTracker: ...
    @property
    def evidence(self) -> RunEvidence | None: ...


def build_report(kind: str, status: ReportStatus, *, ok: bool, run: ReportParts) -> Report:
    """The report of a check run (``kind="check"``) or a run (``kind="run"``).

    For a run, ``ok`` is ``verified``: status ``"verified"`` and a verified verdict.
    """
    config, trusted, sources = run.config, run.trusted, run.sources
    state, changes, evidence = run.state, run.changes, run.evidence
    total = (time.perf_counter() - state.t0) * 1000.0
    is_run = kind == "run"
    verified = bool(
        is_run
        and status == "verified"
        and state.verification is not None
        and state.verification.verified
    )
    diff = changes.diff() if is_run and changes.pre else ""
    if is_run and evidence is not None and evidence.outside:
        diff += evidence.diff(changes.read_disk)
    return Report(
        kind=kind,  # type: ignore[arg-type]
        ok=verified if is_run else ok,
        verified=verified,
        status=status,
        flow_version=__version__,
        workspace=str(config.workspace_dir),
        trusted=trusted,
        task=state.task if is_run else None,
        config_sources=list(sources),
        models={role: config.model_for(role) for role in ROLES},
        configured_checks=check_specs(config),
        weak_evidence=weak_checks(config),
        checks=list(state.final_checks),
        verification=state.verification if is_run else None,
        verification_history=list(state.history),
        plan=state.plan,
        changed_files=changes.changed_files() if is_run and changes.pre else [],
        diff=diff,
        baseline=list(evidence.baseline_records) if evidence is not None and is_run else [],
        warnings=evidence.guard.warnings() if evidence is not None and is_run else [],
        fixed_tests=[f"{r.name}: {t}" for r in state.final_checks for t in r.fixed_tests],
        suppressions_added=list(state.suppressions) if is_run else [],
        tests_changed=sorted(evidence.tests_changed) if evidence is not None else [],
        fail_to_pass=list(evidence.fail_to_pass) if evidence is not None and is_run else [],
        fail_to_pass_rejected=list(evidence.fail_to_pass_rejected)
        if evidence is not None and is_run
        else [],
        outside_changes=evidence.outside_changes() if evidence is not None and is_run else [],
        tree=evidence.tree if evidence is not None and is_run else None,
        roles=dict(state.roles),
        tool_calls=list(state.ledger.records),
        budgets=_budgets(state, config.agent) if is_run else None,
        errors=list(state.errors),
        sandbox=_sandbox(config),
        timings=_timings(state, total),
    )


def _budgets(state: RunState, agent: AgentConfig) -> Budgets:
    """Each budget's use against the limit enforced (the context limit the largest request
    was sent under, when one was derived from the window)."""
    context_limit = agent.max_context_chars if state.context_limit is None else state.context_limit
    return Budgets(
        iterations=Budget(used=state.max_turns, limit=agent.max_iterations),
        cycles=Budget(used=state.cycles, limit=agent.max_cycles),
        tool_calls=Budget(used=state.ledger.used, limit=agent.max_tool_calls),
        context_chars=Budget(used=state.max_context, limit=context_limit),
    )


def _timings(state: RunState, total: float) -> Timings:
    """Where the run's ``total`` milliseconds went: the model, the checks, Flow itself."""
    return Timings(
        total_ms=total,
        model_ms=state.model_ms,
        checks_ms=state.checks_ms,
        flow_ms=max(0.0, total - state.model_ms - state.checks_ms),
    )
