"""The report: one pydantic model, serialised as one JSON object, for status, check and run.

``Report.model_json_schema()`` is shipped as ``flow_core/report.schema.json`` and used as the
MCP tools' ``outputSchema``. A test keeps the file equal to the model.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import PydanticSerializationError

from flow_core._unicode import valid_text

CheckKind = Literal["test", "lint", "typecheck", "diagnostics", "build", "check"]
CheckStatus = Literal[
    "passed", "failed", "timeout", "limit", "missing", "refused", "interrupted", "error"
]
ReportKind = Literal["status", "check", "run"]
SandboxKind = Literal["bwrap", "none"]
ReportStatus = Literal[
    "ok",  # status report
    "passed",  # check: every selected check passed
    "failed",  # check: a check failed; run: the run could not complete
    "verified",  # run: all five gate conditions held
    "unverified",  # run: completed, but the gate did not pass
    "read_only",  # run without --trusted: planned only
    "interrupted",  # Ctrl-C / SIGTERM: process groups were killed
    "error",  # configuration, backend or editor failure before any result
]


def _empty() -> list[Any]:
    """A new empty list: the default of every list field.

    A plain function, not the ``list`` type: pydantic reads a default factory's signature when
    it builds a schema, and the builtin's text signature starts Python's tokenizer (about a
    sixth of a cold ``flow status``). The JSON schema is the same (a factory is not shown).
    """
    return []


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class ErrorInfo(_Model):
    """One error with a stable ``code`` (see ``flow_core.ERROR_CODES``)."""

    code: str
    message: str
    role: str | None = None
    cycle: int | None = None


class CheckSpec(_Model):
    """A configured check as the operator wrote it (argv snapshotted at load)."""

    name: str
    kind: CheckKind
    required: bool
    filetypes: list[str]
    argv: list[str]
    timeout_ms: int
    executable: str | None = Field(
        default=None, description="resolved executable path recorded at load, if found"
    )
    evidence: Literal["test_results", "exit_status"] = Field(
        default="exit_status",
        description="what the check's pass will rest on: its test results (a pytest argv, or "
        "{junit_xml}) or its exit status alone",
    )


class ResultCounts(_Model):
    """Tests by outcome in one check's structured results (JUnit XML)."""

    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0


class CheckResult(_Model):
    """The outcome of running one named check."""

    name: str
    kind: CheckKind
    required: bool
    argv: list[str]
    status: CheckStatus
    exit_code: int | None = None
    duration_ms: float = 0.0
    output_tail: str = Field(default="", description="last bytes of stdout+stderr, capped")
    error: ErrorInfo | None = None
    sandbox: SandboxKind | None = Field(
        default=None,
        description='how the check ran: "bwrap" (jailed) or "none"; null when it never started',
    )
    sandbox_reason: str | None = Field(
        default=None, description='why it ran with sandbox "none", or what the jail lacked'
    )

    results: Literal["junit"] | None = Field(
        default=None, description="the structured results Flow read from the check (JUnit XML)"
    )
    evidence: Literal["test_results", "exit_status"] = Field(
        default="exit_status",
        description="what a pass rests on: the parsed test results compared with the baseline, "
        "or the exit status alone (a check without structured results)",
    )
    tests: ResultCounts | None = Field(default=None, description="tests by outcome, when parsed")
    fixed_tests: list[str] = Field(
        default_factory=_empty,
        description="test ids that failed at baseline and pass now: the evidence of the fix",
    )
    evidence_problems: list[str] = Field(
        default_factory=_empty,
        description="why the results do not prove a pass (missing, unparsable, no test, a "
        "failure, a baseline test removed, renamed or newly skipped)",
    )
    tree: Literal["fresh"] | None = Field(
        default=None,
        description='"fresh": it ran in the evidence run\'s tree (the baseline plus exactly the '
        "changes Flow's tools made, a pytest check's harness as the baseline had it); null: "
        "on the workspace as it was",
    )


