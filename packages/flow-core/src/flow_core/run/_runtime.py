"""The verified runtime: plan → code → verify → review, under budgets the host enforces.

Sources: the seed's "What verified means" and "Trust and security"; DESIGN.md ("flow-core →
Runtime").

One ``run(task)``:

1. **planner**: fresh context (bundled skill + task), read-only tools; ends with a plan text.
2. Without trust the run stops here: nothing is written, no check runs, status
   ``"read_only"``, ``verified`` false, error ``not_trusted``.
3. For each cycle up to ``max_cycles``:

   a. **coder**: fresh context (task, plan, the previous cycle's failures and findings), write
      tools and ``run_check``;
   b. hashes of every edited file and the editor's freshness snapshot are taken;
   c. the host runs **every** configured check (required and optional) in config order, and,
      with an editor attached, Rose's native linter over the changed source files;
   d. **reviewer**: fresh context, read-only tools, structured output validated against
      ``REVIEW_SCHEMA``; it runs only when the coder completed and every required check passed;
   e. hashes and freshness again; the gate (``flow_core.verify._gate``) judges the five conditions;
   f. verified → stop; otherwise failures and findings feed the next cycle.

A role *completes* only when the model replies with text, no tool call and no parse issue in
that same reply. Every parse issue is recorded in ``report.errors`` (code, role, cycle) and
costs the turn. Budgets: ``max_iterations`` model turns per role invocation
(``budget_iterations``), ``max_tool_calls`` across the run (a call beyond it is refused and the
run ends unverified: ``budget_tool_calls``), ``max_context_chars`` per request (oldest tool
outputs are replaced by a short marker first; if the context still does not fit, the role fails
with ``context_budget``; nothing larger is ever sent).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flow_core.__about__ import __version__
from flow_core._errors import (
    BackendError,
    EditorError,
    FlowError,
    NotTrustedError,
    UnknownCheckError,
)
from flow_core._protocols import (
    ROLES,
    ChatBackend,
    ChatMessage,
    EditorBridge,
    EditorLintResult,
    Event,
    EventKind,
    EventSink,
    Role,
)
from flow_core._report import (
    Budget,
    Budgets,
    CheckResult,
    CheckSpec,
    CycleRecord,
    ErrorInfo,
    GateConditions,
    Report,
    ReportStatus,
    Review,
    RoleUsage,
    Timings,
    Verification,
)
from flow_core.run._interruptible import Abandoned, call_interruptibly
from flow_core.skills import load_skill
from flow_core.tools._toolbox import ToolBox, ToolLedger
from flow_core.verify._checks import kill_all_process_groups, run_check
from flow_core.verify._gate import DOC_KEY, TOOL_CONFIG_KEY, GateFacts, evaluate_gate, language_key
from flow_safeio import NotFoundError, SafeIOError

if TYPE_CHECKING:
    from flow_core.config._schema import FlowConfig
    from flow_safeio import Workspace

__all__ = ["REVIEW_SCHEMA", "Runtime"]

#: The JSON Schema the reviewer's final reply must follow (sent as ``format=``).
REVIEW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "summary": {"type": "string"},
        "findings": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["approved", "summary", "findings"],
    "additionalProperties": False,
}

_TRIMMED = "[older tool output removed to fit the context budget]"
_FEEDBACK_TAIL_CHARS = 2_000


class _Interrupted(Exception):
    """Raised inside a run or check when ``interrupt()`` was called."""


class _RunEnded(Exception):
    """A run-wide budget was spent (tool calls): stop every role."""


@dataclass
class _RoleOutcome:
    completed: bool
    text: str = ""
    failure: str | None = None  # error code when not completed


class _Context:
    """One role's messages with their size tracked incrementally (characters)."""

    __slots__ = ("fixed", "messages", "sizes", "total", "trim_from")

    def __init__(self, fixed: int) -> None:
        self.fixed = fixed
        self.messages: list[ChatMessage] = []
        self.sizes: list[int] = []
        self.total = fixed
        self.trim_from = 0

    def add(self, message: ChatMessage) -> None:
        size = len(message.content)
        for call in message.tool_calls:
            args = call.arguments
            size += len(call.name) + (len(args) if isinstance(args, str) else len(json.dumps(args)))
        self.messages.append(message)
        self.sizes.append(size)
        self.total += size

    def fit(self, limit: int) -> bool:
        """Trim the oldest tool outputs until the context fits ``limit`` characters."""
        i = self.trim_from
        while self.total > limit and i < len(self.messages):
            msg = self.messages[i]
            if msg.role == "tool" and self.sizes[i] > len(_TRIMMED):
                self.messages[i] = ChatMessage(
                    role="tool", content=_TRIMMED, tool_call_id=msg.tool_call_id, name=msg.name
                )
                self.total -= self.sizes[i] - len(_TRIMMED)
                self.sizes[i] = len(_TRIMMED)
            i += 1
            if self.total > limit:
                self.trim_from = i
        return self.total <= limit


