"""The runtime's side of the run store: what a run writes into its record as it goes.

Each ``Run`` holds one ``Journal`` (``NULL_JOURNAL`` when no store is attached) and
calls it at six points: each model request and reply (through ``wrap``), each tool call with
its arguments and the result the model saw, each check result, each pre-image before a first
write, what each write left right after it, and the end of the run (report, plan, diff,
manifest). Everything but the pre-image is best effort: a record that cannot be written never
stops a run, while a write whose pre-image cannot be kept is refused (``flow_core.store``).
Source: flow-core's README, "Run store".
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flow_core._protocols import ChatBackend, ChatMessage, ChatResponse, ToolCall

if TYPE_CHECKING:
    from flow_core._report import CheckResult, Report
    from flow_core.store import RunRecord
    from flow_core.tools._calls import ToolOutcome

__all__ = ["NULL_JOURNAL", "Journal"]


def _message(msg: ChatMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": msg.role, "content": msg.content}
    if msg.tool_calls:
        out["tool_calls"] = [dataclasses.asdict(c) for c in msg.tool_calls]
    if msg.tool_call_id is not None:
        out["tool_call_id"] = msg.tool_call_id
    if msg.name is not None:
        out["name"] = msg.name
    return out


class _RecordingBackend:
    """A ``ChatBackend`` that writes each request and reply to the record, then delegates.

    A decorator of the seam: every ``ChatBackend`` member is written out here and delegates
    to the wrapped backend (``Journal.wrap`` returns it as a ``ChatBackend``, so mypy fails
    when the protocol gains a member this class lacks). Only ``close`` does not delegate: the
    runtime owns and closes the real backend.
    """

    def __init__(self, inner: ChatBackend, record: RunRecord, where: Mapping[str, Any]) -> None:
        self._inner = inner
        self._record = record
        self._where = dict(where)

    def chat(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        format: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> ChatResponse:
        names = [str(t.get("function", {}).get("name", "")) for t in tools]
        self._record.model_request(
            key=f"{self._where.get('role')}:{self._where.get('cycle')}",
            model=model,
            messages=[_message(m) for m in messages],
            tools=names,
            response_format=format,
            **self._where,
        )
        try:
            response = self._inner.chat(
                model, messages, tools=tools, format=format, options=options
            )
        except Exception as err:
            self._record.transcript("model_error", error=repr(err), **self._where)
            raise
        self._record.transcript(
            "model_reply",
            content=response.content,
            reasoning=response.reasoning,
            tool_calls=[dataclasses.asdict(c) for c in response.tool_calls],
            finish_reason=response.finish_reason,
            model=response.model,
            duration_ms=response.duration_ms,
            prompt_tokens=response.prompt_tokens,
            completion_tokens=response.completion_tokens,
            **self._where,
        )
        return response

    def context_window(self, model: str, options: Mapping[str, Any] | None = None) -> int | None:
        return self._inner.context_window(model, options)

    def tool_results_in_use(self, model: str) -> str | None:
        return self._inner.tool_results_in_use(model)

    def tool_definitions_reach(self, model: str) -> bool:
        return self._inner.tool_definitions_reach(model)

    def list_models(self) -> list[str]:
        return self._inner.list_models()

    def close(self) -> None:  # the runtime owns and closes the real backend
        return None


class Journal:
    """Writes one run into its ``RunRecord`` (see the module docstring).

    Args:
        record: the run's record, or None (nothing is written).
    """

    def __init__(self, record: RunRecord | None) -> None:
        self.record = record

    def wrap(self, backend: ChatBackend, **where: Any) -> ChatBackend:
        """``backend`` itself, or a recording wrapper when a record is attached."""
        if self.record is None:
            return backend
        return _RecordingBackend(backend, self.record, where)

    def note(self, type_: str, **fields: Any) -> None:
        """Append one transcript line (best effort)."""
        if self.record is not None:
            self.record.transcript(type_, **fields)

    def tool_call(self, call: ToolCall, outcome: ToolOutcome, **where: Any) -> None:
        """One tool call: the arguments as the model sent them and the result it was shown.

        What a write left is recorded by ``written``, right after the write itself.
        """
        self.note(
            "tool_call",
            id=outcome.id,
            name=call.name,
            arguments=call.arguments,
            ok=outcome.ok,
            error=outcome.error,
            result=outcome.content,
            **where,
        )

    def check(self, result: CheckResult, cycle: int | None) -> None:
        """One check's result with its output tail."""
        self.note("check", cycle=cycle, **result.model_dump(mode="json"))

    def plan(self, text: str) -> None:
        """Write ``plan.md`` as soon as the planner finished (best effort)."""
        if self.record is not None:
            from flow_core.store._bytes import text_bytes

            with contextlib.suppress(Exception):
                self.record.write_file("plan.md", text_bytes(text))

    def pre_image(self, path: str, data: bytes | None, mode: int | None = None) -> None:
        """Keep a pre-image before a first write; raises when it cannot (see RunRecord)."""
        if self.record is not None:
            self.record.pre_image(path, data, mode)

    def written(self, path: str, digest: str | None, mode: int | None) -> None:
        """Record what Flow's own write just left in ``path`` (hash of the bytes written and
        the bits they got), so a run killed later still tells undo what the file should hold.
        Never called with a later read of the disk: that could be someone else's edit."""
        if self.record is not None:
            with contextlib.suppress(Exception):
                self.record.post_state(path, digest, mode)

    def check_group(self, pgid: int) -> None:
        """Note a check's process group as it starts (``RunRecord.check_group``)."""
        if self.record is not None:
            with contextlib.suppress(Exception):
                self.record.check_group(pgid)

    def finish(self, report: Report, **meta: Any) -> None:
        """Write report, diff and manifest; set the final status (best effort)."""
        record = self.record
        if record is None:
            return
        from flow_core.store._bytes import json_bytes, text_bytes

        with contextlib.suppress(Exception):
            if report.plan is not None:
                record.write_file("plan.md", text_bytes(report.plan))
            record.write_file("diff.patch", text_bytes(report.diff))
            # The report as the user saw it: valid Unicode (``Report.to_dict``).
            record.write_file("report.json", json_bytes(report.to_dict(), indent=2))
        record.finish(
            report.status,
            verified=report.verified,
            changed_files=list(report.changed_files),
            **meta,
        )


#: The journal of a run with no store attached: every call does nothing.
NULL_JOURNAL = Journal(None)
