"""Progress: the active role, turn, recent tool calls and running checks.

Fed by flow-core ``Event``s (which may arrive from any thread). On a terminal it is drawn
live with rich ``Live`` (the CLI's stderr, the TUI's console); when the CLI's stderr is not a
terminal (a pipe, a log file, a CI job), ``flow run`` writes one line per event instead, so a
run of many minutes is never silent (flow-cli README, "Progress").
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from flow_core import describe_event

if TYPE_CHECKING:
    from collections.abc import Callable

    from flow_core import Event

_RECENT_TOOLS = 6
_CALL_WIDTH = 110


def describe_call(
    name: str,
    arguments: Mapping[str, Any] | None,
    error: str | None = None,
    message: str | None = None,
    *,
    width: int = _CALL_WIDTH,
) -> str:
    """One line for a tool call: ``name(key=value, ...)`` and, when it failed, code and message.

    Values are shown as in the report (long strings already cut there) and the whole line is
    cut to ``width`` characters; control characters are shown escaped.
    """
    shown = ", ".join(f"{k}={_short(v)}" for k, v in (arguments or {}).items())
    line = f"{name}({shown})"
    if error:
        line += f": {error}" + (f": {message}" if message else "")
    line = line.encode("unicode_escape").decode("ascii") if not line.isprintable() else line
    return line if len(line) <= width else line[: width - 1] + "…"


def _short(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:39] + "…"


@dataclass
class ProgressState:
    """What the live view shows. Mutated under ``lock`` by ``update``.

    With ``checks_only`` (``flow check``, the TUI's ``/check``: no roles, no tool calls) the
    view is just the checks, each with its name and elapsed time.
    """

    checks_only: bool = False

    role: str | None = None
    cycle: int | None = None
    turn: int | None = None
    tools: deque[tuple[str, bool | None, str]] = field(
        default_factory=lambda: deque(maxlen=_RECENT_TOOLS)
    )
    tool_count: int = 0
    running_checks: dict[str, float] = field(default_factory=dict)
    finished_checks: list[tuple[str, bool | None, float]] = field(default_factory=list)
    phase: str = "starting"
    #: When the model request in flight started (monotonic seconds), None when none is.
    model_since: float | None = None
    #: Streamed tokens received for the request in flight.
    model_tokens: int = 0
    #: Set by ``stopping()``: the view then shows "stopping…" and no longer follows roles.
    halted: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def stopping(self) -> None:
        """The user asked to stop: say so at once and freeze the role/turn display."""
        with self.lock:
            self.halted = True
            self.model_since = None
            self.phase = "stopping… (Ctrl-C again to force)"

    def update(self, event: Event) -> None:
        """Apply one event."""
        with self.lock:
            kind = event.kind
            if self.halted:
                # After a stop request the view never moves on to another role or turn; only
                # checks being killed and the final status still show.
                if kind == "check_finished":
                    self._check_finished(event)
                elif kind == "run_finished":
                    self.phase = "finished: " + (event.status or "interrupted")
                return
            if event.role is not None:
                self.role = event.role
            if event.cycle is not None:
                self.cycle = event.cycle
            if event.turn is not None:
                self.turn = event.turn
            if kind == "role_started":
                self.turn = event.turn
                self.phase = f"{event.role} working"
            elif kind == "turn":
                self.model_since = time.monotonic()
                self.model_tokens = 0
                self.phase = f"{event.role} waiting for the model"
            elif kind == "model_progress":
                if event.tokens is not None:
                    self.model_tokens = event.tokens
            elif kind == "model_reply":
                self.model_since = None
                self.phase = f"{event.role} working"
            elif kind == "tool_call":
                self.tool_count += 1
                line = describe_call(event.name or "?", event.arguments, event.error, event.message)
                self.tools.append((event.name or "?", event.ok, line))
            elif kind == "check_started":
                self.running_checks[event.name or "?"] = time.monotonic()
                self.phase = "checks running"
            elif kind == "check_finished":
                self._check_finished(event)
            elif kind == "verification":
                self.phase = "verification " + ("passed" if event.ok else "did not pass")
            elif kind == "review":
                self.phase = "review " + ("approved" if event.ok else "not approved")
            elif kind == "run_finished":
                # The report's own status word (verified, unverified, interrupted, ...).
                self.phase = "finished: " + (event.status or "-")

    def _check_finished(self, event: Event) -> None:
        """Move a check from running to finished. Under ``lock``."""
        name = event.name or "?"
        started = self.running_checks.pop(name, time.monotonic())
        duration = event.duration_ms
        elapsed = duration / 1000 if duration is not None else time.monotonic() - started
        self.finished_checks.append((name, event.ok, elapsed))

    def render(self) -> RenderableType:
        """The current view as a rich renderable."""
        with self.lock:
            if self.checks_only:
                return Group(*self._check_lines())
            head = Text()
            head.append("role ", style="dim")
            head.append(self.role or "-", style="bold cyan")
            if self.cycle is not None:
                head.append("  cycle ", style="dim")
                head.append(str(self.cycle))
            if self.turn is not None:
                head.append("  turn ", style="dim")
                head.append(str(self.turn))
            head.append("  tool calls ", style="dim")
            head.append(str(self.tool_count))
            phase = self.phase
            if self.model_since is not None:
                phase += f" {time.monotonic() - self.model_since:.1f}s"
                if self.model_tokens:
                    plural = "" if self.model_tokens == 1 else "s"
                    phase += f", {self.model_tokens} token{plural} received"
            head.append(f"  {phase}", style="italic")
            lines: list[RenderableType] = [head]
            for _name, ok, line in self.tools:
                mark, style = _mark(ok)
                lines.append(Text.assemble(("  tool ", "dim"), (mark, style), " ", line))
            lines.extend(Text.assemble(("  check ", "dim"), line) for line in self._check_lines())
            return Group(*lines)

    def _check_lines(self) -> list[Text]:
        """Finished (the last four) and running checks: mark, name, seconds. Under ``lock``."""
        lines: list[Text] = []
        now = time.monotonic()
        finished = self.finished_checks if self.checks_only else self.finished_checks[-4:]
        for name, ok, elapsed in finished:
            mark, style = _mark(ok)
            lines.append(Text.assemble((mark, style), f" {name} {elapsed:.1f}s"))
        for name, started in self.running_checks.items():
            lines.append(Text.assemble(("…", "yellow"), f" {name} running {now - started:.1f}s"))
        return lines


def _mark(ok: bool | None) -> tuple[str, str]:
    if ok is None:
        return "…", "yellow"
    return ("✓", "green") if ok else ("✗", "red")


class LiveProgress:
    """A ``ProgressState`` drawn live on a console until ``stop``."""

    def __init__(
        self, console: Console, *, transient: bool = True, checks_only: bool = False
    ) -> None:
        self.state = ProgressState(checks_only=checks_only)
        self._live = Live(
            console=console,
            get_renderable=self.state.render,
            refresh_per_second=4,
            transient=transient,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._started = False

    @classmethod
    def on_stderr(cls, *, checks_only: bool = False) -> LiveProgress:
        """A live view on stderr (the CLI's progress); ``checks_only`` for ``flow check``."""
        return cls(Console(stderr=True, emoji=False), checks_only=checks_only)

    def on_event(self, event: Event) -> None:
        """Event sink for ``flow_core.Runtime(on_event=...)``; never raises."""
        with contextlib.suppress(Exception):  # a display must never break a run
            self.state.update(event)

    def stopping(self) -> None:
        """Show "stopping…" now and stop following roles (the first Ctrl-C)."""
        self.state.stopping()
        with contextlib.suppress(Exception):
            self._live.refresh()

    def start(self) -> None:
        """Begin drawing."""
        if not self._started:
            self._live.start()
            self._started = True

    def stop(self) -> None:
        """Stop drawing (idempotent)."""
        if self._started:
            self._started = False
            self._live.stop()


class Progress(Protocol):
    """What the CLI drives while ``check`` or ``run`` works: a live view or a line log."""

    def on_event(self, event: Event) -> None:
        """Event sink for ``flow_core.Runtime(on_event=...)``; never raises."""

    def stopping(self) -> None:
        """The first Ctrl-C or SIGTERM: say that the command is stopping (signal-safe)."""

    def start(self) -> None:
        """Begin showing progress."""

    def stop(self) -> None:
        """Stop showing progress (idempotent)."""


def _write_fd2(text: str) -> None:
    """Write to fd 2 in one ``write``, outside Python's buffers: safe from any thread and
    inside a signal handler, and a line shorter than ``PIPE_BUF`` is never interleaved."""
    with contextlib.suppress(OSError):
        os.write(2, text.encode("utf-8", "replace"))


class LineProgress:
    """One line per progress event, ``[flow +12.3s] coder: model turn 2 (cycle 1)``.

    The words are ``flow_core.describe_event``'s (the MCP server's progress messages use the
    same), prefixed with the seconds since ``start``. The prefix is not ``flow: `` on purpose:
    a line starting ``flow: `` is a message that ends with its ``[code]``, and a script that
    reads those must not meet progress. Streamed-token events get no line; a
    tool call's arguments are never shown (they are the model's text, and a log is often kept).

    Args:
        write: where a finished line goes (default: fd 2, one ``write`` per line).
    """

    def __init__(self, write: Callable[[str], None] = _write_fd2) -> None:
        self._write = write
        self._started = time.monotonic()
        self._halted = False

    def on_event(self, event: Event) -> None:
        """Write the event's line; never raises (a display must never break a run)."""
        with contextlib.suppress(Exception):
            line = describe_event(event)
            if line is not None and not (self._halted and event.kind not in _AFTER_STOP):
                self._write(f"[flow +{time.monotonic() - self._started:.1f}s] {line}\n")

    def stopping(self) -> None:
        """Say "stopping…" now; afterwards only checks and the run's end get lines."""
        self._halted = True
        self._write("flow: stopping… (press Ctrl-C again to force)\n")

    def start(self) -> None:
        """Count seconds from now."""
        self._started = time.monotonic()

    def stop(self) -> None:
        """Nothing to tear down: every line is already written."""


#: The events a stopping run still logs: checks being killed and how the run ended.
_AFTER_STOP = frozenset({"check_finished", "run_finished"})


def progress_on_stderr(*, run: bool) -> Progress | None:
    """The CLI's progress for ``run`` (``run=True``) or ``check``: drawn live when stderr is a
    terminal; as lines for ``run`` when it is not (a long run must not look hung in a log or
    a CI job); nothing for ``check`` then, whose failures get their own lines at the end."""
    if sys.stderr.isatty():
        return LiveProgress.on_stderr(checks_only=not run)
    return LineProgress() if run else None
