"""Per-run state: one ``RunState`` is created for every ``Runtime.run``/``check``.

Everything a run accumulates (timings, errors, role usage, the tool-call ledger, cycle history,
the last checks and verdict) lives here, so nothing from an earlier run can leak into the next
report. The state also carries the run's event sink and its stop flag.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from flow_core._protocols import Event, EventSink
from flow_core._report import CheckResult, CycleRecord, ErrorInfo, RoleUsage, Verification
from flow_core.run._journal import NULL_JOURNAL, Journal

if TYPE_CHECKING:
    from flow_core._codes import ErrorCode
    from flow_core.tools import ToolLedger

__all__ = ["Interrupted", "RoleOutcome", "RunEnded", "RunState"]


class Interrupted(Exception):
    """Raised inside a run or check when ``Runtime.interrupt()`` was called."""


class RunEnded(Exception):
    """A run-wide budget was spent: stop every role.

    Attributes:
        code: the budget's error code, ``budget_tool_calls`` or ``budget_time``.
    """

    def __init__(self, code: str = "budget_tool_calls") -> None:
        super().__init__(code)
        self.code = code


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
    context_limit: int | None = None  # the character budget in force for ``max_context``
    cycles: int = 0
    history: list[CycleRecord] = field(default_factory=list)
    final_checks: list[CheckResult] = field(default_factory=list)
    #: suppression comments the model added, as of the last verification (verify/_suppress.py)
    suppressions: list[str] = field(default_factory=list)
    verification: Verification | None = None
    journal: Journal = NULL_JOURNAL  # the run's record in the run store (``_journal``)
    max_seconds: float | None = None  # the run's wall-clock limit (``agent.max_seconds``)
    out_of_time: bool = False
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

    def emit(self, event: Event) -> None:
        """Send one progress ``Event``, stamped with the run's elapsed time; an exception from
        the sink is ignored (a broken display must not break the run)."""
        if self.on_event is None:
            return
        with contextlib.suppress(Exception):
            self.on_event(replace(event, elapsed_ms=self.elapsed_ms()))

    def error(
        self, code: ErrorCode, message: str, *, role: str | None = None, cycle: int | None = None
    ) -> None:
        """Record one error for the report (``code`` from ``flow_core.ERROR_CODES``)."""
        self.errors.append(ErrorInfo(code=code, message=message, role=role, cycle=cycle))

    def note_context(self, chars: int, limit: int) -> None:
        """Account one request of ``chars`` characters sent under a budget of ``limit``: the
        run's largest request and the budget it was sent under (``budgets.context_chars``).
        ``chars`` 0 only notes the first budget, for a run that never sends a request."""
        if self.context_limit is None or chars > self.max_context:
            self.max_context = max(self.max_context, chars)
            self.context_limit = limit

    def past_deadline(self) -> bool:
        """Whether the run's ``max_seconds`` (wall clock, seconds) has run out."""
        return self.max_seconds is not None and self.elapsed_ms() >= self.max_seconds * 1000.0

    def end_for_time(self) -> RunEnded:
        """Record ``budget_time`` once and return the ``RunEnded`` that stops every role."""
        if not self.out_of_time:
            self.out_of_time = True
            self.error(
                "budget_time",
                f"the run reached its wall-clock limit of {self.max_seconds:g} s "
                "(agent.max_seconds); the model request in flight was closed",
            )
        return RunEnded("budget_time")

    def check_stop(self) -> None:
        """Raise ``Interrupted`` when the run was asked to stop."""
        if self.stop:
            raise Interrupted

    def check_time(self) -> None:
        """Raise ``Interrupted`` when asked to stop, ``RunEnded("budget_time")`` when the
        run's ``max_seconds`` ran out (inside a role only: ``RunDriver`` catches it)."""
        self.check_stop()
        if self.past_deadline():
            raise self.end_for_time()
