"""The role loop: one role invocation, turn by turn, under the host's budgets.

``RoleLoop`` reads as a step function (the shape of mini-swe-agent's ``run → step → query →
execute``): ``run`` starts the role and calls ``step`` once per turn; ``step`` fits the context
to the budget, ``query`` asks the model (``shrink`` answers a prompt the server refused as too
long), and ``execute`` classifies the reply, answers its tool calls and decides whether the role
finished (``finish``), must be told what went wrong (``ask_again``) or goes on.

A role *completes* only when the model replies with text, no tool call and no parse issue in
that same reply. Every parse issue is recorded (code, role, cycle) and costs the turn.
Budgets (``docs/architecture.md``, "Budgets"): ``max_iterations`` model turns per role
invocation (``budget_iterations``); ``max_tool_calls`` across the run (a call beyond it is
refused and the run ends: ``budget_tool_calls``); ``max_context_chars`` per request
(``context_budget`` when trimming old tool output is not enough).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from flow_core._errors import BackendError
from flow_core._protocols import STREAM_METER, ChatMessage, ChatResponse, Event, Role
from flow_core._report import RoleUsage
from flow_core.run._budget import role_budget
from flow_core.run._context import Context
from flow_core.run._cutoff import operator_issues
from flow_core.run._fence import fence
from flow_core.run._guided import answer_limit, unwrap
from flow_core.run._interruptible import Abandoned, call_interruptibly
from flow_core.run._prompts import retry_text
from flow_core.run._stall import WRITE_TOOLS, StallWatch
from flow_core.run._state import Interrupted, RoleOutcome, RunEnded, RunState
from flow_core.tools._record import tool_event

if TYPE_CHECKING:
    from flow_core._codes import ErrorCode
    from flow_core._protocols import ChatBackend, ChatResponse, ToolCall
    from flow_core.config import AgentConfig
    from flow_core.models import ParsedReply
    from flow_core.tools import ToolBox

__all__ = ["CUT_PLAN_MARK", "RoleLoop", "RoleSpec", "guarded", "run_role"]

T = TypeVar("T")

#: Appended to a planner's plan that a length limit cut short (``RoleLoop._cut_plan``).
CUT_PLAN_MARK = "\n\n[plan cut short at the reply's length limit]"
#: A prompt the server refused as too long is trimmed to at most this share of its size.
_OVERFLOW_SHRINK = 0.7


@dataclass(frozen=True)
class RoleSpec:
    """One role invocation: who runs, on what, from which prompts.

    Attributes:
        role: planner, coder or reviewer.
        model: the model name (``FlowConfig.model_for``).
        system / user: the fresh context's two messages.
        toolbox: the role's tools (``Run.toolbox``).
        cycle: the repair cycle, None for the planner.
        response_format: a JSON Schema for the reply (the reviewer's), or None.
        options: the role's model options (``FlowConfig.options_for``), sent with each request.
        tools: False when the model cannot receive tool definitions
            (``ChatBackend.tool_definitions_reach``): none is sent and none can be called.
        guided: builds the reply schema of guided tool calls for each request, from the
            workspace as it is then and the calls answered since the last write
            (``run/_guided.guided_format``'s ``done``; ``calls`` and ``answer`` come from
            ``RoleLoop.query``), or None.
        shown: calls whose answers the first message already holds (a guided coder's file
            views): counted as answered (``StallWatch.done``) until the role's first write.
    """

    role: Role
    model: str
    system: str
    user: str
    toolbox: ToolBox
    cycle: int | None = None
    response_format: Mapping[str, Any] | None = None
    options: Mapping[str, Any] | None = None
    tools: bool = True
    guided: Callable[..., Mapping[str, Any]] | None = None
    shown: tuple[ToolCall, ...] = ()

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """The tool schemas sent with each request (none without ``tools``)."""
        return self.toolbox.schemas if self.tools else []

    @property
    def names(self) -> frozenset[str]:
        """The tool names the role may call (none without ``tools``)."""
        return self.toolbox.names if self.tools else frozenset()


def run_role(
    state: RunState, backend: ChatBackend, agent: AgentConfig, spec: RoleSpec
) -> RoleOutcome:
    """Run one role from a fresh context until it completes or a budget ends it.

    The character budget and reply cap are ``run/_budget.role_budget``'s.

    Returns:
        ``RoleOutcome(completed=True, text=...)``, or ``completed=False`` with the failure code
        (``context_budget``, ``budget_iterations``, ``prompt_too_long``, a stall code).

    Raises:
        RunEnded: the run's tool-call budget or its time was spent.
        Interrupted: the run was asked to stop.
        BackendError: the model server failed.
    """
    return RoleLoop(state, backend, agent, spec).run()


class RoleLoop:
    """The turns of one role invocation (see the module docstring and ``run_role``)."""

    def __init__(
        self, state: RunState, backend: ChatBackend, agent: AgentConfig, spec: RoleSpec
    ) -> None:
        self.state = state
        self.agent = agent
        self.spec = spec
        self.role, self.cycle, self.toolbox = spec.role, spec.cycle, spec.toolbox
        self.usage = state.roles.setdefault(spec.role, RoleUsage(model=spec.model))
        self.budget = guarded(
            state,
            functools.partial(role_budget, backend, agent, spec.model, spec.options),
            name=f"flow-{spec.role}-window",
        )
        self.limit = self.budget.context_chars
        self.backend = state.journal.wrap(backend, role=spec.role, cycle=spec.cycle)
        self.ctx = Context(spec.toolbox.schema_chars if spec.tools else 0)
        self.watch = StallWatch(spec.schemas, agent.max_repeated_calls, agent.max_idle_turns)
        self.watch.seen(spec.shown)

    # -- run → step → query → execute ---------------------------------------------------------

    def run(self) -> RoleOutcome:
        """Start the role, then one ``step`` per turn up to ``agent.max_iterations``."""
        self._start()
        for turn in range(1, self.agent.max_iterations + 1):
            outcome = self.step(turn)
            if outcome is not None:
                return outcome
        message = f"the {self.role} used all {self.agent.max_iterations} turns without finishing"
        return self._fail("budget_iterations", message)

    def step(self, turn: int) -> RoleOutcome | None:
        """One turn: fit the context, ask the model, act on its reply; an outcome ends the
        role, None goes on to the next turn."""
        self.state.check_time()
        fits = self.ctx.fit(self.limit)
        self._record_changes(turn)
        if not fits:
            message = (
                f"the {self.role}'s context needs {self.ctx.total} characters even with old "
                f"tool output removed; the budget is {self.limit} ({self.budget.source()})"
            )
            return self._fail("context_budget", message)
        self.state.note_context(self.ctx.total, self.limit)
        self._count_turn(turn)
        try:
            response = self.query(turn)
        except BackendError as err:
            if err.code != "prompt_too_long":
                raise
            return self.shrink(err, turn)
        return self.execute(response, turn)

    def query(self, turn: int) -> ChatResponse:
        """One model request (``_ask``) and the tokens the server counted for it.

        A guided role's reply schema (``RoleSpec.guided``) allows only the answer on its last
        turn (a call then would not run), a role that can write is not offered the answer
        before its first successful write, and the answer is short enough to end within the
        reply cap (``answer_limit``; docs/architecture.md, "Guided tool calls")."""
        spec = self.spec
        reply_format = spec.response_format
        if spec.guided is not None:
            # The last turn's calls would not run; a role that can write answers after writing.
            last = turn == self.agent.max_iterations
            writer = not WRITE_TOOLS.isdisjoint(spec.names)
            answer = last or self.watch.wrote or not writer
            reply_format = spec.guided(
                self.watch.done(),
                calls=not last,
                answer=answer,
                answer_chars=answer_limit(self.budget.reserve_tokens, self.budget.reply_chars),
            )
        response = _ask(self.state, self.backend, self.ctx, spec, turn, reply_format=reply_format)
        usage = self.usage
        usage.turn_tokens.append((response.prompt_tokens, response.completion_tokens))
        usage.prompt_tokens += response.prompt_tokens or 0
        usage.completion_tokens += response.completion_tokens or 0
        usage.reasoning_chars += len(response.reasoning)
        delivery = self.backend.tool_results_in_use(spec.model)
        if delivery is not None:
            usage.tool_results = delivery
        return response

    def shrink(self, err: BackendError, turn: int) -> RoleOutcome | None:
        """After ``prompt_too_long``: never resend the same or a larger prompt. Trim to well
        below what was refused and go on, or end the role when nothing is left to trim."""
        before = self.ctx.total
        self.limit = min(self.limit, int(before * _OVERFLOW_SHRINK))
        fits = self.ctx.fit(self.limit)
        self._record_changes(turn)
        if fits and self.ctx.total < before:
            self._error("prompt_too_long", err.message + "; trimmed")
            return None
        message = (
            f"{err.message}; the {self.role}'s context ({before} characters) cannot be trimmed "
            "further, so the role ends"
        )
        return self._fail("prompt_too_long", message)

    def execute(self, response: ChatResponse, turn: int) -> RoleOutcome | None:
        """Classify the reply, run and answer its tool calls, and decide: the role finished
        (plain text, no call, no issue), ended (a stall), or goes on."""
        from flow_core.models import parse_reply

        spec = self.spec
        parsed = parse_reply(response, spec.names, max_chars=self.budget.reply_chars)
        for code, message in operator_issues(
            parsed, response, role=self.role, options=spec.options, window=self.budget.window
        ):
            self._error(code, message)
        calls = parsed.tool_calls
        stall = self.watch.screen(calls, last_turn=turn == self.agent.max_iterations)
        if stall is not None:
            for call in calls:
                self._refuse(call, stall.code, f"not run: {stall.message}", turn)
            return self._fail(stall.code, stall.message)
        # Every call under its unique id, safe to encode; each id is answered once.
        self.ctx.add(
            ChatMessage(role="assistant", content=parsed.text, tool_calls=parsed.echo_calls)
        )
        ran = [self._answer(call, turn) for call in calls]
        self._answer_issues(parsed, {call.id for call in calls})
        if not calls and not parsed.issues and parsed.text.strip():
            return RoleOutcome(True, text=parsed.text)
        if not calls and self._cut_plan(parsed):
            return RoleOutcome(True, text=parsed.text.rstrip() + CUT_PLAN_MARK)
        if not calls:
            self.ask_again(parsed)
        stall = self.watch.after_turn(ran)
        return None if stall is None else self._fail(stall.code, stall.message)

    def ask_again(self, parsed: ParsedReply) -> None:
        """After a reply with parse issues or no text: record it and tell the model what to do."""
        if not parsed.issues:
            self._error("empty_reply", "the reply had no usable text")
        problems = "; ".join(i.message for i in parsed.issues) or "empty reply"
        self.ctx.add(ChatMessage(role="user", content=retry_text(problems)))

    def _cut_plan(self, parsed: ParsedReply) -> bool:
        """Whether ``parsed`` is a planner's plain text whose only issue is that a length
        limit cut it (``context_overflow`` from the parser; the operator's code, ``reply_cap``
        or ``context_overflow``, is recorded already): the text is still a plan, so it is
        kept, marked as cut (``CUT_PLAN_MARK``), rather than asked again until the role ends
        ``no_progress`` (docs/architecture.md, "Budgets")."""
        return (
            self.role == "planner"
            and bool(parsed.text.strip())
            and bool(parsed.issues)
            and all(issue.code == "context_overflow" for issue in parsed.issues)
        )

    # -- parts ---------------------------------------------------------------------------------

    def _start(self) -> None:
        """Account the invocation and its limits; the fresh context; ``role_started``."""
        usage, budget, spec = self.usage, self.budget, self.spec
        usage.invocations += 1
        usage.context_window = budget.window
        usage.context_chars_limit = budget.context_chars
        usage.reply_chars_limit = budget.reply_chars
        usage.tools_sent = spec.tools
        usage.guided = "on" if spec.guided is not None else "off"
        self.state.note_context(0, self.limit)
        self.ctx.add(ChatMessage(role="system", content=spec.system))
        self.ctx.add(ChatMessage(role="user", content=spec.user))
        self.state.emit(Event("role_started", role=self.role, cycle=self.cycle, model=spec.model))

    def _answer(self, call: ToolCall, turn: int) -> tuple[ToolCall, bool]:
        """Run one tool call and answer it in the context (refused beyond the run's budget).

        Raises:
            RunEnded: the run's tool-call budget was spent (the call is refused first).
        """
        state, role, cycle = self.state, self.role, self.cycle
        state.check_stop()
        if state.ledger.used >= self.agent.max_tool_calls:
            self._refuse_over_budget(call, turn)
        args = call.arguments if isinstance(call.arguments, dict) else {}
        outcome = self.toolbox.call(call.name, args)
        state.journal.tool_call(call, outcome, role=role, cycle=cycle, turn=turn)
        state.emit(tool_event(state.ledger.records[-1], role=role, turn=turn))
        content = outcome.content
        if role != "coder":
            # Planner and reviewer judge workspace text: it reaches them marked as data.
            content = fence(f"{call.name} output", content)
        self.ctx.add(
            ChatMessage(role="tool", content=content, tool_call_id=call.id, name=call.name)
        )
        return call, outcome.ok

    def _refuse_over_budget(self, call: ToolCall, turn: int) -> None:
        """Refuse ``call``: the run's tool-call budget is spent, so the run ends.

        Raises:
            RunEnded: always.
        """
        limit = self.agent.max_tool_calls
        self._refuse(
            call, "budget_tool_calls", f"the run's tool-call budget ({limit}) is spent", turn
        )
        self._error(
            "budget_tool_calls",
            f"tool call {call.name!r} refused: max_tool_calls ({limit}) reached",
        )
        raise RunEnded

    def _refuse(self, call: ToolCall, code: ErrorCode, message: str, turn: int) -> None:
        """Record ``call`` as refused with ``code`` (the report's tool calls), not run, and
        tell the live displays."""
        arguments = call.arguments if isinstance(call.arguments, dict) else None
        self.toolbox.refuse(call.name, code, message, arguments)
        self.state.emit(tool_event(self.state.ledger.records[-1], role=self.role, turn=turn))

    def _answer_issues(self, parsed: ParsedReply, answered: set[str]) -> None:
        """Answer every call id a parse issue names that no run call answered."""
        for issue in parsed.issues:
            if issue.tool_call_id and issue.tool_call_id not in answered:
                answered.add(issue.tool_call_id)
                content = f"error ({issue.code}): {issue.message}"
                self.ctx.add(
                    ChatMessage(role="tool", content=content, tool_call_id=issue.tool_call_id)
                )

    def _count_turn(self, turn: int) -> None:
        """Account one model turn: the role's turns and the run's largest turn number."""
        self.usage.turns += 1
        self.state.max_turns = max(self.state.max_turns, turn)
        self.state.emit(Event("turn", role=self.role, cycle=self.cycle, turn=turn))

    def _record_changes(self, turn: int) -> None:
        """Move the context's trims and cuts into the role's usage (the report)."""
        _record_changes(self.usage, self.ctx, turn=turn, cycle=self.cycle)

    def _error(self, code: ErrorCode, message: str) -> None:
        self.state.error(code, message, role=self.role, cycle=self.cycle)

    def _fail(self, code: ErrorCode, message: str) -> RoleOutcome:
        """Record ``code`` and end the role without completing it."""
        self._error(code, message)
        return RoleOutcome(False, failure=code)


def _record_changes(usage: RoleUsage, ctx: Context, *, turn: int, cycle: int | None) -> None:
    """Move the context's trims and cuts into the role's usage (the report)."""
    from flow_core._report import ContextTrim

    for change in ctx.changes:
        usage.trims.append(
            ContextTrim(
                kind="cut" if change.kind == "cut" else "trim",
                turn=turn,
                cycle=cycle,
                messages=change.messages,
                chars_removed=change.chars_removed,
                chars_after=change.chars_after,
                tool_call_id=change.tool_call_id,
            )
        )
    ctx.changes.clear()


def _ask(
    state: RunState,
    backend: ChatBackend,
    ctx: Context,
    spec: RoleSpec,
    turn: int,
    *,
    reply_format: Mapping[str, Any] | None,
) -> ChatResponse:
    """One model request, abandoned as soon as the run is asked to stop (time in ``model_ms``),
    with progress events around it.

    While a streaming backend receives the reply, one ``model_progress`` event per streamed
    fragment carries ``tokens`` (fragments so far) and ``chars`` (characters so far) (an
    event sink must be fast: ``EventSink``); when the reply is in, one ``model_reply`` event
    carries ``duration_ms`` and the server's ``prompt_tokens``/``completion_tokens`` (None when
    it reported none) and ``finish_reason``.

    The request runs in its own ``REQUEST_SCOPE``: when it is abandoned (interrupt, or the
    run's ``max_seconds``), its connection is shut down so the helper thread stops reading
    and the server sees the client go.

    Raises:
        Interrupted: ``Runtime.interrupt()`` was called while the request was in flight.
        RunEnded: the run's ``max_seconds`` ran out while it was in flight (``budget_time``).
        BackendError: the model server failed.
    """
    role, cycle = spec.role, spec.cycle
    received = {"tokens": 0, "chars": 0}

    def meter(chars: int) -> None:
        received["tokens"] += 1
        received["chars"] += chars
        tokens, total = received["tokens"], received["chars"]
        progress = Event("model_progress", role, cycle, turn, tokens=tokens, chars=total)
        state.emit(progress)

    chat = functools.partial(
        backend.chat,
        spec.model,
        list(ctx.messages),
        tools=spec.schemas,
        format=reply_format,
        options=spec.options,
    )
    started = time.perf_counter()
    token = STREAM_METER.set(meter)
    try:
        response = guarded(state, chat, name=f"flow-{role}-model")
        if spec.guided is not None:
            response = unwrap(response)
    finally:
        STREAM_METER.reset(token)
        state.model_ms += (time.perf_counter() - started) * 1000.0
    state.emit(
        Event(
            "model_reply",
            role=role,
            cycle=cycle,
            turn=turn,
            duration_ms=round((time.perf_counter() - started) * 1000.0, 1),
            prompt_tokens=response.prompt_tokens,
            completion_tokens=response.completion_tokens,
            finish_reason=response.finish_reason,
        )
    )
    return response


def guarded(state: RunState, fn: Callable[[], T], *, name: str) -> T:
    """``fn()`` (a request to the model server), abandoned when the run is asked to stop or
    its ``max_seconds`` runs out; the abandoned request's connections are shut down.

    Raises:
        Interrupted: ``Runtime.interrupt()`` was called.
        RunEnded: ``budget_time``.
    """
    from flow_core.models._http import REQUEST_SCOPE, RequestScope

    scope = RequestScope()
    scoped = REQUEST_SCOPE.set(scope)
    try:
        return call_interruptibly(fn, lambda: state.stop or state.past_deadline(), name=name)
    except Abandoned:
        scope.abort()
        if state.stop:
            raise Interrupted from None
        raise state.end_for_time() from None
    finally:
        REQUEST_SCOPE.reset(scoped)
