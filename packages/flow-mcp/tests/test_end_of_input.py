"""When the client is gone, its work ends: nothing runs or is written for nobody.

flow-mcp README, "End of input": stdin closing (or a write to the client failing because it
stopped reading) interrupts the running ``flow_run`` (its edits rolled back) and drops every
queued ``flow_check``/``flow_run`` call, unrun. The real server runs as a subprocess on
pipes; the model is the shared loopback fake, whose planner for the first task waits until
the test lets it go, so the second task is certainly queued behind it when the client leaves.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flow_mcp_harness import DEADLINE_S, FakeOllama, ServerFactory, hello_script

from flow_testing.model_server import FakeModelServer


class _Held:
    """The planner of the task ``FIRST`` waits for :attr:`release`; its coder writes
    ``first.txt``. Every other request is :func:`hello_script` (writes ``hello.txt``)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        text = json.dumps(body.get("messages", []))
        tools = {t.get("function", {}).get("name") for t in body.get("tools", [])}
        if "FIRST" not in text:
            return hello_script(body)
        if body.get("format") is not None:
            return json.dumps({"approved": True, "summary": "ok", "findings": []}), []
        if "write_file" in tools:
            if any(m.get("role") == "tool" for m in body.get("messages", [])):
                return "Done.", []
            return "", [{"name": "write_file", "arguments": {"path": "first.txt", "content": "1"}}]
        self.entered.set()
        self.release.wait(DEADLINE_S)
        return "1. Create first.txt.", []


@pytest.fixture
def held() -> _Held:
    return _Held()


@pytest.fixture
def fake_ollama(held: _Held) -> Iterator[FakeOllama]:
    with FakeModelServer(held, models=["fake-model"]) as server:
        try:
            yield server
        finally:
            held.release.set()


def _run(task: str, rid: str, token: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "flow_run", "arguments": {"task": task}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def _asked_about(server: FakeOllama, word: str) -> bool:
    return any(word in json.dumps(body) for body in server.requests)


def test_closed_stdin_interrupts_the_run_and_drops_the_queued_one(
    start_server: ServerFactory, fake_ollama: FakeOllama, held: _Held, workspace: Path
) -> None:
    server = start_server("--trusted")
    server.initialize()
    server.send(_run("FIRST: create first.txt", "one"))
    server.send(_run("SECOND: create hello.txt", "two"))
    assert held.entered.wait(DEADLINE_S), "the first run never asked the model"
    server.close_stdin()
    server.read_to_eof()  # the server ends by itself; nothing is left to run
    assert server.wait() == 0
    held.release.set()  # only now may the abandoned planner reply come (nobody reads it)
    server.assert_stdout_pure()
    answers = {json.loads(line).get("id"): json.loads(line) for line in server.lines}
    assert "two" not in answers  # dropped unrun, not answered
    report = answers["one"]["result"]["structuredContent"]
    assert report["status"] == "interrupted"
    assert "cancelled" in [e["code"] for e in report["errors"]]
    assert sorted(p.name for p in workspace.iterdir()) == []  # nothing written after EOF
    assert not _asked_about(fake_ollama, "SECOND")
    assert "id='two' dropped unrun" in server.stderr()


def test_a_client_that_stops_reading_ends_the_run_and_the_queue(
    start_server: ServerFactory, fake_ollama: FakeOllama, held: _Held, workspace: Path
) -> None:
    server = start_server("--trusted")
    server.initialize()
    server.send(_run("FIRST: create first.txt", "one", token="t1"))
    server.send(_run("SECOND: create hello.txt", "two"))
    assert held.entered.wait(DEADLINE_S), "the first run never asked the model"
    assert server.proc.stdout is not None
    server.proc.stdout.close()  # the client stops reading; stdin stays open
    held.release.set()  # the planner answers: the next progress write fails
    assert server.wait() == 0
    assert sorted(p.name for p in workspace.iterdir()) == []  # not written, or rolled back
    assert not _asked_about(fake_ollama, "SECOND")
    assert "the client stopped reading" in server.stderr()
    server.close_stdin()
