"""``Runtime.interrupt()`` from another thread stops a run that waits for the model."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from flow_core import ChatMessage, ChatResponse, FlowConfig, Runtime, ScriptedBackend, ToolCall
from flow_core.run._interruptible import Abandoned, call_interruptibly
from flow_testing.replies import text

PY = sys.executable
CHECKS = {"lint": {"cmd": [PY, "-c", "print('ok')"], "kind": "lint", "filetypes": ["python"]}}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    (root / "app.py").write_text("x = 1\n")
    return root


def test_interrupt_during_a_model_request_stops_before_the_reply_is_used(
    ws: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow_edit(messages: list[ChatMessage], tools: Sequence[Mapping[str, Any]]) -> ChatResponse:
        entered.set()
        release.wait(60)  # the model "thinks" until the test lets it answer
        edit = {"path": "app.py", "old_text": "x = 1", "new_text": "x = 2"}
        return ChatResponse(
            content="", tool_calls=(ToolCall(id="c1", name="edit_file", arguments=edit),)
        )

    backend = ScriptedBackend([text("Plan: set x."), slow_edit, text("done")])
    rt = Runtime(flow_config(CHECKS), trusted=True, backend=backend)
    result: list[Any] = []
    runner = threading.Thread(target=lambda: result.append(rt.run("set x to 2")))
    runner.start()
    assert entered.wait(60)
    rt.interrupt()
    runner.join(60)  # returns without the model's answer: the reply is abandoned
    assert not runner.is_alive()
    release.set()
    report = result[0]
    assert report.status == "interrupted"
    assert not report.ok
    assert report.checks == []
    assert (ws / "app.py").read_text() == "x = 1\n"  # the late edit was never applied
    assert len(backend.requests) == 2  # no request after the interrupt


def test_call_interruptibly_passes_values_and_errors_through() -> None:
    assert call_interruptibly(lambda: 7, lambda: False) == 7

    def boom() -> int:
        raise KeyError("x")

    with pytest.raises(KeyError):
        call_interruptibly(boom, lambda: False)
    with pytest.raises(Abandoned):
        call_interruptibly(lambda: 7, lambda: True)
