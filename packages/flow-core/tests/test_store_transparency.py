"""The run record is a transparent decorator of the backend seam.

Every backend-facing scenario below runs twice on the same workspace bytes: once with no
store, once recording to a ``RunStore``. The reports must be equal apart from the record's id
and folder and wall-clock times (``docs/architecture.md``, "The backend seam"): whatever the
recorder adds can never hide what the run needs (the window, the delivery, the options) nor
turn a run into ``internal_error``. The CLI does the same through ``flow run``
(flow-cli's ``tests/test_run_record.py``).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from flow_core import (
    BackendError,
    ChatMessage,
    ChatResponse,
    FlowConfig,
    Runtime,
    ScriptedBackend,
    ToolCall,
)
from flow_core.config import RunsConfig
from flow_core.store import RunStore
from flow_testing.replies import review, text
from flow_testing.reports import comparable

#: The project's checks: the tests pass once app.x is 2; a lint that always passes.
CHECKS = {
    "tests": {
        "kind": "test",
        "cmd": [sys.executable, "-c", "import app, sys; sys.exit(0 if app.x == 2 else 1)"],
    },
    "lint": {"kind": "lint", "filetypes": ["python"], "cmd": [sys.executable, "-c", "pass"]},
}


def call(name: str, **args: Any) -> ChatResponse:
    return ChatResponse("", tool_calls=(ToolCall(f"c-{name}-{len(args)}", name, args),))


def edit(old: str, new: str) -> ChatResponse:
    return call("edit_file", path="app.py", old_text=old, new_text=new)


def too_long(_messages: list[ChatMessage], _tools: Sequence[Mapping[str, Any]]) -> ChatResponse:
    raise BackendError("the prompt exceeds the model's window", code="prompt_too_long")


def down(_messages: list[ChatMessage], _tools: Sequence[Mapping[str, Any]]) -> ChatResponse:
    raise BackendError("cannot reach the server", code="backend_unreachable")


PLAN = text("Plan: change x in app.py from 1 to 2.")


@dataclass
class Scenario:
    replies: list[Any]
    trusted: bool = True
    task: str = "set x to 2"
    agent: dict[str, Any] = field(default_factory=dict)
    runs: dict[str, Any] = field(default_factory=dict)
    window: int | None = None
    tool_results: str | None = None


SCENARIOS: dict[str, Scenario] = {
    "verified": Scenario(
        [PLAN, call("read_file", path="app.py"), edit("x = 1", "x = 2"), text("ok"), review(True)]
    ),
    "repair-then-verified": Scenario(
        [PLAN, edit("x = 1", "x = 3"), text("ok"), edit("x = 3", "x = 2"), text("ok"), review(True)]
    ),
    "reviewer-rejects": Scenario(
        [PLAN, edit("x = 1", "x = 2"), text("ok"), review(False, "name it better")],
        agent={"max_cycles": 1},
    ),
    "review-invalid": Scenario(
        [PLAN, edit("x = 1", "x = 2"), text("ok"), text("LGTM")], agent={"max_cycles": 1}
    ),
    "rollback-unverified": Scenario(
        [PLAN, edit("x = 1", "x = 3"), text("ok")],
        agent={"max_cycles": 1},
        runs={"on_unverified": "rollback"},
    ),
    "tool-budget": Scenario(
        [PLAN, call("read_file", path="app.py"), edit("x = 1", "x = 2"), call("list_files")],
        agent={"max_tool_calls": 2},
    ),
    "misbehaviours": Scenario(
        [
            text('{"name": "list_files", "arguments": {}}'),
            ChatResponse("", tool_calls=(ToolCall("c1", "list_files", "{}"),)),
            ChatResponse("Plan: partial", finish_reason="length"),
            PLAN,
        ],
        trusted=False,
    ),
    "surrogate-nul-long-reply": Scenario(
        [text("Plan \ud83d\x00 " + "z" * 70_000), PLAN], trusted=False
    ),
    "surrogate-task": Scenario([PLAN], trusted=False, task="fix \udcff and \x00 " + "w" * 9_000),
    "prompt-too-long": Scenario([too_long, PLAN], trusted=False),
    "backend-down": Scenario([down]),
    "context-budget": Scenario([PLAN], trusted=False, task="t " * 3_000, window=1_500),
    "window-and-delivery": Scenario(
        [PLAN, call("list_files"), edit("x = 1", "x = 2"), text("ok"), review(True)],
        window=8_192,
        tool_results="user",
    ),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_scenario_reports_the_same_with_and_without_the_store(
    name: str, tmp_path: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    scenario = SCENARIOS[name]
    config = flow_config(CHECKS, agent=scenario.agent, runs=scenario.runs)
    ws = config.workspace_dir
    (ws / "app.py").write_text("x = 1\n")
    pristine = tmp_path / "pristine"
    shutil.copytree(ws, pristine)
    store = RunStore(tmp_path / "store", RunsConfig())
    reports = []
    for recorded in (None, store):
        shutil.rmtree(ws)
        shutil.copytree(pristine, ws)
        backend = ScriptedBackend(
            scenario.replies, window=scenario.window, tool_results=scenario.tool_results
        )
        with Runtime(config, trusted=scenario.trusted, backend=backend, store=recorded) as rt:
            reports.append(rt.run(scenario.task).to_dict())
    plain, stored = reports
    assert plain["run_id"] is None
    assert stored["run_id"]
    assert "internal_error" not in [e["code"] for e in stored["errors"]]
    assert comparable(stored) == comparable(plain)
    record = store.get(stored["run_id"])
    assert record.meta["task"] == scenario.task  # lossless, whatever the text
    assert json.loads((record.dir / "report.json").read_bytes())["status"] == stored["status"]
    if scenario.tool_results is not None:
        assert stored["roles"]["coder"]["tool_results"] == scenario.tool_results
    if scenario.window is not None:
        # The limits enforced, as reported: the window less the reply's 1024 tokens, at 2
        # characters a token (run/_budget.py); the reply cap is half of it.
        enforced = (scenario.window - 1024) * 2
        planner = stored["roles"]["planner"]
        assert planner["context_window"] == scenario.window
        assert planner["context_chars_limit"] == enforced
        assert planner["reply_chars_limit"] == max(4_000, enforced // 2)
        assert stored["budgets"]["context_chars"]["limit"] == enforced
