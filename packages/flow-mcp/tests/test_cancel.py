"""The server keeps reading while a tool runs: ``ping`` and ``notifications/cancelled``.

MCP 2025-11-25, "Basic > Utilities > Ping" and "Basic > Utilities > Cancellation": a ping
is answered while ``flow_check``/``flow_run`` is busy; a cancellation of the running request
stops it through the runtime's interrupt path (check process groups killed, a model request
abandoned, the run's edits rolled back) and the cancelled request gets no response at all.
Every scenario uses the real server on pipes, real check processes and the loopback model.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from flow_mcp_harness import (
    DEADLINE_S,
    HANGING_AFTER_BASELINE,
    HANGING_CHECK,
    FakeOllama,
    RawServer,
    ServerFactory,
    hello_script,
    read_fifo,
)

from flow_testing.procs import alive, group_members


def recv_id(server: RawServer, rid: Any) -> dict[str, Any]:
    """The answer with this id; notifications and other answers read on the way are kept."""
    while True:
        line = server.recv_line()
        assert line is not None, f"stdout closed; stderr:\n{server.stderr()}"
        msg = json.loads(line)
        if msg.get("id") == rid and "method" not in msg:
            return msg  # type: ignore[no-any-return]


def call(server: RawServer, rid: Any, name: str, arguments: dict[str, Any], token: Any) -> None:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    server.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


def cancel(server: RawServer, rid: Any, reason: str = "user pressed stop") -> None:
    server.notify("notifications/cancelled", {"requestId": rid, "reason": reason})


def answers_for(server: RawServer, rid: Any) -> list[dict[str, Any]]:
    found = []
    for line in server.lines:
        msg = json.loads(line)
        if msg.get("id") == rid and "method" not in msg:
            found.append(msg)
    return found


def test_ping_during_a_check_then_cancel_kills_it_and_sends_no_answer(
    start_server: ServerFactory, tmp_path: Path
) -> None:
    fifo = tmp_path / "pids.fifo"
    os.mkfifo(fifo)
    server = start_server(
        "--trusted",
        checks={"hang": [sys.executable, "-c", HANGING_CHECK, str(fifo)]},
        sandbox_mode="off",  # the FIFO lies outside the workspace, which the jail hides
    )
    server.initialize()
    call(server, "long", "flow_check", {"name": "hang"}, "tok")
    pids = read_fifo(fifo)  # the check (and its child) run now
    server.send({"jsonrpc": "2.0", "id": "p1", "method": "ping"})
    assert recv_id(server, "p1") == {"jsonrpc": "2.0", "id": "p1", "result": {}}
    assert all(alive(p) for p in pids), "ping was not answered while the check ran"

    cancel(server, "long")
    # Served on the main thread, so only after the cancelled request has returned.
    server.send(
        {"jsonrpc": "2.0", "id": "st", "method": "tools/call", "params": {"name": "flow_status"}}
    )
    status = recv_id(server, "st")
    assert status["result"]["structuredContent"]["kind"] == "status"
    assert group_members(pids[0]) == []
    assert not any(alive(p) for p in pids)

    assert server.finish() == 0
    assert answers_for(server, "long") == []  # "Basic > Utilities > Cancellation": no answer
    progress = [json.loads(line) for line in server.lines if b"notifications/progress" in line]
    messages = [p["params"]["message"] for p in progress]
    # Heartbeats (on a slow machine) repeat the event's words.
    assert [m for m in messages if "(still running," not in m] == ["check hang: running"]
    assert "cancelling id='long' (user pressed stop)" in server.stderr()


def test_cancel_during_a_model_request_stops_the_run_before_it_writes(
    start_server: ServerFactory, fake_ollama: FakeOllama, workspace: Path
) -> None:
    coder_waiting, release = threading.Event(), threading.Event()

    def slow_coder(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        tools = {t.get("function", {}).get("name") for t in body.get("tools", [])}
        if "write_file" in tools:
            coder_waiting.set()
            release.wait(DEADLINE_S)  # the model "thinks" until the test lets it answer
        return hello_script(body)

    fake_ollama.script = slow_coder
    server = start_server("--trusted")
    server.initialize()
    call(server, "run", "flow_run", {"task": "Create hello.txt"}, "tok")
    assert coder_waiting.wait(DEADLINE_S)
    cancel(server, "run")
    server.send(
        {"jsonrpc": "2.0", "id": "st", "method": "tools/call", "params": {"name": "flow_status"}}
    )
    assert "result" in recv_id(server, "st")  # the run returned without the model's answer
    release.set()  # the late reply (a write_file call) is dropped
    server.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
    recv_id(server, "p")
    assert server.finish() == 0
    assert answers_for(server, "run") == []
    assert not (workspace / "hello.txt").exists()
    coder_requests = [r for r in fake_ollama.requests if "write_file" in json.dumps(r)]
    assert len(coder_requests) == 1


@pytest.mark.parametrize("before", [None, "old\n"], ids=["created", "modified"])
def test_cancelled_run_rolls_its_edits_back(
    start_server: ServerFactory, workspace: Path, tmp_path: Path, before: str | None
) -> None:
    target = workspace / "hello.txt"
    if before is not None:
        target.write_text(before)
    fifo = tmp_path / "pids.fifo"
    os.mkfifo(fifo)
    server = start_server(
        "--trusted",
        checks={"hang": [sys.executable, "-c", HANGING_AFTER_BASELINE, str(fifo)]},
        sandbox_mode="off",  # the FIFO lies outside the workspace, which the jail hides
    )
    server.initialize()
    call(server, "run", "flow_run", {"task": "Create hello.txt"}, None)
    pids = read_fifo(fifo)  # the coder wrote hello.txt; the host's check runs now
    assert target.read_text() == "hello\n"
    cancel(server, "run")
    server.send(
        {"jsonrpc": "2.0", "id": "st", "method": "tools/call", "params": {"name": "flow_status"}}
    )
    recv_id(server, "st")
    assert group_members(pids[0]) == []
    if before is None:
        assert not target.exists()
    else:
        assert target.read_text() == before
    assert server.finish() == 0
    assert answers_for(server, "run") == []
    assert "rolled back: hello.txt" in server.stderr()


def test_cancel_for_an_unknown_or_finished_request_is_ignored(start_server: ServerFactory) -> None:
    server = start_server()
    server.initialize()  # id 0, finished
    cancel(server, 0)
    cancel(server, "never-sent")
    server.notify("notifications/cancelled", {"reason": "no id"})
    server.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
    assert recv_id(server, "p")["result"] == {}
    server.send(
        {"jsonrpc": "2.0", "id": "st", "method": "tools/call", "params": {"name": "flow_status"}}
    )
    assert recv_id(server, "st")["result"]["isError"] is False
    assert server.finish() == 0
    ids = [json.loads(line).get("id") for line in server.lines]
    assert ids == [0, "p", "st"]  # no error answers for the notifications
    assert server.stderr().count("ignored") >= 3


def test_eof_during_a_check_interrupts_it_and_answers_interrupted(
    start_server: ServerFactory, tmp_path: Path
) -> None:
    fifo = tmp_path / "pids.fifo"
    os.mkfifo(fifo)
    server = start_server(
        "--trusted",
        checks={"hang": [sys.executable, "-c", HANGING_CHECK, str(fifo)]},
        sandbox_mode="off",  # the FIFO lies outside the workspace, which the jail hides
    )
    server.initialize()
    call(server, "busy", "flow_check", {"name": "hang"}, None)
    pids = read_fifo(fifo)
    server.close_stdin()  # EOF while the request is busy
    reply = recv_id(server, "busy")
    report = reply["result"]["structuredContent"]
    assert report["status"] == "interrupted"
    assert "cancelled" in [e["code"] for e in report["errors"]]
    server.read_to_eof()
    assert server.wait() == 0
    server.assert_stdout_pure()
    assert group_members(pids[0]) == []
    assert not any(alive(p) for p in pids)


def test_a_request_cancelled_while_queued_never_runs(
    start_server: ServerFactory, tmp_path: Path
) -> None:
    fifo = tmp_path / "pids.fifo"
    os.mkfifo(fifo)
    server = start_server(
        "--trusted",
        checks={"hang": [sys.executable, "-c", HANGING_CHECK, str(fifo)]},
        sandbox_mode="off",  # the FIFO lies outside the workspace, which the jail hides
    )
    server.initialize()
    call(server, "long", "flow_check", {"name": "hang"}, None)
    read_fifo(fifo)  # "long" runs; what follows waits behind it
    call(server, "queued", "flow_check", {"name": "hang"}, None)
    cancel(server, "queued")
    cancel(server, "long")
    server.send(
        {"jsonrpc": "2.0", "id": "st", "method": "tools/call", "params": {"name": "flow_status"}}
    )
    assert "result" in recv_id(server, "st")
    assert server.finish() == 0
    assert answers_for(server, "queued") == []
    assert answers_for(server, "long") == []
    assert "id='queued' cancelled before it started" in server.stderr()
    assert server.stderr().count("check_started") == 0