class SandboxStatus(_Model):
    """Whether named checks run jailed on this machine (the operator's ``[sandbox]``)."""

    mode: Literal["auto", "bwrap", "off"]
    usable: bool = Field(description="bubblewrap ran a probe command successfully")
    runs_as: SandboxKind = Field(description="what the next check will run under")
    network: bool = Field(description="whether a jailed check may use the network")
    reason: str | None = Field(
        default=None, description="why bubblewrap is unusable, or a warning about the jail"
    )


class BaselineResult(_Model):
    """One check with structured results, run once before the coder started."""

    name: str
    status: CheckStatus
    exit_code: int | None = None
    tests: ResultCounts | None = None
    failing: list[str] = Field(
        default_factory=_empty, description="test ids that failed or errored at baseline"
    )
    problem: str | None = Field(
        default=None, description="why the baseline recorded no test ids (then none are required)"
    )


class OutsideChange(_Model):
    """A workspace change that Flow's file tools did not make (a check, a tool, a person)."""

    path: str
    change: Literal["added", "removed", "modified", "type_changed", "mode_changed"]
    detail: str = ""


class TreeWatch(_Model):
    """The whole-tree fingerprint (generated folders excluded) of the last comparison."""

    files: int = Field(description="files and links recorded")
    hashed_files: int = Field(description="files whose content was read (the rest: stat only)")
    hashed_bytes: int
    complete: bool = Field(description="false when the tree passed a bound; it then vetoes")
    problem: str | None = None


class CoverageEntry(_Model):
    """Static-analysis coverage of one language key among the changed files."""

    key: str = Field(
        description='language name ("python"), extension (".zig"), "docs", "tool-config" '
        '(files that configure the checks\' tools: always vetoed) or "file:NAME" (no extension)'
    )
    files: list[str]
    status: Literal["covered", "uncovered", "not_required", "vetoed"]
    by: list[str] = Field(default_factory=_empty, description="check names or 'rose:editor_lint'")


class GateConditions(_Model):
    """The five conditions of a verified run, each judged by the host, never by the model."""

    within_budgets: bool
    required_checks_passed: bool
    static_coverage: bool
    review_approved: bool
    unchanged: bool


class Verification(_Model):
    """The gate's verdict for one cycle (or the final one)."""

    verified: bool
    conditions: GateConditions
    coverage: list[CoverageEntry] = Field(default_factory=_empty)
    reasons: list[str] = Field(default_factory=_empty, description="why not verified")


class Review(_Model):
    """The reviewer's structured verdict (validated against its JSON schema)."""

    approved: bool
    summary: str = ""
    findings: list[str] = Field(default_factory=_empty)


class CycleRecord(_Model):
    """One coder → verification → reviewer cycle."""

    cycle: int
    checks: list[CheckResult] = Field(default_factory=_empty)
    verification: Verification
    review: Review | None = None


class ContextTrim(_Model):
    """One change Flow made to a role's context to fit its window (``run/_context.py``)."""

    kind: Literal["trim", "cut"] = Field(
        description="trim: older tool results replaced by a marker; cut: the newest tool "
        "result shortened to fit"
    )
    turn: int = Field(description="the model turn (1-based) whose request it changed")
    cycle: int | None = None
    messages: int = Field(default=0, description="tool results replaced (trim) or cut (1)")
    chars_removed: int = Field(default=0, description="characters taken out of the context")
    chars_after: int = Field(default=0, description="the context's size after it, characters")
    tool_call_id: str | None = Field(default=None, description="the call whose result was cut")


