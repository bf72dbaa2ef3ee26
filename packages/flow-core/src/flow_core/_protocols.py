"""The seams of flow-core: model backends, the editor bridge and progress events.

Other packages (flow-rose, flow-mcp, flow-cli, custom agents) depend on these shapes; change
them only with every implementation.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

# Re-exported (``import X as X``, PEP 484): the seams' users import them from here.
from flow_core._roles import (
    EDITOR_TIMEOUT_DEFAULT as EDITOR_TIMEOUT_DEFAULT,  # noqa: PLC0414
    EDITOR_TIMEOUT_MAX as EDITOR_TIMEOUT_MAX,  # noqa: PLC0414
    EDITOR_TIMEOUT_MIN as EDITOR_TIMEOUT_MIN,  # noqa: PLC0414
    ROLES as ROLES,  # noqa: PLC0414
    Role as Role,  # noqa: PLC0414
)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call requested by the model.

    ``arguments`` is what the model sent: normally a JSON object (``dict``); a ``str`` when the
    model sent the arguments as a JSON *string* (a misbehaviour the runtime classifies).
    ``id`` is the server's id when it gave one, else one the backend made up.
    """

    id: str
    name: str
    arguments: dict[str, Any] | str


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """A backend-neutral chat message.

    ``role`` is system, user, assistant or tool. Assistant messages may carry ``tool_calls``;
    tool messages carry ``tool_call_id`` and ``name`` of the call they answer.
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """One model reply.

    Attributes:
        content: the assistant text ("" when none).
        tool_calls: structured tool calls, as the server returned them.
        finish_reason: ``"stop"``, ``"length"`` (cut short by the context window or token
            limit), ``"tool_calls"``, or ``None`` when the server did not say.
        model: the model name the server reports.
        duration_ms: wall time of the request in milliseconds.
        prompt_tokens / completion_tokens: as reported by the server, when it does.
        reasoning: a thinking model's reasoning, sent apart from the answer (Ollama
            ``message.thinking``, OpenAI-compatible ``reasoning_content``): kept in the run's
            transcript and counted, never parsed for tool calls, never the answer.
    """

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    model: str = ""
    duration_ms: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning: str = ""


@runtime_checkable
class ChatBackend(Protocol):
    """A chat model server (Ollama's native API, an OpenAI-compatible server, a script).

    Every member is part of the seam: a wrapper (the run store's recorder,
    ``run/_journal.py``) implements or delegates each one, so what a wrapper adds never hides
    what the run needs (``docs/architecture.md``, "The backend seam"). Request options travel
    as an argument, never in ambient state.

    Implementations raise ``BackendError`` (with a stable code) for transport, HTTP and
    protocol failures; they never raise for what the *model* said (that is classified by the
    runtime).
    """

    def chat(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        format: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> ChatResponse:
        """Send one chat request.

        Args:
            model: model name as the server knows it.
            messages: the whole context for this turn.
            tools: tool schemas in the OpenAI/Ollama function format
                (``{"type": "function", "function": {"name", "description", "parameters"}}``).
            format: a JSON Schema the reply's content must follow (structured output), or None.
            options: the model options of this request in Flow's keys
                (``flow_core.config.ModelOptions``: ``context_tokens``, ``temperature``,
                ``seed``, ``max_reply_tokens``, ...; ``FlowConfig.options_for(role)``); None:
                the backend's own configured options.
        """
        ...

    def context_window(self, model: str, options: Mapping[str, Any] | None = None) -> int | None:
        """The context window ``model`` runs with under ``options``, in tokens.

        ``options["context_tokens"]`` when set, else what the server says; None when it
        cannot say (the run then keeps ``agent.max_context_chars``). May ask the server once
        per model; never raises for a server that cannot answer.
        """
        ...

    def tool_results_in_use(self, model: str) -> str | None:
        """How tool results reach ``model``: ``"native"`` (messages of the tool role) or
        ``"user"`` (delimited user messages, for templates without a tool role), as decided
        for it; None before any request carried a tool result. Never asks the server."""
        ...

    def tool_definitions_reach(self, model: str) -> bool:
        """Whether tool definitions sent with a request reach ``model``'s prompt.

        False when the server's chat template for ``model`` drops them (llama-cpp-python's
        plain ``chatml``; an Ollama model without the ``tools`` capability): a role on that
        model is then sent no tools and sees Flow's project map instead
        (``docs/architecture.md``, "A role without tools"). Decided once per model; may ask
        the server; True when the server cannot say. Never raises.
        """
        ...

    def list_models(self) -> list[str]:
        """Names of the models installed on the server."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


