"""Raw frames: the first request picks the handshake era or MCP 2026-07-28's per-request era.

Results of the per-request era are validated with the SDK's own 2026-07-28 wire models
(``mcp_types``), so the shape is the one the official SDK 2.x defines.
"""

from __future__ import annotations

from typing import Any

from flow_mcp_harness import INIT_PARAMS, RawServer, ServerFactory
from mcp_types import _v2026_07_28 as wire

MODERN = "2026-07-28"


def envelope(version: str = MODERN, **extra: Any) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    return {"_meta": meta, **extra}


def error(reply: dict[str, Any]) -> tuple[int, Any]:
    assert "error" in reply, reply
    return reply["error"]["code"], reply["error"].get("data")


def stamped(result: dict[str, Any]) -> None:
    assert result["resultType"] == "complete"
    info = result["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert info["name"] == "flow"


def test_discover_opens_the_per_request_era(start_server: ServerFactory) -> None:
    server: RawServer = start_server()
    reply = server.request(1, "server/discover", envelope())
    result = reply["result"]
    wire.DiscoverResult.model_validate(result)
    assert result["supportedVersions"] == [MODERN]
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert (result["ttlMs"], result["cacheScope"]) == (0, "private")
    assert "instructions" in result
    stamped(result)

    listed = server.request(2, "tools/list", envelope())["result"]
    wire.ListToolsResult.model_validate(listed)
    stamped(listed)
    assert [t["name"] for t in listed["tools"]] == ["flow_status", "flow_check", "flow_run"]
    called = server.request(3, "tools/call", envelope(name="flow_status", arguments={}))
    wire.CallToolResult.model_validate(called["result"])
    stamped(called["result"])
    assert called["result"]["structuredContent"]["kind"] == "status"

    # Every request must carry its envelope; the handshake is refused on this connection.
    assert error(server.request(4, "tools/list", {}))[0] == -32602
    code, data = error(server.request(5, "initialize", INIT_PARAMS))
    assert code == -32022
    assert data == {"supported": [MODERN], "requested": "2025-11-25"}
    code, data = error(server.request(6, "tools/list", envelope("2099-01-01")))
    assert code == -32022
    assert data["requested"] == "2099-01-01"
    assert server.finish() == 0


def test_an_unknown_modern_version_leaves_the_handshake_open(start_server: ServerFactory) -> None:
    server = start_server()
    code, data = error(server.request(1, "server/discover", envelope("2099-01-01")))
    assert code == -32022
    assert data["requested"] == "2099-01-01"
    assert data["supported"][0] == MODERN
    assert "2025-11-25" in data["supported"]  # so a client knows it can still hand-shake
    assert server.initialize()["result"]["protocolVersion"] == "2025-11-25"
    assert server.finish() == 0


def test_the_handshake_era_refuses_enveloped_requests(start_server: ServerFactory) -> None:
    server = start_server()
    server.initialize()
    assert error(server.request(1, "tools/list", envelope()))[0] == -32600
    assert error(server.request(2, "server/discover", envelope()))[0] == -32600
    assert error(server.request(3, "server/discover"))[0] == -32601
    assert "result" in server.request(4, "tools/list")
    assert server.finish() == 0
