"""Roles that stop moving end early with a named code (run/_stall.py, run/_cutoff.py).

Scripted model, real files, real check subprocesses, through ``Runtime.run``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from flow_core import ChatResponse, FlowConfig, Report, Runtime, ScriptedBackend, ToolCall
from flow_core.run._loop import CUT_PLAN_MARK
from flow_core.run._stall import StallWatch, schema_texts
from flow_core.tools._schemas import TOOL_SCHEMAS
from flow_testing.replies import call

PY = sys.executable
CHECKS = {"tests": {"cmd": [PY, "-c", "import app, sys; sys.exit(app.x != 2)"], "kind": "test"}}
LINT = {"cmd": [PY, "-c", "print('lint ok')"], "kind": "lint", "filetypes": ["python"]}


PLAN = ChatResponse("Plan: set x in app.py to 2.")


@pytest.fixture
def make(flow_config: Callable[..., FlowConfig], tmp_path: Path) -> Callable[..., FlowConfig]:
    """``flow_config`` over a workspace holding ``app.py`` (``x = 1``)."""
    (tmp_path / "ws" / "app.py").write_text("x = 1\n")
    return flow_config


def run(
    config: FlowConfig, replies: Sequence[Any], backend: ScriptedBackend | None = None
) -> tuple[Report, ScriptedBackend]:
    """A read-only run of ``replies`` (or of ``backend``): the planner alone."""
    scripted = backend or ScriptedBackend(replies)
    return Runtime(config, backend=scripted).run("set x to 2"), scripted


def errors(report: Report) -> list[tuple[str, str | None]]:
    return [(e.code, e.role) for e in report.errors]


ECHOES = [
    {"path": "relative path"},
    {"path": "  Relative path.  "},
    {"path": "<path>"},
    {"path": {"type": "string", "description": "a path"}},
]


@pytest.mark.parametrize("args", ECHOES)
def test_schema_text_as_an_argument_ends_the_role_without_running_it(
    make: Callable[..., FlowConfig], args: Mapping[str, Any]
) -> None:
    report, backend = run(make(CHECKS), [call("read_file", **args), PLAN])
    assert ("schema_echo", "planner") in errors(report)
    assert len(backend.requests) == 1  # the role ended at once
    assert [(t.name, t.ok, t.error) for t in report.tool_calls] == [
        ("read_file", False, "schema_echo")
    ]
    assert report.plan is None


def test_a_real_argument_that_mentions_schema_words_runs(make: Callable[..., FlowConfig]) -> None:
    query = call("search_text", query="relative path to the file")
    report, _ = run(make(CHECKS), [query, PLAN])
    assert "schema_echo" not in [c for c, _ in errors(report)]
    assert report.plan == PLAN.content


def test_identical_calls_end_the_role_on_the_third(make: Callable[..., FlowConfig]) -> None:
    same = [call("read_file", path="app.py") for _ in range(3)]
    report, backend = run(make(CHECKS, agent={"max_iterations": 6}), [*same, PLAN])
    assert ("repeated_call", "planner") in errors(report)
    assert [(t.ok, t.error) for t in report.tool_calls] == [
        (True, None),
        (True, None),
        (False, "repeated_call"),
    ]
    assert len(backend.requests) == 3


def test_a_write_in_between_makes_a_read_new_again(make: Callable[..., FlowConfig]) -> None:
    read = {"path": "app.py"}
    coder = [
        call("read_file", **read),
        call("read_file", **read),
        call("edit_file", path="app.py", old_text="x = 1", new_text="x = 2"),
        call("read_file", **read),
        call("read_file", **read),
        ChatResponse("Done."),
    ]
    review = ChatResponse('{"approved": true, "summary": "ok", "findings": []}')
    checks = {**CHECKS, "lint": LINT}
    config = make(checks, agent={"max_iterations": 8, "max_cycles": 1})
    report = Runtime(config, trusted=True, backend=ScriptedBackend([PLAN, *coder, review])).run(
        "set x to 2"
    )
    assert "repeated_call" not in [c for c, _ in errors(report)]
    assert report.verified, errors(report)
    assert {r: u.stopped for r, u in report.roles.items()} == dict.fromkeys(
        ("planner", "coder", "reviewer"), "answer"
    )


def test_turns_without_progress_end_the_role(make: Callable[..., FlowConfig]) -> None:
    bad = [
        ChatResponse(""),
        call("run_shell", cmd="ls"),
        call("read_file", path="missing.py"),
    ]
    report, backend = run(make(CHECKS, agent={"max_iterations": 6}), [*bad, PLAN])
    assert ("no_progress", "planner") in errors(report)
    assert "budget_iterations" not in [c for c, _ in errors(report)]
    assert len(backend.requests) == 3
    assert report.plan is None
    assert report.roles["planner"].stopped == "no_progress"


def test_a_call_on_the_last_turn_is_not_run(make: Callable[..., FlowConfig]) -> None:
    replies = [call("list_files"), call("read_file", path="app.py")]
    report, backend = run(make(CHECKS, agent={"max_iterations": 2}), replies)
    assert [(t.name, t.ok, t.error) for t in report.tool_calls] == [
        ("list_files", True, None),
        ("read_file", False, "budget_iterations"),
    ]
    ended = [e for e in report.errors if e.code == "budget_iterations"]
    assert len(ended) == 1
    assert "last turn" in ended[0].message
    assert len(backend.requests) == 2
    assert report.roles["planner"].stopped == "budget_iterations"


class WindowedBackend(ScriptedBackend):
    """A scripted server that reports an 8,192-token window."""

    def context_window(self, model: str, options: object = None) -> int:
        return 8_192


@pytest.mark.parametrize(
    ("prompt", "reply", "code"),
    [
        (467, 1_024, "reply_cap"),  # the reply reached max_reply_tokens (default 1024)
        (467, 300, "reply_cap"),  # well inside the window: a cap the server applied
        (7_300, 880, "context_overflow"),  # prompt + reply filled the window
    ],
)
def test_a_reply_cut_by_its_cap_is_told_apart_from_the_window(
    make: Callable[..., FlowConfig], prompt: int, reply: int, code: str
) -> None:
    cut = ChatResponse(
        "Plan: partial", finish_reason="length", prompt_tokens=prompt, completion_tokens=reply
    )
    backend = WindowedBackend([cut, PLAN])
    report, _ = run(make(CHECKS), [], backend)
    found = [e for e in report.errors if e.code in ("reply_cap", "context_overflow")]
    assert [e.code for e in found] == [code]
    fix = "max_reply_tokens" if code == "reply_cap" else "context_tokens"
    assert fix in found[0].message
    assert "answer more briefly" not in found[0].message  # that text is for the model
    # A planner's cut text is still a plan: kept, marked as cut, and not asked again.
    assert len(backend.requests) == 1
    assert report.plan == "Plan: partial" + CUT_PLAN_MARK
    assert report.roles["planner"].stopped == "answer"


@pytest.mark.parametrize(
    "cut",
    [
        ChatResponse("", finish_reason="length", completion_tokens=128),  # no text at all
        ChatResponse(  # a call cut off mid-way: not a plan
            '<tool_call>{"name": "read_file", "arguments": {"path": "app',
            finish_reason="length",
            completion_tokens=128,
        ),
    ],
)
def test_a_cut_reply_without_plain_text_is_asked_again(
    make: Callable[..., FlowConfig], cut: ChatResponse
) -> None:
    backend = ScriptedBackend([cut, PLAN])
    report, _ = run(make(CHECKS), [], backend)
    assert len(backend.requests) == 2
    # The model is told, in its own words.
    assert "answer more briefly" in backend.requests[1].messages[-1].content
    assert report.plan == PLAN.content


def test_a_coders_cut_answer_is_not_taken_as_its_answer(make: Callable[..., FlowConfig]) -> None:
    cut = ChatResponse("Done: I set x", finish_reason="length", completion_tokens=256)
    coder = [call("write_file", path="app.py", content="x = 2\n"), cut, ChatResponse("Done.")]
    review = ChatResponse('{"approved": true, "summary": "ok", "findings": []}')
    config = make({**CHECKS, "lint": LINT}, agent={"max_iterations": 6, "max_cycles": 1})
    backend = ScriptedBackend([PLAN, *coder, review])
    report = Runtime(config, trusted=True, backend=backend).run("set x to 2")
    assert report.verified, (errors(report), report.verification)
    told = [r for r in backend.requests if "answer more briefly" in str(r.messages[-1].content)]
    assert len(told) == 1
    assert report.roles["coder"].stopped == "answer"


def test_schema_texts_cover_every_described_parameter() -> None:
    texts = schema_texts(TOOL_SCHEMAS.values())
    assert "directory; '' for the root" in texts["list_files"]
    assert "<path>" in texts["outline"]
    watch = StallWatch(list(TOOL_SCHEMAS.values()), max_repeated_calls=2, max_idle_turns=3)
    ok = ToolCall("a", "search_text", {"query": "string"})
    assert watch.screen([ok]) is None  # a type name is a legitimate search