@dataclass(frozen=True, slots=True)
class EditorFreshness:
    """Rose's editor-context freshness, API v1 (``docs/architecture.md``, "Rose").

    Attributes:
        dirty_buffers: workspace-relative paths of every modified (unsaved) buffer.
        snapshot: an opaque token for the loaded/observed workspace state across *all*
            buffers; two equal tokens mean nothing changed in between.
    """

    dirty_buffers: tuple[str, ...]
    snapshot: str


@dataclass(frozen=True, slots=True)
class EditorLintResult:
    """What Rose's native linter (``editor_lint``) reported for a set of files.

    Only ``status == "ok"`` with ``verified`` true counts as static coverage for ``files``;
    ``"unavailable"`` (no LSP) never does; ``error_count > 0`` or ``stale`` vetoes.
    """

    status: Literal["ok", "unavailable", "error"]
    verified: bool
    files: tuple[str, ...]
    error_count: int = 0
    stale: bool = False
    message: str = ""


@runtime_checkable
class EditorBridge(Protocol):
    """The editor seam (implemented by flow-rose's ``RoseBridge``).

    Every method raises ``EditorError`` when the editor is unavailable, times out, or its
    workspace differs from Flow's; there is never a fallback to direct disk I/O.
    """

    def workspace(self) -> str:
        """Rose's resolved workspace root (absolute path)."""
        ...

    def tool_schemas(self) -> list[dict[str, Any]]:
        """Filtered editor tool schemas: ``{"name", "description", "inputSchema", "readOnly"}``.

        Only editor_context, editor_diagnostics, editor_symbols, editor_references,
        editor_lint, editor_check, editor_scip and editor_debug (status only) appear.
        """
        ...

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Call one allowed editor tool; returns its decoded result object."""
        ...

    def read_file(self, rel: str) -> str:
        """Buffer-aware read of a workspace-relative path (already validated by Flow)."""
        ...

    def write_file(self, rel: str, text: str) -> None:
        """Buffer-aware write; refused for unsaved or read-only buffers."""
        ...

    def freshness(self) -> EditorFreshness:
        """The freshness v1 state; a missing field raises ``EditorError`` (fail closed)."""
        ...

    def lint(self, paths: Sequence[str]) -> EditorLintResult:
        """Run Rose's native linter over workspace-relative paths."""
        ...

    def close(self) -> None:
        """Close the connection (idempotent)."""
        ...


EventKind = Literal[
    "run_started",
    "role_started",
    "turn",
    "tool_call",
    "check_started",
    "check_finished",
    "verification",
    "review",
    "run_finished",
    "model_progress",
    "model_reply",
]


@dataclass(frozen=True, slots=True)
class Event:
    """A progress event for live displays (the CLI's live view, the TUI, MCP progress).

    Every field is typed; which ones an event carries follows from its ``kind`` (the rest
    stay None), so every display reads the same fields (``docs/architecture.md``, "Runtime").

    Attributes:
        kind: what happened.
        role: the active role, when one is.
        cycle: the repair cycle (1-based), when in a run.
        turn: the model turn within the role invocation (1-based).
        name: the tool or check name for tool_call/check_* events.
        ok: outcome for tool_call/check_finished/verification/review/run_finished events.
        elapsed_ms: milliseconds since the run (or check) started.
        status: check_finished: the check's status (``passed``, ``failed``, ``timeout``,
            ...); run_finished: the report's status (``verified``, ``unverified``, ...).
        model: role_started: the model the role asks.
        task: run_started: the task's first 200 characters.
        baseline: check_started/check_finished: the check runs on the untouched tree.
        duration_ms: check_finished: the check's run time; model_reply: the request's.
        tokens: model_progress: streamed fragments received so far for the request.
        chars: model_progress: characters received so far.
        prompt_tokens: model_reply: the server's prompt token count (None: not reported).
        completion_tokens: model_reply: the server's reply token count (None: not reported).
        finish_reason: model_reply: why the reply ended, as the server said.
        call_id: tool_call: the call's id in the report's tool calls.
        error: tool_call: the error code of a refused or failed call.
        message: tool_call: that error's message.
        arguments: tool_call: the report's capped copy of the arguments (never a whole file).
        reasons: verification: why the run is not verified (empty when it is).
        summary: review: the reviewer's summary.
    """

    kind: EventKind
    role: Role | None = None
    cycle: int | None = None
    turn: int | None = None
    name: str | None = None
    ok: bool | None = None
    elapsed_ms: float = 0.0
    status: str | None = None
    model: str | None = None
    task: str | None = None
    baseline: bool | None = None
    duration_ms: float | None = None
    tokens: int | None = None
    chars: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    call_id: str | None = None
    error: str | None = None
    message: str | None = None
    arguments: Mapping[str, Any] | None = None
    reasons: tuple[str, ...] = ()
    summary: str | None = None


