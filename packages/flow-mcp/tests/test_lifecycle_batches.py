"""Tolerant where the specification allows, strict where it matters.

* A request after a successful ``initialize`` but before ``notifications/initialized`` is
  served (several SDK clients list tools right after the answer); stderr notes it. Before
  ``initialize`` requests are still refused.
* JSON-RPC batches (JSON-RPC 2.0 section 6) are served only when ``initialize`` negotiated
  MCP 2025-03-26, the one revision that had them; each element is answered by its id, in
  order, in one array. Every other revision gets a single ``-32600``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from flow_mcp_harness import INIT_PARAMS, RawServer, ServerFactory


def _hand_shake(server: RawServer, version: str) -> None:
    reply = server.request(0, "initialize", {**INIT_PARAMS, "protocolVersion": version})
    assert reply["result"]["protocolVersion"] == version
    server.notify("notifications/initialized")


def _next(server: RawServer) -> Any:
    line = server.recv_line()
    assert line is not None, server.stderr()
    return json.loads(line)


def test_requests_between_initialize_and_initialized_are_served(
    start_server: ServerFactory,
) -> None:
    server = start_server()
    early = server.request("early", "tools/list")
    assert early["error"]["code"] == -32600  # before initialize: refused
    assert "initialize" in early["error"]["message"]
    assert "result" in server.request(0, "initialize", INIT_PARAMS)
    listed = server.request(1, "tools/list")  # no notifications/initialized yet
    assert [t["name"] for t in listed["result"]["tools"]] == [
        "flow_status",
        "flow_check",
        "flow_run",
    ]
    status = server.request(2, "tools/call", {"name": "flow_status", "arguments": {}})
    assert status["result"]["structuredContent"]["kind"] == "status"
    server.notify("notifications/initialized")
    assert "result" in server.request(3, "tools/list")
    assert server.finish() == 0
    err = server.stderr()
    assert "tools/list before notifications/initialized; served" in err
    assert "tools/call before notifications/initialized; served" in err


def test_a_batch_after_negotiating_2025_03_26_answers_each_element_by_id(
    start_inproc: ServerFactory,
) -> None:
    server = start_inproc()
    _hand_shake(server, "2025-03-26")
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/something"},
        {"jsonrpc": "2.0", "id": "list", "method": "tools/list"},
        5,
        {"jsonrpc": "2.0", "id": "x", "method": "no/such/method"},
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "flow_status"}},
        {"jsonrpc": "2.0", "id": 10, "method": "initialize", "params": INIT_PARAMS},
        [{"jsonrpc": "2.0", "id": 11, "method": "ping"}],
    ]
    server.send(batch)
    answers = _next(server)
    assert isinstance(answers, list)
    assert [a["id"] for a in answers] == [1, "list", None, "x", 9, 10, None]
    assert answers[0]["result"] == {}
    assert len(answers[1]["result"]["tools"]) == 3
    assert answers[2]["error"]["code"] == -32600
    assert answers[3]["error"]["code"] == -32601
    assert answers[4]["result"]["structuredContent"]["kind"] == "status"
    assert answers[5]["error"]["code"] == -32600  # initialize must not be batched
    assert answers[6]["error"]["code"] == -32600  # no batch inside a batch
    # A batch of notifications only gets no answer at all: the next line answers the ping.
    server.send([{"jsonrpc": "2.0", "method": "notifications/a"}])
    server.send([])  # an empty batch: one error
    assert _next(server) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Invalid Request: an empty batch"},
    }
    assert server.finish() == 0


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", None])
def test_batches_are_refused_on_every_other_revision(
    start_inproc: ServerFactory, version: str | None
) -> None:
    server = start_inproc()
    if version is not None:
        _hand_shake(server, version)
    server.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    reply = _next(server)
    assert reply["id"] is None
    assert reply["error"]["code"] == -32600
    assert "2025-03-26" in reply["error"]["message"]
    assert server.request(2, "ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert server.finish() == 0