class RoleUsage(_Model):
    """One role's use of its model: turns, invocations, tokens and context changes."""

    model: str
    turns: int = 0
    invocations: int = 0
    prompt_tokens: int = Field(
        default=0, description="prompt tokens over all turns, as the server reported them"
    )
    completion_tokens: int = Field(
        default=0, description="generated tokens over all turns, as the server reported them"
    )
    turn_tokens: list[tuple[int | None, int | None]] = Field(
        default_factory=_empty,
        description="[prompt_tokens, completion_tokens] of each model turn in order; null "
        "where the server reported none",
    )
    tool_results: str | None = Field(
        default=None,
        description="how tool results reached the model: native (the tool role) or user "
        "(a delimited user message); null when the role received none",
    )
    context_window: int | None = Field(
        default=None, description="the model's context window in tokens, when known"
    )
    context_chars_limit: int | None = Field(
        default=None,
        description="the character budget enforced for each request of the role: the window "
        "less the reply's reserve at 2 characters a token, or agent.max_context_chars when "
        "set or when the window is unknown",
    )
    reply_chars_limit: int | None = Field(
        default=None,
        description="the most characters one reply may carry (reply_too_large beyond)",
    )
    trims: list[ContextTrim] = Field(default_factory=_empty)
    reasoning_chars: int = Field(
        default=0,
        description="characters of reasoning (thinking) the model sent apart from its answers; "
        "kept in the run's transcript, never run",
    )
    tools_sent: bool | None = Field(
        default=None,
        description="whether the role's tool definitions were sent; false when the model's "
        "chat template drops them (the role then had no tools; a planner got Flow's project "
        "map instead); null before the role ran",
    )
    stopped: str | None = Field(
        default=None,
        description="how the role's last invocation ended: answer (it gave its final answer) "
        "or the code that ended it (budget_iterations, no_progress, repeated_call, "
        "schema_echo, context_budget, budget_time, budget_tool_calls, a backend error's "
        "code, interrupted, ...; flow explain CODE); null before the role ran",
    )
    guided: Literal["on", "off"] | None = Field(
        default=None,
        description="on: each reply was constrained to one of the role's tool calls or a final "
        "answer by a JSON schema (the guided model option: on, or auto and the server passed "
        "the probe); off: free replies; null before the role ran",
    )


class ToolCallRecord(_Model):
    """One tool call, with the id Flow gave it, its arguments and, when it failed, why."""

    id: str
    role: str
    name: str
    ok: bool
    error: str | None = Field(default=None, description="stable error code when not ok")
    message: str | None = Field(
        default=None, description="the error message the model was sent, when not ok"
    )
    cycle: int | None = None
    arguments: dict[str, Any] = Field(
        default_factory=dict,
        description="the call's arguments as the model sent them; a string longer than 200 "
        "characters is cut and ends with '… [N chars]' (N: its full length), invalid Unicode "
        "is replaced by U+FFFD",
    )


class Budget(_Model):
    used: int
    limit: int


class Budgets(_Model):
    """Budgets used against their limits (the operator config's ``[agent]`` table)."""

    iterations: Budget = Field(description="most model turns in one role invocation")
    cycles: Budget
    tool_calls: Budget = Field(description="across the whole run")
    context_chars: Budget = Field(
        description="largest context sent in one request, against the character budget that "
        "request was sent under (a role's window-derived budget or agent.max_context_chars; "
        "before any request, the first role's budget)"
    )


class Timings(_Model):
    """Milliseconds. ``flow_ms`` is everything that was neither model nor check time."""

    total_ms: float = 0.0
    model_ms: float = 0.0
    checks_ms: float = 0.0
    flow_ms: float = 0.0


class Isolation(_Model):
    """How an isolated run (``--isolate``, ``[runs] isolate``) ran and what came back of it."""

    mode: Literal["git-worktree", "copy"] = Field(
        description="a linked git worktree of HEAD plus the uncommitted state, or a private "
        "copy of a workspace without git"
    )
    applied: bool = Field(
        description="the verified change was written to the workspace as one patch"
    )
    reason: str | None = Field(
        default=None, description="why it was not applied (unverified, or the workspace moved)"
    )


