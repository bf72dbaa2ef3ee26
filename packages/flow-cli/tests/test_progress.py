"""The live view's state machine, in-process (what it shows is tested through a pty in test_tui)."""

from __future__ import annotations

from rich.console import Console

from flow_cli._progress import ProgressState
from flow_core import Event


def _text(state: ProgressState) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(state.render())
    return console.export_text()


def test_after_stopping_the_view_never_moves_to_another_role() -> None:
    state = ProgressState()
    state.update(Event("role_started", role="planner", turn=None))
    state.update(Event("turn", role="planner", turn=1))
    state.stopping()
    assert "stopping…" in _text(state)
    # Events still in flight when the user pressed Ctrl-C must not move the view on.
    state.update(Event("role_started", role="coder", cycle=1))
    state.update(Event("turn", role="coder", cycle=1, turn=1))
    shown = _text(state)
    assert "coder" not in shown
    assert "stopping…" in shown
    state.update(Event("run_finished", ok=False, status="interrupted"))
    assert "finished: interrupted" in _text(state)


def test_run_finished_shows_the_reports_status_word() -> None:
    state = ProgressState()
    state.update(Event("run_finished", ok=False, status="unverified"))
    shown = _text(state)
    assert "finished: unverified" in shown
    assert "failed" not in shown


def test_model_time_and_tokens_show_while_waiting_and_clear_after_the_reply() -> None:
    state = ProgressState()
    state.update(Event("turn", role="coder", turn=2))
    state.update(Event("model_progress", role="coder", turn=2, tokens=7, chars=30))
    shown = _text(state)
    assert "coder waiting for the model" in shown
    assert "7 tokens received" in shown
    state.update(Event("model_reply", role="coder", turn=2, duration_ms=5.0))
    assert "waiting" not in _text(state)
