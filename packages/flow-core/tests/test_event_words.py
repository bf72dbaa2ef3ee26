"""``describe_event``: the one wording of progress that the CLI's log and MCP progress share."""

from __future__ import annotations

import pytest

from flow_core import Event, describe_event


def test_every_kind_but_streamed_tokens_gets_its_line() -> None:
    reply = Event(
        "model_reply",
        role="coder",
        cycle=1,
        turn=2,
        duration_ms=4210.0,
        prompt_tokens=812,
        completion_tokens=37,
    )
    assert describe_event(reply) == (
        "coder: model replied in 4.2 s (812 prompt, 37 reply tokens) (cycle 1)"
    )
    assert describe_event(Event("model_progress", role="coder", tokens=5, chars=20)) is None
    assert describe_event(Event("turn", role="planner", turn=1)) == "planner: model turn 1"
    baseline = Event("check_finished", name="tests", ok=False, status="failed", baseline=True)
    assert describe_event(baseline) == "check tests: failed (baseline)"
    refused = Event("tool_call", role="coder", name="read_file", ok=False, error="path_outside")
    assert describe_event(refused) == "coder: tool read_file refused (path_outside)"


@pytest.mark.parametrize("kind", ["model_reply", "turn", "role_started", "tool_call"])
def test_only_run_finished_says_the_run_finished(kind: str) -> None:
    # Before the words were shared, the MCP relay fell through to "run finished: failed"
    # for every model reply and streamed token, mid-run.
    line = describe_event(Event(kind, role="coder", name="list_files", ok=None))  # type: ignore[arg-type]
    assert line is not None
    assert "finished" not in line
    assert describe_event(Event("run_finished", status="unverified")) == (
        "run finished: unverified"
    )


def test_a_name_the_model_made_up_stays_one_bounded_line() -> None:
    name = "x\x1b[31m\nrm -rf /\ud800" * 1000
    line = describe_event(Event("tool_call", role="coder", name=name, ok=False))
    assert line is not None
    assert line.isprintable()
    assert "\x1b" not in line
    assert len(line) < 120
    line.encode("utf-8")  # no lone surrogate left