class Report(_Model):
    """The single JSON object that ``flow status|check|run`` print and MCP tools return."""

    kind: ReportKind
    ok: bool
    verified: bool = False
    status: ReportStatus
    flow_version: str
    workspace: str | None = None
    trusted: bool = False
    task: str | None = None
    config_sources: list[str] = Field(default_factory=_empty)
    models: dict[str, str] = Field(default_factory=dict, description="model per role")
    configured_checks: list[CheckSpec] = Field(default_factory=_empty)
    checks: list[CheckResult] = Field(default_factory=_empty)
    verification: Verification | None = None
    verification_history: list[CycleRecord] = Field(default_factory=_empty)
    plan: str | None = None
    changed_files: list[str] = Field(
        default_factory=_empty, description="files changed through Flow's tools"
    )
    diff: str = Field(
        default="", description="unified diff of changed_files and of every outside change"
    )
    baseline: list[BaselineResult] = Field(
        default_factory=_empty, description="checks with structured results, before the coder"
    )
    fixed_tests: list[str] = Field(
        default_factory=_empty,
        description='"CHECK: TEST_ID" for each test that failed at baseline and passes now',
    )
    tests_changed: list[str] = Field(
        default_factory=_empty,
        description="test files and test-harness files (conftest.py, __init__.py on the way to "
        "a test, test-runner configuration and plugins) the model changed or added; the "
        "evidence run used the baseline's versions, so they decide nothing",
    )
    fail_to_pass: list[str] = Field(
        default_factory=_empty,
        description='"CHECK: TEST_ID" for each test in a test file the model changed or added '
        "that failed on the baseline tree (the baseline plus only the test and harness "
        "changes) and passed on the changed tree: the evidence those tests give, with "
        "agent.allow_test_edits only",
    )
    fail_to_pass_rejected: list[str] = Field(
        default_factory=_empty,
        description='"CHECK: TEST_ID: WHY" for each such test that did not count (it passed on '
        "the baseline tree, or did not pass on the changed tree), with agent.allow_test_edits",
    )
    weak_evidence: list[str] = Field(
        default_factory=_empty,
        description="test checks whose pass rests on the exit status alone (Flow reads no "
        "results from their runner): any code that ends the runner with status 0 passes them",
    )
    suppressions_added: list[str] = Field(
        default_factory=_empty,
        description='suppression comments the model added, "PATH:LINE: TEXT (file|line)"; a '
        "file-level one leaves that file uncovered by lint",
    )
    outside_changes: list[OutsideChange] = Field(
        default_factory=_empty,
        description="changes Flow's tools did not make; each one vetoes verification",
    )
    tree: TreeWatch | None = None
    roles: dict[str, RoleUsage] = Field(default_factory=dict)
    tool_calls: list[ToolCallRecord] = Field(default_factory=_empty)
    budgets: Budgets | None = None
    errors: list[ErrorInfo] = Field(default_factory=_empty)
    warnings: list[ErrorInfo] = Field(
        default_factory=_empty,
        description="status: setup problems that would stop a run from being verified "
        "(preflight_* codes); run: what the baseline check run found (baseline_passing)",
    )
    sandbox: SandboxStatus | None = Field(
        default=None, description="how named checks are jailed ([sandbox] in the operator config)"
    )
    timings: Timings = Field(default_factory=Timings)
    run_id: str | None = Field(
        default=None, description="the run's id in the run store (flow show/undo ID)"
    )
    run_dir: str | None = Field(
        default=None, description="the run's record folder (transcript, diff, pre-images)"
    )
    isolation: Isolation | None = Field(
        default=None, description="set when the run ran in an isolated tree"
    )
    rolled_back: list[str] = Field(
        default_factory=_empty,
        description="files restored at the end because [runs] on_unverified = 'rollback'",
    )

    def to_json(self) -> str:
        """Compact JSON, one line, UTF-8 safe.

        Text that is not valid Unicode (a lone UTF-16 surrogate, as a task given on a command
        line with undecodable bytes or in a JSON ``\\ud83d`` escape carries) is written as
        U+FFFD, so the report always encodes.
        """
        try:
            return self.model_dump_json()
        except PydanticSerializationError:
            return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible dict (what MCP puts in ``structuredContent``); valid Unicode."""
        data: dict[str, Any] = _valid_unicode(self.model_dump(mode="json"))
        return data


def _valid_unicode(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {_valid_unicode(k): _valid_unicode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_valid_unicode(v) for v in value]
    return value


def report_json_schema() -> dict[str, Any]:
    """The report's JSON Schema (draft 2020-12, as pydantic writes it)."""
    return Report.model_json_schema()