def _sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _unified(path: str, old: bytes | None, new: bytes | None) -> str:
    def lines(data: bytes | None) -> list[str]:
        if data is None:
            return []
        out = data.decode("utf-8", errors="replace").splitlines(keepends=True)
        if out and not out[-1].endswith(("\n", "\r")):
            out[-1] += "\n\\ No newline at end of file\n"
        return out

    return "".join(
        difflib.unified_diff(
            lines(old),
            lines(new),
            fromfile="/dev/null" if old is None else f"a/{path}",
            tofile="/dev/null" if new is None else f"b/{path}",
        )
    )


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate key in a JSON object")
    return dict(pairs)


def _validate_review(text: str) -> Review | None:
    """The review if ``text`` is exactly one JSON object matching ``REVIEW_SCHEMA``.

    A repeated key is invalid, not "last one wins": ``{"approved": false, ..., "approved":
    true}`` must never read as an approval.
    """
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or set(data) != {"approved", "summary", "findings"}:
        return None
    approved, summary, findings = data["approved"], data["summary"], data["findings"]
    if not isinstance(approved, bool) or not isinstance(summary, str):
        return None
    if not isinstance(findings, list) or not all(isinstance(f, str) for f in findings):
        return None
    return Review(approved=approved, summary=summary, findings=findings)