def describe_event(event: Event) -> str | None:
    """One line a person can read for a progress event, in the report's own words; None for
    ``model_progress`` (one per streamed token: a display shows the count, a log skips it).

    The CLI's progress log (stderr not a terminal) and the MCP server's
    ``notifications/progress`` both use these words (``docs/architecture.md``, "Runtime").
    Check outcomes use the check statuses (``passed``, ``failed``, ``timeout``...), the end
    of a run uses the report's status (``verified``, ``unverified``, ``interrupted``...).
    Model-written text (a tool call's arguments, a review's summary) is never included.
    """
    where = f" (cycle {event.cycle})" if event.cycle is not None else ""
    kind = event.kind
    if kind == "model_progress":
        return None
    if kind == "run_started":
        return "run started"
    if kind == "role_started":
        return f"{event.role} started{where}"
    if kind == "turn":
        return f"{event.role}: model turn {event.turn}{where}"
    if kind == "model_reply":
        return f"{event.role}: {_reply_words(event)}{where}"
    if kind == "tool_call":
        outcome = "ok" if event.ok else f"refused ({event.error})" if event.error else "refused"
        return f"{event.role}: tool {_shown(event.name)} {outcome}{where}"
    if kind in ("check_started", "check_finished"):
        status = _check_words(event) if kind == "check_finished" else "running"
        if kind == "check_started" and event.baseline:
            status += " (baseline)"
        return f"check {_shown(event.name)}: {status}{where}"
    if kind == "verification":
        return f"verification{where}: {'verified' if event.ok else 'unverified'}"
    if kind == "review":
        return f"review{where}: {'approved' if event.ok else 'not approved'}"
    return f"run finished: {event.status or ('verified' if event.ok else 'failed')}"


def _shown(name: str | None, limit: int = 60) -> str:
    """A tool or check name fit for one line: a model may name a tool with newlines, escape
    sequences or megabytes, so control characters are escaped and the name is cut."""
    text = name if name is not None else "?"
    if not text.isprintable():
        text = text.encode("unicode_escape", "backslashreplace").decode("ascii")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _reply_words(event: Event) -> str:
    """``model replied in 4.2 s (812 prompt, 37 reply tokens)``: the server's own counts."""
    seconds = (event.duration_ms or 0.0) / 1000.0
    counts = [
        f"{n} {what}"
        for n, what in ((event.prompt_tokens, "prompt"), (event.completion_tokens, "reply"))
        if n is not None
    ]
    tokens = f" ({', '.join(counts)} tokens)" if counts else ""
    return f"model replied in {seconds:.1f} s{tokens}"


def _check_words(event: Event) -> str:
    """The check's status word, and ``(baseline)`` for a run on the untouched tree."""
    status = event.status or ("passed" if event.ok else "failed")
    return status + (" (baseline)" if event.baseline else "")


class EventSink(Protocol):
    """Receives progress events; must be fast and must not raise."""

    def __call__(self, event: Event, /) -> None: ...


#: The receiver of streamed-reply progress for the model request running in this context:
#: ``meter(chars)`` is called once per streamed fragment with that fragment's length in
#: characters. The runtime sets it around each request; a backend that streams calls
#: :func:`note_stream_fragment`. Unset (None) outside a run, so a backend used on its own pays
#: one lookup per fragment and nothing else.
STREAM_METER: contextvars.ContextVar[Callable[[int], None] | None] = contextvars.ContextVar(
    "flow_stream_meter", default=None
)


def note_stream_fragment(chars: int) -> None:
    """Tell the running request's meter (if any) that one streamed fragment arrived.

    Ollama's ``/api/chat`` stream sends one NDJSON line per generated token, so the number of
    fragments is the number of tokens received so far. Never raises: a display must not break
    a model request.
    """
    meter = STREAM_METER.get()
    if meter is not None:
        with contextlib.suppress(Exception):  # progress display only
            meter(chars)
