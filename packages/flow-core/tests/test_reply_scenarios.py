"""Whole runs on the replies of issue 14: nothing the model did not commit to is executed, and
nothing malformed crashes the run. Scripted model (and the Ollama decoder through
httpx.MockTransport), real files in tmp_path, real check subprocesses."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from flow_core import (
    ChatResponse,
    FlowConfig,
    OllamaBackend,
    Report,
    Runtime,
    ScriptedBackend,
    ToolCall,
)
from flow_core.models import HTTPSettings

PY = sys.executable
TESTS = {"cmd": [PY, "-c", "import app, sys; sys.exit(0 if app.x == 2 else 1)"], "kind": "test"}
LINT = {"cmd": [PY, "-c", "print('lint ok')"], "kind": "lint", "filetypes": ["python"]}
CHECKS = {"tests": TESTS, "lint": LINT}
PLAN = ChatResponse("Plan: set x in app.py to 2.")
REVIEW_OK = ChatResponse(json.dumps({"approved": True, "summary": "ok", "findings": []}))
README = "# Project\n\nA long and careful description that must survive.\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    (root / "app.py").write_text("x = 1\n")
    (root / "README.md").write_text(README)
    return root


def run(config: FlowConfig, replies: list[Any]) -> tuple[Report, ScriptedBackend]:
    backend = ScriptedBackend(replies)
    report = Runtime(config, trusted=True, backend=backend).run("set x to 2")
    Report.model_validate_json(report.to_json())
    report.to_json().encode("utf-8")
    return report, backend


def codes(report: Report) -> list[str]:
    return [e.code for e in report.errors]


def edit_x() -> ChatResponse:
    return ChatResponse(
        "",
        tool_calls=(
            ToolCall(
                "e1", "edit_file", {"path": "app.py", "old_text": "x = 1", "new_text": "x = 2"}
            ),
        ),
    )


def test_write_cut_off_by_the_length_limit_is_never_executed(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    cut = ChatResponse(
        "<function=write_file>\n<parameter=path>\nREADME.md\n</parameter>\n<parameter=content>\n"
        "# Project\n\nA long and car",
        finish_reason="length",
    )
    structured_cut = ChatResponse(
        "",
        tool_calls=(ToolCall("w", "write_file", {"path": "README.md", "content": "# Pro"}),),
        finish_reason="length",
    )
    report, backend = run(
        flow_config(CHECKS, agent={"max_cycles": 1}),
        [PLAN, cut, structured_cut, edit_x(), ChatResponse("Done."), REVIEW_OK],
    )
    assert (ws / "README.md").read_text() == README
    assert report.verified
    assert codes(report).count("call_cut_off") == 2
    assert [r.name for r in report.tool_calls] == ["edit_file"]
    # The structured call was answered with the cut-off error under its id.
    answers = [m for m in backend.requests[3].messages if m.role == "tool"]
    assert [(m.tool_call_id, m.content.split(":")[0]) for m in answers] == [
        ("w", "error (call_cut_off)")
    ]


def test_final_answer_quoting_a_call_shaped_json_is_accepted(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    answer = ChatResponse(
        "Done. Tools in this project answer with objects like\n```json\n"
        '{"name": "read_file", "arguments": {"path": "app.py"}}\n```'
    )
    report, _ = run(flow_config(CHECKS), [PLAN, edit_x(), answer, REVIEW_OK])
    assert report.verified, codes(report)
    assert "unknown_tool" not in codes(report)
    assert "budget_iterations" not in codes(report)


def test_lone_surrogate_in_a_write_costs_a_turn_not_the_run(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    bad = ChatResponse(
        "",
        tool_calls=(
            ToolCall("r", "read_file", {"path": "app.py"}),
            ToolCall("w", "write_file", {"path": "notes.md", "content": "smile \ud83d"}),
        ),
    )
    report, _ = run(flow_config(CHECKS), [PLAN, bad, edit_x(), ChatResponse("Done."), REVIEW_OK])
    assert report.status == "verified"
    assert report.plan == "Plan: set x in app.py to 2."
    assert [r.name for r in report.tool_calls] == ["read_file", "edit_file"]
    assert "invalid_arguments" in codes(report)
    assert "internal_error" not in codes(report)
    assert not (ws / "notes.md").exists()


def test_duplicate_call_ids_get_one_result_each(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    twice = ChatResponse(
        "",
        tool_calls=(
            ToolCall("call_0", "read_file", {"path": "app.py"}),
            ToolCall("call_0", "read_file", {"path": "README.md"}),
        ),
    )
    report, backend = run(
        flow_config(CHECKS), [PLAN, twice, edit_x(), ChatResponse("Done."), REVIEW_OK]
    )
    assert report.verified
    after = backend.requests[2].messages
    (assistant,) = [m for m in after if m.role == "assistant" and m.tool_calls]
    ids = [c.id for c in assistant.tool_calls]
    assert ids == ["call_0", "call_0~2"]
    results = {m.tool_call_id: m.content for m in after if m.role == "tool"}
    assert set(results) == set(ids)
    assert "x = 1" in results["call_0"]
    assert "A long and careful" in results["call_0~2"]


def test_planner_text_with_a_lone_surrogate_is_classified_and_the_next_request_encodes(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    replies = [
        {"message": {"content": "Plan: \ud83d fix x"}, "done": True, "done_reason": "stop"},
        {"message": {"content": "Plan: set x to 2."}, "done": True, "done_reason": "stop"},
    ]
    bodies: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/show":  # the model's window
            return httpx.Response(200, json={"parameters": "num_ctx 8192"})
        if request.url.path == "/api/tags":  # the preflight's model list
            return httpx.Response(200, json={"models": []})
        bodies.append(request.content)
        return httpx.Response(200, content=json.dumps(replies[len(bodies) - 1]).encode("ascii"))

    backend = OllamaBackend(
        HTTPSettings("http://127.0.0.1:1", timeout=5),
        stream=False,
        transport=httpx.MockTransport(handler),
    )
    rt = Runtime(flow_config(CHECKS), trusted=False, backend=backend)
    report = rt.run("fix x")
    rt.close()
    assert report.status == "read_only"
    assert report.plan == "Plan: set x to 2."
    assert codes(report)[:1] == ["invalid_unicode"]
    second = json.loads(bodies[1].decode("utf-8"))  # strict UTF-8
    assistant = [m for m in second["messages"] if m["role"] == "assistant"]
    assert assistant[0]["content"] == "Plan: \ufffd fix x"
    assert len(bodies[1]) < 20_000


def test_report_with_a_task_holding_a_lone_surrogate_still_serialises(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    # A task from argv with undecodable bytes (surrogateescape) or a JSON "\udcff" escape.
    backend = ScriptedBackend([PLAN])
    report = Runtime(flow_config(CHECKS), trusted=False, backend=backend).run("fix \udcff")
    assert report.task == "fix \udcff"
    text = report.to_json()
    text.encode("utf-8")
    assert json.loads(text)["task"] == "fix \ufffd"
    assert report.to_dict()["task"] == "fix \ufffd"