class Runtime:
    """Plan → code → verify → review under host-enforced budgets.

    Args:
        config: a validated ``FlowConfig`` (checks already snapshotted).
        trusted: allow edits and the configured named checks (seed: "Trust and security");
            default read-only.
        backend: the model server; built with ``make_backend(config)`` on first need when None
            (``status()`` never builds it, so it never imports httpx).
        editor: an attached Rose bridge; file reads and writes then go through it, checks refuse
            dirty buffers and the gate compares its freshness snapshots.
        on_event: receives progress ``Event``s; must be fast; exceptions from it are ignored.
        config_sources: the config files that were loaded (reported as-is).

    The runtime owns ``backend`` and ``editor``: ``close()`` closes both.
    """

    def __init__(
        self,
        config: FlowConfig,
        *,
        trusted: bool = False,
        backend: ChatBackend | None = None,
        editor: EditorBridge | None = None,
        on_event: EventSink | None = None,
        config_sources: Sequence[str] = (),
    ) -> None:
        self.config = config
        self.trusted = trusted
        self._backend = backend
        self._editor = editor
        self._on_event = on_event
        self._config_sources = list(config_sources)
        self._stop = False
        self._workspace: Workspace | None = None
        self._editor_schemas: list[dict[str, Any]] | None = None
        self._pre: dict[str, bytes | None] = {}
        self._task: str | None = None
        self._final_checks: list[CheckResult] = []
        self._reset()

    # -- public API -----------------------------------------------------------------------------

    def status(self) -> Report:
        """Describe the configuration: no model request, no command, no httpx import.

        Returns:
            A report of kind ``"status"``, status ``"ok"``, ``ok`` true.
        """
        return self._report("status", "ok", ok=True, fresh=True)

    def check(self, name: str | None = None) -> Report:
        """Run one configured check by name, or every configured check (config order).

        Returns:
            A report of kind ``"check"``; ``ok`` is true when every selected check passed
            (status ``"passed"``), else status ``"failed"``, or ``"interrupted"`` after
            ``interrupt()`` or Ctrl-C (process groups are killed first).

        Raises:
            NotTrustedError: without ``trusted`` (named checks execute project code).
            UnknownCheckError: ``name`` is not configured.
        """
        if not self.trusted:
            raise NotTrustedError(
                "named checks run project code, so they need --trusted; fix: review the "
                "[checks.*] tables in your operator config, then start Flow again with --trusted"
            )
        if name is not None and name not in self.config.checks:
            known = ", ".join(self.config.checks) or "none"
            raise UnknownCheckError(
                f"no check named {name!r} in the operator config (configured: {known}); "
                "fix: add [checks." + name + "] to the operator file or use a configured name"
            )
        self._reset()
        names = [name] if name is not None else list(self.config.checks)
        status: ReportStatus
        try:
            results = [self._run_one_check(n, cycle=None) for n in names]
            self._final_checks = results
            if self._stop or any(r.status == "interrupted" for r in results):
                status = "interrupted"
            elif not results:
                self._error("no_checks", "no named checks are configured")
                status = "failed"
            else:
                status = "passed" if all(r.status == "passed" for r in results) else "failed"
        except (KeyboardInterrupt, _Interrupted):
            kill_all_process_groups(owner=self)
            status = "interrupted"
        return self._report("check", status, ok=status == "passed")

    def run(self, task: str) -> Report:
        """Run one task through plan → code → verify → review.

        Args:
            task: what to do, in natural language.

        Returns:
            A report of kind ``"run"``; ``ok == verified``. Status ``"verified"``,
            ``"unverified"``, ``"read_only"`` (no trust), ``"failed"`` (the planner could not
            finish, or the backend/editor failed) or ``"interrupted"``.
        """
        self._reset()
        self._pre = {}
        self._task = task
        self._emit("run_started", detail={"task": task[:200]})
        status: ReportStatus
        try:
            status = self._run(task)
        except (KeyboardInterrupt, _Interrupted):
            kill_all_process_groups(owner=self)
            status = "interrupted"
        except (BackendError, EditorError) as err:
            self._error(err.code, err.message)
            status = "failed"
        except FlowError as err:
            self._error(err.code, err.message)
            status = "error"
        except SafeIOError as err:  # the workspace root is missing, replaced or unreadable
            self._error(err.code, f"workspace unusable: {err}")
            status = "error"
        report = self._report("run", status, ok=status == "verified")
        self._emit("run_finished", ok=report.ok, detail={"status": status})
        return report

    def list_models(self) -> list[str]:
        """Models installed on the backend (builds the backend if needed).

        Raises:
            BackendError: the server could not be asked.
        """
        return self._get_backend().list_models()

    def interrupt(self) -> None:
        """Stop the current run or check: kill its process groups; it returns "interrupted".

        Thread-safe and usable from a signal handler (no lock is taken). A model request in
        flight is abandoned within ``POLL_S`` (20 ms; ``run/_interruptible.py``): its reply
        is dropped, no tool call or check starts after this returns.
        """
        self._stop = True
        kill_all_process_groups(owner=self)

    def rollback(self) -> list[str]:
        """Restore every file the last run wrote to its pre-image; remove the files it created.

        Removal goes through ``flow_safeio.Workspace.remove`` (regular files only, no link
        followed). With an editor bridge attached, created files are left in place: Rose offers
        no delete, and Flow never bypasses the editor.

        Returns:
            Paths that could not be restored or removed (already gone counts as removed).
        """
        failed: list[str] = []
        ws = self._get_workspace()
        for path, old in self._pre.items():
            try:
                if old is None:
                    if self._editor is not None:
                        failed.append(path)
                    else:
                        with contextlib.suppress(NotFoundError):
                            ws.remove(path)
                elif self._editor is not None:
                    self._editor.write_file(path, old.decode("utf-8"))
                else:
                    ws.write_bytes(path, old)
            except (OSError, EditorError, UnicodeDecodeError):
                failed.append(path)
        return failed

    def close(self) -> None:
        """Kill this runtime's check groups; close the backend, the editor and the workspace.

        Each is closed even when closing an earlier one raised (the first error propagates).
        """
        with contextlib.ExitStack() as stack:
            if self._workspace is not None:
                stack.callback(self._workspace.close)
                self._workspace = None
            if self._editor is not None:
                stack.callback(self._editor.close)
            if self._backend is not None:
                stack.callback(self._backend.close)
            stack.callback(kill_all_process_groups, owner=self)

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- state ----------------------------------------------------------------------------------

    def _reset(self) -> None:
        self._stop = False
        self._t0 = time.perf_counter()
        self._model_ms = 0.0
        self._checks_ms = 0.0
        self._task = None
        self._plan: str | None = None
        self._errors: list[ErrorInfo] = []
        self._roles: dict[str, RoleUsage] = {}
        self._ledger = ToolLedger(limit=self.config.agent.max_tool_calls)
        self._max_turns = 0
        self._max_context = 0
        self._cycles = 0
        self._history: list[CycleRecord] = []
        self._final_checks = []
        self._verification: Verification | None = None

    def _get_backend(self) -> ChatBackend:
        if self._backend is None:
            from flow_core.models import make_backend

            self._backend = make_backend(self.config)
        return self._backend

    def _get_workspace(self) -> Workspace:
        if self._workspace is None:
            from flow_safeio import Workspace

            self._workspace = Workspace(
                self.config.workspace_dir, protected=tuple(self.config.protected)
            )
        return self._workspace

    def _emit(
        self,
        kind: EventKind,
        *,
        role: Role | None = None,
        cycle: int | None = None,
        turn: int | None = None,
        name: str | None = None,
        ok: bool | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        if self._on_event is None:
            return
        event = Event(
            kind=kind,
            role=role,
            cycle=cycle,
            turn=turn,
            name=name,
            ok=ok,
            elapsed_ms=(time.perf_counter() - self._t0) * 1000.0,
            detail=detail or {},
        )
        # A broken display must not break the run.
        with contextlib.suppress(Exception):
            self._on_event(event)

    def _error(
        self, code: str, message: str, *, role: str | None = None, cycle: int | None = None
    ) -> None:
        self._errors.append(ErrorInfo(code=code, message=message, role=role, cycle=cycle))

    def _check_stop(self) -> None:
        if self._stop:
            raise _Interrupted

    # -- checks ---------------------------------------------------------------------------------

    def _run_one_check(self, name: str, *, cycle: int | None) -> CheckResult:
        self._check_stop()
        check = self.config.checks[name]
        self._emit("check_started", cycle=cycle, name=name)
        result = run_check(
            name,
            check,
            cwd=self.config.workspace_dir,
            editor=self._editor,
            owner=self,
            should_stop=lambda: self._stop,
        )
        self._checks_ms += result.duration_ms
        self._emit(
            "check_finished",
            cycle=cycle,
            name=name,
            ok=result.status == "passed",
            detail={"status": result.status, "duration_ms": result.duration_ms},
        )
        if result.status == "interrupted":
            self._stop = True
        return result

    # -- the run --------------------------------------------------------------------------------

    def _run(self, task: str) -> ReportStatus:
        ws = self._get_workspace()
        try:
            planner = self._run_role(
                "planner",
                system=load_skill("planner"),
                user=f"Task:\n{task}\n\n{self._checks_text()}",
                toolbox=self._toolbox("planner", ws, cycle=None),
                cycle=None,
            )
        except _RunEnded:
            planner = _RoleOutcome(False, failure="budget_tool_calls")
        if not planner.completed:
            self._verification = self._blocked_verification(
                [f"planner did not complete: {planner.failure}"], within_budgets=False
            )
            return "failed"
        self._plan = planner.text
        if not self.trusted:
            reason = "read-only run (no --trusted): planned only; nothing written, no check run"
            self._error("not_trusted", reason)
            self._verification = self._blocked_verification([reason], within_budgets=True)
            return "read_only"

        feedback = ""
        for cycle in range(1, self.config.agent.max_cycles + 1):
            self._cycles = cycle
            verification = self._cycle(task, cycle, feedback, ws)
            if verification.verified:
                return "verified"
            if self._ledger.exhausted or self._stop:
                break
            feedback = self._feedback(cycle, verification)
        self._check_stop()
        return "unverified"

    def _cycle(self, task: str, cycle: int, feedback: str, ws: Workspace) -> Verification:
        budget_reasons: list[str] = []
        coder_user = f"Task:\n{task}\n\nPlan:\n{self._plan}\n\n{self._checks_text()}"
        if feedback:
            coder_user += "\n\n" + feedback
        try:
            coder = self._run_role(
                "coder",
                system=load_skill("coder"),
                user=coder_user,
                toolbox=self._toolbox("coder", ws, cycle=cycle),
                cycle=cycle,
            )
        except _RunEnded:
            coder = _RoleOutcome(False, failure="budget_tool_calls")
        if not coder.completed:
            budget_reasons.append(f"coder did not complete: {coder.failure}")

        # Verification starts here: what the checks and the reviewer judge must still be on
        # disk (and in the editor) at the end of review (seed: "What verified means", 5).
        hashes_checked = self._hashes()
        fresh_checked = self._freshness(cycle)
        checks = [self._run_one_check(name, cycle=cycle) for name in self.config.checks]
        self._check_stop()
        self._final_checks = checks
        changed = self._changed_files()
        native: list[EditorLintResult] = []
        sources = [p for p in changed if language_key(p) not in (DOC_KEY, TOOL_CONFIG_KEY)]
        if self._editor is not None and sources:
            try:
                native.append(self._editor.lint(sources))
            except EditorError as err:
                self._error(err.code, f"editor lint failed: {err.message}", cycle=cycle)

        review: Review | None = None
        required_ok = all(r.status == "passed" for r in checks if r.required) and any(
            r.required for r in checks
        )
        if not coder.completed:
            review_reason = "review skipped: the coder did not complete"
        elif not required_ok:
            review_reason = "review skipped: required checks did not pass"
        elif self._ledger.exhausted:
            review_reason = "review skipped: tool-call budget spent"
        else:
            review, review_reason = self._review(task, cycle, checks, ws)
        if self._ledger.exhausted and not any("budget_tool_calls" in r for r in budget_reasons):
            budget_reasons.append("tool-call budget spent (budget_tool_calls)")
        hashes_reviewed = self._hashes()
        fresh_reviewed = self._freshness(cycle)
        snapshot_equal = (
            fresh_checked is not None
            and fresh_reviewed is not None
            and fresh_checked[0] == fresh_reviewed[0]
        ) or self._editor is None
        dirty = list(fresh_reviewed[1]) if fresh_reviewed is not None else []
        if self._editor is not None and fresh_reviewed is None:
            dirty = ["<editor freshness unavailable>"]

        verification = evaluate_gate(
            GateFacts(
                within_budgets=not budget_reasons,
                budget_reasons=budget_reasons,
                required_checks=[n for n, c in self.config.checks.items() if c.required],
                checks=checks,
                check_filetypes={n: c.filetypes for n, c in self.config.checks.items()},
                changed_files=changed,
                native_lint=native,
                review=review,
                review_reason=review_reason,
                hashes_before_checks=hashes_checked,
                hashes_after_review=hashes_reviewed,
                freshness_equal=snapshot_equal,
                dirty_buffers=dirty,
            )
        )
        self._verification = verification
        self._history.append(
            CycleRecord(cycle=cycle, checks=checks, verification=verification, review=review)
        )
        self._emit(
            "verification",
            cycle=cycle,
            ok=verification.verified,
            detail={"reasons": list(verification.reasons)},
        )
        return verification

    def _review(
        self, task: str, cycle: int, checks: Sequence[CheckResult], ws: Workspace
    ) -> tuple[Review | None, str]:
        limit = self.config.agent.max_context_chars
        diff = self._diff()
        cap = max(1_000, limit // 3)
        if len(diff) > cap:
            diff = diff[:cap] + "\n[diff cut to fit the context budget]"
        summary = "\n".join(
            f"- {r.name} ({r.kind}, {'required' if r.required else 'optional'}): {r.status}"
            for r in checks
        )
        user = (
            f"Task:\n{task}\n\nPlan:\n{self._plan}\n\nChecks run by the host:\n{summary}\n\n"
            f"Diff:\n{diff or '(no changes)'}\n\nReply with the JSON review object only."
        )
        try:
            outcome = self._run_role(
                "reviewer",
                system=load_skill("reviewer"),
                user=user,
                toolbox=self._toolbox("reviewer", ws, cycle=cycle),
                cycle=cycle,
                response_format=REVIEW_SCHEMA,
            )
        except _RunEnded:
            return None, "review ended: tool-call budget spent"
        if not outcome.completed:
            return None, f"reviewer did not finish ({outcome.failure})"
        review = _validate_review(outcome.text)
        if review is None:
            message = "the reviewer's reply is not a JSON object matching the review schema"
            self._error("review_invalid", message, role="reviewer", cycle=cycle)
            self._emit("review", role="reviewer", cycle=cycle, ok=False)
            return None, f"invalid reviewer output (review_invalid): {message}"
        self._emit(
            "review",
            role="reviewer",
            cycle=cycle,
            ok=review.approved,
            detail={"summary": review.summary},
        )
        return review, "approved" if review.approved else "rejected"

    # -- one role -------------------------------------------------------------------------------

    def _check_editor_workspace(self, editor: EditorBridge) -> None:
        """Rose's resolved workspace must be Flow's (seed: "Rose integration").

        Raises:
            EditorError: code ``editor_workspace_mismatch`` when they differ.
        """
        theirs = editor.workspace()
        ours = str(self.config.workspace_dir)
        same = os.path.normpath(theirs) == ours
        if not same:
            with contextlib.suppress(OSError):
                same = os.path.samefile(theirs, ours)
        if not same:
            raise EditorError(
                f"the editor's workspace {theirs!r} is not Flow's workspace {ours!r}; "
                "start Rose and Flow on the same directory",
                code="editor_workspace_mismatch",
            )

    def _toolbox(self, role: Role, ws: Workspace, *, cycle: int | None) -> ToolBox:
        if self._editor is not None and self._editor_schemas is None:
            self._check_editor_workspace(self._editor)
            self._editor_schemas = self._editor.tool_schemas()
        return ToolBox(
            role=role,
            workspace=ws,
            ledger=self._ledger,
            trusted=self.trusted,
            check_names=list(self.config.checks),
            run_check=lambda name: self._run_one_check(name, cycle=cycle),
            before_write=self._keep_pre_image,
            editor=self._editor,
            editor_schemas=self._editor_schemas or (),
            cycle=cycle,
        )

    def _run_role(
        self,
        role: Role,
        *,
        system: str,
        user: str,
        toolbox: ToolBox,
        cycle: int | None,
        response_format: Mapping[str, Any] | None = None,
    ) -> _RoleOutcome:
        from flow_core.models._parse import parse_reply

        agent = self.config.agent
        limit = agent.max_context_chars
        reply_cap = max(4_000, limit // 2)
        backend = self._get_backend()
        model = self.config.model_for(role)
        usage = self._roles.setdefault(role, RoleUsage(model=model))
        usage.invocations += 1
        ctx = _Context(toolbox.schema_chars)
        ctx.add(ChatMessage(role="system", content=system))
        ctx.add(ChatMessage(role="user", content=user))
        names = toolbox.names
        self._emit("role_started", role=role, cycle=cycle, detail={"model": model})
        for turn in range(1, agent.max_iterations + 1):
            self._check_stop()
            if not ctx.fit(limit):
                message = (
                    f"the {role}'s context needs {ctx.total} characters even with old tool "
                    f"output removed; the budget is {limit} (agent.max_context_chars)"
                )
                self._error("context_budget", message, role=role, cycle=cycle)
                return _RoleOutcome(False, failure="context_budget")
            self._max_context = max(self._max_context, ctx.total)
            usage.turns += 1
            self._max_turns = max(self._max_turns, turn)
            self._emit("turn", role=role, cycle=cycle, turn=turn)
            started = time.perf_counter()
            chat = functools.partial(
                backend.chat,
                model,
                list(ctx.messages),
                tools=toolbox.schemas,
                format=response_format,
            )
            try:
                response = call_interruptibly(
                    chat,
                    lambda: self._stop,
                    name=f"flow-{role}-model",
                )
            except Abandoned:
                raise _Interrupted from None
            finally:
                self._model_ms += (time.perf_counter() - started) * 1000.0
            parsed = parse_reply(response, names, max_chars=reply_cap)
            for issue in parsed.issues:
                self._error(issue.code, issue.message, role=role, cycle=cycle)
            calls = parsed.tool_calls
            ctx.add(
                ChatMessage(
                    role="assistant",
                    content=parsed.text,
                    tool_calls=tuple(response.tool_calls) or calls,
                )
            )
            answered: set[str] = set()
            for call in calls:
                self._check_stop()
                answered.add(call.id)
                if self._ledger.used >= agent.max_tool_calls:
                    outcome = toolbox.refuse(
                        call.name,
                        "budget_tool_calls",
                        f"the run's tool-call budget ({agent.max_tool_calls}) is spent",
                    )
                    self._error(
                        "budget_tool_calls",
                        f"tool call {call.name!r} refused: max_tool_calls "
                        f"({agent.max_tool_calls}) reached",
                        role=role,
                        cycle=cycle,
                    )
                    self._emit(
                        "tool_call", role=role, cycle=cycle, turn=turn, name=call.name, ok=False
                    )
                    raise _RunEnded
                args = call.arguments if isinstance(call.arguments, dict) else {}
                outcome = toolbox.call(call.name, args)
                self._emit(
                    "tool_call",
                    role=role,
                    cycle=cycle,
                    turn=turn,
                    name=call.name,
                    ok=outcome.ok,
                    detail={"id": outcome.id, "error": outcome.error},
                )
                ctx.add(
                    ChatMessage(
                        role="tool", content=outcome.content, tool_call_id=call.id, name=call.name
                    )
                )
            for issue in parsed.issues:
                if issue.tool_call_id and issue.tool_call_id not in answered:
                    answered.add(issue.tool_call_id)
                    ctx.add(
                        ChatMessage(
                            role="tool",
                            content=f"error ({issue.code}): {issue.message}",
                            tool_call_id=issue.tool_call_id,
                        )
                    )
            if calls:
                continue
            if parsed.issues or not parsed.text.strip():
                if not parsed.issues:
                    self._error(
                        "empty_reply", "the reply had no usable text", role=role, cycle=cycle
                    )
                problems = "; ".join(i.message for i in parsed.issues) or "empty reply"
                ctx.add(
                    ChatMessage(
                        role="user",
                        content=(
                            f"Your last reply could not be used ({problems}). Use a structured "
                            "tool call, or finish with a plain-text reply and no tool call."
                        ),
                    )
                )
                continue
            return _RoleOutcome(True, text=parsed.text)
        message = f"the {role} used all {agent.max_iterations} turns without finishing"
        self._error("budget_iterations", message, role=role, cycle=cycle)
        return _RoleOutcome(False, failure="budget_iterations")

    # -- files ----------------------------------------------------------------------------------

    def _read_disk(self, path: str) -> bytes | None:
        try:
            return self._get_workspace().read_bytes(path)
        except OSError:
            return None

    def _keep_pre_image(self, path: str) -> None:
        """Keep the bytes of ``path`` before its first write in this run.

        Only a file that does not exist counts as created. Any other reason the pre-image
        cannot be read (over the size cap, a hard link, not a regular file) raises the
        flow-safeio error, so the write is refused: a change Flow cannot show in the diff or
        undo is never made.
        """
        if path in self._pre:
            return
        try:
            self._pre[path] = self._get_workspace().read_bytes(path)
        except NotFoundError:
            self._pre[path] = None

    def _changed_files(self) -> list[str]:
        return sorted(p for p, old in self._pre.items() if self._read_disk(p) != old)

    def _hashes(self) -> dict[str, str | None]:
        return {p: _sha256(self._read_disk(p)) for p in sorted(self._pre)}

    def _diff(self) -> str:
        parts = [_unified(p, self._pre[p], self._read_disk(p)) for p in sorted(self._pre)]
        return "".join(parts)

    def _freshness(self, cycle: int) -> tuple[str, tuple[str, ...]] | None:
        if self._editor is None:
            return ("", ())
        try:
            fresh = self._editor.freshness()
        except EditorError as err:
            self._error(err.code, f"editor freshness unavailable: {err.message}", cycle=cycle)
            return None
        return fresh.snapshot, tuple(fresh.dirty_buffers)

    # -- prompts --------------------------------------------------------------------------------

    def _checks_text(self) -> str:
        if not self.config.checks:
            return "No named checks are configured."
        lines = ["Configured checks (the host runs all of them after the coder):"]
        for name, c in self.config.checks.items():
            req = "required" if c.required else "optional"
            types = ", ".join(c.filetypes) or "-"
            lines.append(f"- {name}: kind={c.kind}, {req}, filetypes={types}")
        return "\n".join(lines)

    def _feedback(self, cycle: int, verification: Verification) -> str:
        lines = [f"Cycle {cycle} was not verified. Fix the following and finish again."]
        for r in self._final_checks:
            if r.status != "passed":
                lines.append(f"Check {r.name} {r.status} (exit code {r.exit_code}):")
                if r.error is not None:
                    lines.append(r.error.message)
                if r.output_tail:
                    lines.append(r.output_tail[-_FEEDBACK_TAIL_CHARS:])
        review = self._history[-1].review if self._history else None
        if review is not None and not review.approved:
            lines.append(f"Reviewer: {review.summary}")
            lines.extend(f"- {f}" for f in review.findings)
        lines.append("Gate reasons:")
        lines.extend(f"- {r}" for r in verification.reasons)
        return "\n".join(lines)

    # -- report ---------------------------------------------------------------------------------

    def _check_specs(self) -> list[CheckSpec]:
        return [
            CheckSpec(
                name=n,
                kind=c.kind,
                required=c.required,
                filetypes=list(c.filetypes),
                argv=list(c.cmd),
                timeout_ms=c.timeout,
                executable=c.executable,
            )
            for n, c in self.config.checks.items()
        ]

    def _blocked_verification(self, reasons: list[str], *, within_budgets: bool) -> Verification:
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

    def _report(self, kind: str, status: ReportStatus, *, ok: bool, fresh: bool = False) -> Report:
        cfg = self.config
        if fresh:
            # status(): describes the configuration only, never a run in progress.
            return Report(
                kind="status",
                ok=ok,
                status=status,
                flow_version=__version__,
                workspace=str(cfg.workspace_dir),
                trusted=self.trusted,
                config_sources=self._config_sources,
                models={role: cfg.model_for(role) for role in ROLES},
                configured_checks=self._check_specs(),
            )
        total = (time.perf_counter() - self._t0) * 1000.0
        is_run = kind == "run"
        verified = bool(
            is_run
            and status == "verified"
            and self._verification is not None
            and self._verification.verified
        )
        agent = cfg.agent
        return Report(
            kind=kind,  # type: ignore[arg-type]
            ok=verified if is_run else ok,
            verified=verified,
            status=status,
            flow_version=__version__,
            workspace=str(cfg.workspace_dir),
            trusted=self.trusted,
            task=self._task if is_run else None,
            config_sources=self._config_sources,
            models={role: cfg.model_for(role) for role in ROLES},
            configured_checks=self._check_specs(),
            checks=list(self._final_checks) if kind != "status" else [],
            verification=self._verification if is_run else None,
            verification_history=list(self._history),
            plan=self._plan,
            changed_files=self._changed_files() if is_run and self._pre else [],
            diff=self._diff() if is_run and self._pre else "",
            roles=dict(self._roles),
            tool_calls=list(self._ledger.records),
            budgets=Budgets(
                iterations=Budget(used=self._max_turns, limit=agent.max_iterations),
                cycles=Budget(used=self._cycles, limit=agent.max_cycles),
                tool_calls=Budget(used=self._ledger.used, limit=agent.max_tool_calls),
                context_chars=Budget(used=self._max_context, limit=agent.max_context_chars),
            )
            if is_run
            else None,
            errors=list(self._errors),
            timings=Timings(
                total_ms=total,
                model_ms=self._model_ms,
                checks_ms=self._checks_ms,
                flow_ms=max(0.0, total - self._model_ms - self._checks_ms),
            ),
        )
