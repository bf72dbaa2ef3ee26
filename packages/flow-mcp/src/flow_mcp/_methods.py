"""The MCP methods a session serves (MCP 2025-11-25, "Basic > Lifecycle"; 2026-07-28's
``server/discover``), as a mixin of ``_session.Session``, which owns the state they read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal

from flow_mcp._eras import MODERN_PROTOCOL_VERSIONS
from flow_mcp._framing import INVALID_REQUEST
from flow_mcp._inflight import InFlight
from flow_mcp._rpc import INVALID_PARAMS, Handler, JsonRpcError, PreEncoded, RequestId

LATEST_PROTOCOL_VERSION: Final = "2025-11-25"
#: Protocol revisions this server speaks, newest first.
SUPPORTED_PROTOCOL_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26")

State = Literal["new", "initializing", "ready"]


class Methods:
    """``initialize``, ``ping``, ``server/discover``, ``tools/list`` and ``tools/call``."""

    handler: Handler
    state: State
    protocol_version: str | None
    client_info: Any
    _server_version: str
    _instructions: str | None
    _log: Callable[[str], None]
    _inflight: InFlight
    _tools_list_json: bytes | None
    _tools_list_modern_json: bytes | None

    def prepare(self) -> None:
        """Encode the constant ``tools/list`` results (the session does)."""
        raise NotImplementedError

    def _require_ready(self, method: str) -> None:
        """Refuse requests before a successful ``initialize``; serve them after it.

        "Basic > Lifecycle" asks clients to send ``notifications/initialized`` first, but
        several SDK clients send ``tools/list`` right after the ``initialize`` answer; once
        the version is agreed nothing is missing to serve them, so they are served and the
        early request is noted on stderr.
        """
        if self.state == "ready":
            return
        if self.state == "initializing":
            self._log(f"flow-mcp: {method} before notifications/initialized; served")
            return
        raise JsonRpcError(
            INVALID_REQUEST,
            f"Server not initialized: send initialize before {method}",
            {"state": self.state},
        )

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.state != "new":
            raise JsonRpcError(
                INVALID_REQUEST, "Invalid Request: the session is already initialized"
            )
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise JsonRpcError(INVALID_PARAMS, 'Invalid params: "protocolVersion" must be a string')
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        self.protocol_version = version
        self.client_info = params.get("clientInfo")
        self.state = "initializing"
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "flow", "title": "Flow", "version": self._server_version},
        }
        if self._instructions:
            result["instructions"] = self._instructions
        return result

    def _ping(self, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    def _discover(self, params: dict[str, Any]) -> dict[str, Any]:
        """``server/discover`` (MCP 2026-07-28), as the official Python SDK 2.x answers it:
        the per-request versions served, the capabilities and the instructions."""
        raw = params.get("_meta")
        meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
        self.protocol_version = MODERN_PROTOCOL_VERSIONS[-1]
        self.client_info = meta.get("io.modelcontextprotocol/clientInfo")
        result: dict[str, Any] = {
            "supportedVersions": list(reversed(MODERN_PROTOCOL_VERSIONS)),
            "capabilities": {"tools": {"listChanged": False}},
        }
        if self._instructions:
            result["instructions"] = self._instructions
        return result

    def _tools_list_modern(self, params: dict[str, Any]) -> PreEncoded:
        self.prepare()
        assert self._tools_list_modern_json is not None
        return PreEncoded(self._tools_list_modern_json)

    def _tools_call_modern(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._call(params)

    def _tools_list(self, params: dict[str, Any]) -> PreEncoded:
        self._require_ready("tools/list")
        # The list never changes (capability tools.listChanged is false), so it is encoded once.
        self.prepare()
        assert self._tools_list_json is not None
        return PreEncoded(self._tools_list_json)

    def _tools_call(self, params: dict[str, Any]) -> dict[str, Any]:
        self._require_ready("tools/call")
        return self._call(params)

    def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise JsonRpcError(INVALID_PARAMS, 'Invalid params: "name" must be a string')
        arguments = params.get("arguments", {})
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise JsonRpcError(INVALID_PARAMS, 'Invalid params: "arguments" must be an object')
        meta = params.get("_meta")
        token: RequestId | None = None
        if isinstance(meta, dict):
            raw = meta.get("progressToken")
            if isinstance(raw, str | int) and not isinstance(raw, bool):
                token = raw
        return self.handler.call_tool(name, arguments, token, stopped=self._inflight.stop_reason)
