"""The role loop: one role invocation, turn by turn, under the host's budgets.

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
from typing import TYPE_CHECKING, Any, TypeVar

from flow_core._errors import BackendError
from flow_core._protocols import STREAM_METER, ChatMessage, ChatResponse, Role
from flow_core._report import RoleUsage
from flow_core.run._budget import role_budget
from flow_core.run._context import Context
from flow_core.run._cutoff import operator_issues
from flow_core.run._fence import fence
from flow_core.run._interruptible import Abandoned, call_interruptibly
from flow_core.run._prompts import retry_text
from flow_core.run._stall import StallWatch, refuse_calls
from flow_core.run._state import Interrupted, RoleOutcome, RunEnded, RunState
from flow_core.tools._record import tool_event_detail

if TYPE_CHECKING:
    from flow_core._protocols import ChatBackend, ChatResponse, ToolCall
    from flow_core.config import AgentConfig
    from flow_core.models import ParsedReply
    from flow_core.tools import ToolBox

__all__ = ["run_role"]

T = TypeVar("T")

#: A prompt the server refused as too long is trimmed to at most this share of its size.
_OVERFLOW_SHRINK = 0.7


def run_role(
    state: RunState,
    backend: ChatBackend,
    agent: AgentConfig,
    model: str,
    role: Role,
    *,
    system: str,
    user: str,
    toolbox: ToolBox,
    cycle: int | None,
    response_format: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
) -> RoleOutcome:
    """Run ``role`` on ``model`` from a fresh context until it completes or a budget ends it.

    ``options`` are the role's model options (``FlowConfig.options_for``), sent with each of
    its requests. The character budget is ``agent.max_context_chars`` when the operator set
    it, else the model's window (``context_window``) minus the reply's reserve
    (``max_reply_tokens``) at ``CHARS_PER_TOKEN`` characters a token.

    Returns:
        ``RoleOutcome(completed=True, text=...)``, or ``completed=False`` with the failure code
        (``context_budget``, ``budget_iterations``).

    Raises:
        RunEnded: the run's tool-call budget was spent.
        Interrupted: the run was asked to stop.
        BackendError: the model server failed.
    """
    from flow_core.models import parse_reply

    usage = state.roles.setdefault(role, RoleUsage(model=model))
    usage.invocations += 1
    budget = _guarded(
        state,
        functools.partial(role_budget, backend, agent, model, options),
        name=f"flow-{role}-window",
    )
    usage.context_window = budget.window
    usage.context_chars_limit = budget.context_chars
    usage.reply_chars_limit = budget.reply_chars
    limit, reply_cap = budget.context_chars, budget.reply_chars
    state.note_context(0, limit)
    ctx = Context(toolbox.schema_chars)
    ctx.add(ChatMessage(role="system", content=system))
    ctx.add(ChatMessage(role="user", content=user))
    state.emit("role_started", role=role, cycle=cycle, detail={"model": model})
    backend = state.journal.wrap(backend, role=role, cycle=cycle)
    watch = StallWatch(toolbox.schemas, agent.max_repeated_calls, agent.max_idle_turns)
    for turn in range(1, agent.max_iterations + 1):
        state.check_time()
        fits = ctx.fit(limit)
        _record_changes(usage, ctx, turn=turn, cycle=cycle)
        if not fits:
            message = (
                f"the {role}'s context needs {ctx.total} characters even with old tool "
                f"output removed; the budget is {limit} ({budget.source()})"
            )
            state.error("context_budget", message, role=role, cycle=cycle)
            return RoleOutcome(False, failure="context_budget")
        state.note_context(ctx.total, limit)
        _count_turn(state, usage, role=role, cycle=cycle, turn=turn)
        try:
            response = _ask(
                state,
                backend,
                ctx,
                model=model,
                toolbox=toolbox,
                role=role,
                format=response_format,
                options=options,
                cycle=cycle,
                turn=turn,
            )
        except BackendError as err:
            if err.code != "prompt_too_long":
                raise
            # Never resend the same or a larger prompt: trim to well below what was refused.
            before = ctx.total
            limit = min(limit, int(before * _OVERFLOW_SHRINK))
            fits = ctx.fit(limit)
            _record_changes(usage, ctx, turn=turn, cycle=cycle)
            if fits and ctx.total < before:
                state.error("prompt_too_long", err.message + "; trimmed", role=role, cycle=cycle)
                continue
            state.error(
                "prompt_too_long",
                f"{err.message}; the {role}'s context ({before} characters) cannot be trimmed "
                "further, so the role ends",
                role=role,
                cycle=cycle,
            )
            return RoleOutcome(False, failure="prompt_too_long")
        _count_tokens(usage, response, backend, model)
        parsed = parse_reply(response, toolbox.names, max_chars=reply_cap)
        window = usage.context_window
        for code, message in operator_issues(
            parsed, response, role=role, options=options, window=window
        ):
            state.error(code, message, role=role, cycle=cycle)
        calls = parsed.tool_calls
        stall = watch.screen(calls, last_turn=turn == agent.max_iterations)
        if stall is not None:
            refuse_calls(state, toolbox, calls, stall, role=role, cycle=cycle, turn=turn)
            state.error(stall.code, stall.message, role=role, cycle=cycle)
            return RoleOutcome(False, failure=stall.code)
        ctx.add(
            ChatMessage(
                role="assistant",
                content=parsed.text,
                # Every call under its unique id, safe to encode; each id is answered once.
                tool_calls=parsed.echo_calls,
            )
        )
        ran = _answer_calls(
            state,
            agent,
            ctx,
            toolbox,
            calls=calls,
            parsed=parsed,
            role=role,
            cycle=cycle,
            turn=turn,
        )
        if not calls and not parsed.issues and parsed.text.strip():
            return RoleOutcome(True, text=parsed.text)
        if not calls:
            _ask_again(state, ctx, parsed, role=role, cycle=cycle)
        stall = watch.after_turn(ran)
        if stall is not None:
            state.error(stall.code, stall.message, role=role, cycle=cycle)
            return RoleOutcome(False, failure=stall.code)
    message = f"the {role} used all {agent.max_iterations} turns without finishing"
    state.error("budget_iterations", message, role=role, cycle=cycle)
    return RoleOutcome(False, failure="budget_iterations")


def _count_turn(
    state: RunState, usage: RoleUsage, *, role: Role, cycle: int | None, turn: int
) -> None:
    """Account one model turn: the role's turns and the run's largest turn number."""
    usage.turns += 1
    state.max_turns = max(state.max_turns, turn)
    state.emit("turn", role=role, cycle=cycle, turn=turn)


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


def _count_tokens(
    usage: RoleUsage, response: ChatResponse, backend: ChatBackend, model: str
) -> None:
    """Add one turn's server-reported tokens to the role's usage; note the delivery mode."""
    usage.turn_tokens.append((response.prompt_tokens, response.completion_tokens))
    usage.prompt_tokens += response.prompt_tokens or 0
    usage.completion_tokens += response.completion_tokens or 0
    delivery = backend.tool_results_in_use(model)
    if delivery is not None:
        usage.tool_results = delivery


def _ask_again(
    state: RunState, ctx: Context, parsed: ParsedReply, *, role: Role, cycle: int | None
) -> None:
    """After a reply with parse issues or no text: record it and tell the model what to do."""
    if not parsed.issues:
        state.error("empty_reply", "the reply had no usable text", role=role, cycle=cycle)
    problems = "; ".join(i.message for i in parsed.issues) or "empty reply"
    ctx.add(ChatMessage(role="user", content=retry_text(problems)))


def _ask(
    state: RunState,
    backend: ChatBackend,
    ctx: Context,
    *,
    model: str,
    toolbox: ToolBox,
    role: Role,
    format: Mapping[str, Any] | None,
    options: Mapping[str, Any] | None,
    cycle: int | None,
    turn: int,
) -> ChatResponse:
    """One model request, abandoned as soon as the run is asked to stop (time in ``model_ms``),
    with progress events around it.

    While a streaming backend receives the reply, one ``model_progress`` event per streamed
    fragment carries ``detail = {"tokens": fragments so far, "chars": characters so far}`` (an
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
    received = {"tokens": 0, "chars": 0}

    def meter(chars: int) -> None:
        received["tokens"] += 1
        received["chars"] += chars
        detail = dict(received)
        state.emit("model_progress", role=role, cycle=cycle, turn=turn, detail=detail)

    chat = functools.partial(
        backend.chat,
        model,
        list(ctx.messages),
        tools=toolbox.schemas,
        format=format,
        options=options,
    )
    started = time.perf_counter()
    token = STREAM_METER.set(meter)
    try:
        response = _guarded(state, chat, name=f"flow-{role}-model")
    finally:
        STREAM_METER.reset(token)
        state.model_ms += (time.perf_counter() - started) * 1000.0
    state.emit(
        "model_reply",
        role=role,
        cycle=cycle,
        turn=turn,
        detail={
            "duration_ms": round((time.perf_counter() - started) * 1000.0, 1),
            "prompt_tokens": response.prompt_tokens,
            "completion_tokens": response.completion_tokens,
            "finish_reason": response.finish_reason,
        },
    )
    return response


def _guarded(state: RunState, fn: Callable[[], T], *, name: str) -> T:
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


def _answer_calls(
    state: RunState,
    agent: AgentConfig,
    ctx: Context,
    toolbox: ToolBox,
    *,
    calls: tuple[ToolCall, ...],
    parsed: ParsedReply,
    role: Role,
    cycle: int | None,
    turn: int,
) -> list[tuple[ToolCall, bool]]:
    """Run the reply's tool calls and answer every call id, failed ones included.

    Returns:
        Each call that ran, with whether it succeeded.

    Raises:
        RunEnded: a call came after the run's tool-call budget was spent (it is refused).
    """
    answered: set[str] = set()
    ran: list[tuple[ToolCall, bool]] = []
    for call in calls:
        state.check_stop()
        answered.add(call.id)
        if state.ledger.used >= agent.max_tool_calls:
            toolbox.refuse(
                call.name,
                "budget_tool_calls",
                f"the run's tool-call budget ({agent.max_tool_calls}) is spent",
                call.arguments if isinstance(call.arguments, dict) else None,
            )
            state.error(
                "budget_tool_calls",
                f"tool call {call.name!r} refused: max_tool_calls ({agent.max_tool_calls}) reached",
                role=role,
                cycle=cycle,
            )
            state.emit("tool_call", role=role, cycle=cycle, turn=turn, name=call.name, ok=False)
            raise RunEnded
        args = call.arguments if isinstance(call.arguments, dict) else {}
        outcome = toolbox.call(call.name, args)
        ran.append((call, outcome.ok))
        state.journal.tool_call(
            call_id=outcome.id,
            name=call.name,
            arguments=call.arguments,
            ok=outcome.ok,
            error=outcome.error,
            content=outcome.content,
            role=role,
            cycle=cycle,
            turn=turn,
        )
        state.emit(
            "tool_call",
            role=role,
            cycle=cycle,
            turn=turn,
            name=call.name,
            ok=outcome.ok,
            detail=tool_event_detail(outcome.id, state.ledger.records[-1]),
        )
        content = outcome.content
        if role != "coder":
            # Planner and reviewer judge workspace text: it reaches them marked as data.
            content = fence(f"{call.name} output", content)
        ctx.add(ChatMessage(role="tool", content=content, tool_call_id=call.id, name=call.name))
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
    return ran
