"""Per-run state: one ``RunState`` is created for every ``Runtime.run``/``check``.

Everything a run accumulates (timings, errors, role usage, the tool-call ledger, cycle history,
the last checks and verdict) lives here, so nothing from an earlier run can leak into the next
report. The state also carries the run's event sink and its stop flag.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flow_core._protocols import Event, EventKind, EventSink, Role
from flow_core._report import CheckResult, CycleRecord, ErrorInfo, RoleUsage, Verification
from flow_core.run._journal import NULL_JOURNAL, Journal

if TYPE_CHECKING:
    from flow_core.tools import ToolLedger

__all__ = ["Interrupted", "RoleOutcome", "RunEnded", "RunState"]


class Interrupted(Exception):
    """Raised inside a run or check when ``Runtime.interrupt()`` was called."""


class RunEnded(Exception):
    """A run-wide budget was spent (tool calls): stop every role."""


@dataclass
class RoleOutcome:
    """How one role invocation ended: ``completed`` with its final text, or a failure code."""

    completed: bool
    text: str = ""
    failure: str | None = None  # error code when not completed


@dataclass
class RunState:
    """What one run or check accumulates (times in milliseconds, sizes in characters).

    Args:
        max_tool_calls: the run's tool-call budget (``agent.max_tool_calls``).
        on_event: the host's event sink, or None.
    """

    max_tool_calls: int
    on_event: EventSink | None = None
    task: str | None = None
    stop: bool = False
    t0: float = field(default_factory=time.perf_counter)
    model_ms: float = 0.0
    checks_ms: float = 0.0
    plan: str | None = None
    errors: list[ErrorInfo] = field(default_factory=list)
    roles: dict[str, RoleUsage] = field(default_factory=dict)
    max_turns: int = 0
    max_context: int = 0
    cycles: int = 0
    history: list[CycleRecord] = field(default_factory=list)
    final_checks: list[CheckResult] = field(default_factory=list)
    verification: Verification | None = None
    journal: Journal = NULL_JOURNAL  # the run's record in the run store (``_journal``)
    _ledger: ToolLedger | None = field(default=None, init=False, repr=False)

    @property
    def ledger(self) -> ToolLedger:
        """The run's tool-call ledger, made on first use (the file tools load only then)."""
        if self._ledger is None:
            from flow_core.tools import ToolLedger

            self._ledger = ToolLedger(limit=self.max_tool_calls)
        return self._ledger

    def elapsed_ms(self) -> float:
        """Milliseconds since the run started."""
        return (time.perf_counter() - self.t0) * 1000.0

    def emit(
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
        """Send one progress ``Event``; an exception from the sink is ignored."""
        if self.on_event is None:
            return
        event = Event(
            kind=kind,
            role=role,
            cycle=cycle,
            turn=turn,
            name=name,
            ok=ok,
            elapsed_ms=self.elapsed_ms(),
            detail=detail or {},
        )
        # A broken display must not break the run.
        with contextlib.suppress(Exception):
            self.on_event(event)

    def error(
        self, code: str, message: str, *, role: str | None = None, cycle: int | None = None
    ) -> None:
        """Record one error for the report (``code`` from ``flow_core.ERROR_CODES``)."""
        self.errors.append(ErrorInfo(code=code, message=message, role=role, cycle=cycle))

    def check_stop(self) -> None:
        """Raise ``Interrupted`` when the run was asked to stop."""
        if self.stop:
            raise Interrupted
