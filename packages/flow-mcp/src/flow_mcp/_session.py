"""Session: JSON-RPC 2.0 messages and the MCP lifecycle (MCP 2025-11-25, "Basic").

The session turns decoded frames into method calls and answers, in order, one at a time:

* Lifecycle ("Basic > Lifecycle"): ``initialize`` first, then the client's
  ``notifications/initialized``; only then are ``tools/list`` and ``tools/call`` served.
  Earlier calls get ``-32600`` with a message saying what to send first; ``ping`` is answered
  in every state ("Basic > Utilities > Ping").
* Version negotiation: a requested version this server speaks is echoed back; any other gets
  :data:`LATEST_PROTOCOL_VERSION`, and the client decides whether to continue.
* Messages ("Basic > Messages"): requests carry a string or integer id and always get exactly
  one answer; notifications never get one, and unknown notifications are ignored. JSON-RPC
  batches (arrays) were removed in 2025-06-18 and are refused with ``-32600``.
* Errors keep the request's id whenever it can be read, ``null`` otherwise:
  ``-32700`` parse error, ``-32600`` invalid request, ``-32601`` unknown method,
  ``-32602`` invalid params, ``-32603`` internal error.

Tool semantics live in ``_tools``; this module only needs a :class:`Handler`.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, Protocol

from flow_mcp._framing import (
    INVALID_REQUEST,
    PARSE_ERROR,
    FrameError,
    FrameReader,
    FrameWriter,
    decode,
    encode,
)
from flow_mcp._inbox import EOF, Inbox

LATEST_PROTOCOL_VERSION: Final = "2025-11-25"
#: Protocol revisions this server speaks, newest first.
SUPPORTED_PROTOCOL_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26")

METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

RequestId = str | int
State = Literal["new", "initializing", "ready"]


class JsonRpcError(Exception):
    """A JSON-RPC error answer: ``{"code", "message", "data"?}`` ("Basic > Messages").

    Args:
        code: the JSON-RPC error code.
        message: one short sentence for the client's user.
        data: optional JSON-serialisable details.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        """The ``error`` member of a response."""
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


class PreEncoded:
    """A method result that is already compact ASCII JSON (the constant ``tools/list``)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class Handler(Protocol):
    """What the session needs from the tools layer ("Server Features > Tools")."""

    def list_tools(self) -> list[dict[str, Any]]:
        """The ``tools`` array of a ``tools/list`` result."""
        ...

    def call_tool(
        self, name: str, arguments: Mapping[str, Any], progress_token: RequestId | None
    ) -> dict[str, Any]:
        """A ``CallToolResult``; raises :class:`JsonRpcError` for protocol-level failures."""
        ...

    def cancel(self, reason: str) -> None:
        """Stop the tool call in progress, if any (called from the reader thread)."""
        ...


def _log_to_stderr(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class Session:
    """One MCP session over one pair of streams, served sequentially.

    Args:
        handler: the tools layer.
        writer: where answers go (the protocol descriptor).
        server_version: ``serverInfo.version``.
        instructions: optional ``instructions`` for the initialize result.
        log: receives one diagnostic line per request (stderr by default).
    """

    def __init__(
        self,
        handler: Handler,
        writer: FrameWriter,
        *,
        server_version: str,
        instructions: str | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.handler = handler
        self.writer = writer
        self.state: State = "new"
        self.protocol_version: str | None = None
        self.client_info: Any = None
        self._server_version = server_version
        self._instructions = instructions
        self._log = log or _log_to_stderr
        #: Polled after every frame; the server sets it when a signal asks the session to stop.
        self.stop_requested: Callable[[], bool] = lambda: False
        # Shared with the reader thread (see _inbox): what runs now, what waits in the queue.
        self._lock = threading.Lock()
        self._current: RequestId | None = None
        self._current_method: str | None = None
        self._current_cancelled = False
        self._queued: dict[RequestId, int] = {}
        self._dropped: dict[RequestId, int] = {}
        self._tools_list_json: bytes | None = None
        self._methods: dict[str, Callable[[dict[str, Any]], dict[str, Any] | PreEncoded]] = {
            "initialize": self._initialize,
            "ping": self._ping,
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
        }

    # ------------------------------------------------------------------ loop

    def prepare(self) -> None:
        """Encode the constant ``tools/list`` result now, so the first listing is as fast."""
        if self._tools_list_json is None:
            self._tools_list_json = encode({"tools": self.handler.list_tools()}).rstrip(b"\n")

    def serve(self, reader: FrameReader) -> int:
        """Answer frames until EOF; a reader thread keeps reading meanwhile (see ``_inbox``).

        Returns:
            0 at EOF ("Basic > Lifecycle > Shutdown": the client closes stdin), 1 after a
            frame over the size limit (answered, then the session closes).

        Raises:
            BrokenPipeError: the client stopped reading.
            KeyboardInterrupt: from a signal handler; the caller cleans up.
        """
        inbox = Inbox(reader, route=self.route, on_eof=self.end_of_input)
        inbox.start()
        try:
            while True:
                item = inbox.get()
                if item is EOF:
                    return 0
                if isinstance(item, FrameError):
                    self._send_error(None, JsonRpcError(item.code, item.message))
                    if item.fatal:
                        self._log(f"flow-mcp: frame rejected ({item.message})")
                        return 1
                    self._log(f"flow-mcp: parse error ({item.message})")
                    continue
                self.handle_message(item)
                if self.stop_requested():
                    return 0
        finally:
            inbox.close()

    def handle_line(self, line: bytes) -> None:
        """Decode one frame and answer it (or not, for notifications)."""
        try:
            message = decode(line)
        except FrameError as err:
            self._send_error(None, JsonRpcError(err.code, err.message))
            self._log(f"flow-mcp: parse error ({err.message})")
            return
        self.handle_message(message)

    # ------------------------------------------------------- reader thread

    def route(self, message: Any) -> bool:
        """Called on the reader thread for each decoded message; True when handled there.

        ``ping`` is answered at once, in every state ("Basic > Utilities > Ping"), even while
        a tool runs. ``notifications/cancelled`` is acted on at once ("Basic > Utilities >
        Cancellation"). Every other message is left for the main thread, in order.
        """
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        method = message.get("method")
        rid = message.get("id")
        if "id" not in message:
            if method == "notifications/cancelled":
                self._cancel(message.get("params"))
                return True
            return False
        if not (isinstance(rid, str | int) and not isinstance(rid, bool)):
            return False
        if method == "ping":
            self._execute(rid, "ping", message)
            return True
        if isinstance(method, str):
            with self._lock:
                self._queued[rid] = self._queued.get(rid, 0) + 1
        return False

    def end_of_input(self) -> None:
        """Stdin ended while the main thread may be busy: interrupt the running tool call.

        Its answer is still sent (an ``interrupted`` report); requests already received are
        still answered in order.
        """
        with self._lock:
            running = self._current is not None and self._current_method == "tools/call"
        if running:
            self._log("flow-mcp: stdin closed during a tool call; interrupting it")
            self.handler.cancel("the client closed stdin")

    def _cancel(self, params: Any) -> None:
        rid = params.get("requestId") if isinstance(params, dict) else None
        if not (isinstance(rid, str | int) and not isinstance(rid, bool)):
            self._log("flow-mcp: notifications/cancelled without a valid requestId; ignored")
            return
        reason = params.get("reason") if isinstance(params, dict) else None
        why = reason if isinstance(reason, str) and reason else "no reason given"
        with self._lock:
            if rid == self._current and self._current_method != "initialize":
                if self._current_cancelled:
                    return
                self._current_cancelled = True
                running = self._current_method == "tools/call"
            elif self._queued.get(rid, 0) > self._dropped.get(rid, 0):
                self._dropped[rid] = self._dropped.get(rid, 0) + 1
                self._log(f"flow-mcp: id={rid!r} cancelled before it started; it will not run")
                return
            else:
                # Unknown, finished, or initialize (which "MUST NOT be cancelled").
                self._log(f"flow-mcp: cancellation of id={rid!r} ignored (not in progress)")
                return
        self._log(f"flow-mcp: cancelling id={rid!r} ({why[:200]}); no response will be sent")
        if running:
            self.handler.cancel(f"cancelled by the client: {why[:200]}")

    # -------------------------------------------------------------- messages

    def handle_message(self, message: Any) -> None:
        """Classify one decoded message and answer it as JSON-RPC 2.0 requires."""
        if isinstance(message, list):
            self._reject(None, "JSON-RPC batches are not supported (removed in MCP 2025-06-18)")
            return
        if not isinstance(message, dict):
            self._reject(None, "a message must be a JSON object")
            return
        has_id = "id" in message
        rid = message.get("id")
        valid_id = isinstance(rid, str | int) and not isinstance(rid, bool)
        echo: RequestId | None = rid if valid_id else None
        if message.get("jsonrpc") != "2.0":
            self._reject(echo, 'member "jsonrpc" must be exactly "2.0"')
            return
        if "method" not in message:
            if has_id and ("result" in message or "error" in message):
                # A response; this server never sends requests, so there is nothing to match.
                self._log(f"flow-mcp: ignored a response with id={rid!r}")
                return
            self._reject(echo, 'member "method" is missing')
            return
        method = message["method"]
        if not isinstance(method, str):
            self._reject(echo, 'member "method" must be a string')
            return
        params = message.get("params")
        if not has_id:
            self._notification(method, params)
            return
        if not valid_id:
            self._reject(None, 'member "id" must be a string or an integer')
            return
        assert echo is not None
        self._request(echo, method, message)

    def _reject(self, rid: RequestId | None, why: str) -> None:
        self._send_error(rid, JsonRpcError(INVALID_REQUEST, f"Invalid Request: {why}"))
        self._log(f"flow-mcp: invalid request id={rid!r} ({why})")

    def _notification(self, method: str, params: Any) -> None:
        if method == "notifications/initialized":
            if self.state == "initializing":
                self.state = "ready"
            else:
                self._log(f"flow-mcp: notifications/initialized ignored in state {self.state}")
        elif method == "notifications/cancelled":
            self._cancel(params)  # normally acted on by the reader thread (route)
        # Every other notification is ignored on purpose ("Basic > Messages > Notifications").

    def _request(self, rid: RequestId, method: str, message: dict[str, Any]) -> None:
        """Serve one request on the main thread, unless it was cancelled (then: no answer)."""
        with self._lock:
            if self._queued.get(rid, 0) > 0:
                self._queued[rid] -= 1
                if not self._queued[rid]:
                    del self._queued[rid]
            if self._dropped.get(rid, 0) > 0:
                self._dropped[rid] -= 1
                if not self._dropped[rid]:
                    del self._dropped[rid]
                self._log(f"flow-mcp: {method} id={rid!r} cancelled before it started")
                return
            self._current, self._current_method = rid, method
            self._current_cancelled = False
        try:
            self._execute(rid, method, message, drop=self._is_cancelled)
        finally:
            with self._lock:
                self._current = self._current_method = None
                self._current_cancelled = False

    def _is_cancelled(self) -> bool:
        with self._lock:
            return self._current_cancelled

    def _execute(
        self,
        rid: RequestId,
        method: str,
        message: dict[str, Any],
        *,
        drop: Callable[[], bool] = lambda: False,
    ) -> None:
        """Run one method and send its answer, unless ``drop()`` says the client cancelled it
        ("Basic > Utilities > Cancellation": no response for a cancelled request)."""
        start = time.perf_counter()
        outcome = "ok"
        try:
            handler = self._methods.get(method)
            if handler is None:
                raise JsonRpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
            params = message.get("params", {})
            if params is None:
                params = {}
            if not isinstance(params, dict):
                raise JsonRpcError(INVALID_PARAMS, 'Invalid params: "params" must be an object')
            result = handler(params)
        except JsonRpcError as err:
            outcome = f"error {err.code}"
            if not drop():
                self._send_error(rid, err)
        except Exception as err:
            outcome = f"error {INTERNAL_ERROR}"
            self._log("flow-mcp: internal error\n" + traceback.format_exc().rstrip())
            if not drop():
                self._send_error(
                    rid,
                    JsonRpcError(
                        INTERNAL_ERROR, f"Internal error: {type(err).__name__}: {err}"[:2000]
                    ),
                )
        else:
            if drop():
                outcome = "cancelled (no response, as the client asked)"
            elif isinstance(result, PreEncoded):
                self.writer.send_result_json(rid, result.data)
            else:
                if result.get("isError") is True:
                    outcome = "isError"
                self.writer.send({"jsonrpc": "2.0", "id": rid, "result": result})
        ms = (time.perf_counter() - start) * 1000.0
        self._log(f"flow-mcp: {method} id={rid!r} {ms:.2f}ms {outcome}")

    def _send_error(self, rid: RequestId | None, err: JsonRpcError) -> None:
        self.writer.send({"jsonrpc": "2.0", "id": rid, "error": err.to_dict()})

    # --------------------------------------------------------------- methods

    def _require_ready(self, method: str) -> None:
        if self.state == "ready":
            return
        first = (
            "initialize, then notifications/initialized"
            if self.state == "new"
            else "notifications/initialized"
        )
        raise JsonRpcError(
            INVALID_REQUEST,
            f"Server not initialized: send {first} before {method}",
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

    def _tools_list(self, params: dict[str, Any]) -> PreEncoded:
        self._require_ready("tools/list")
        # The list never changes (capability tools.listChanged is false), so it is encoded once.
        self.prepare()
        assert self._tools_list_json is not None
        return PreEncoded(self._tools_list_json)

    def _tools_call(self, params: dict[str, Any]) -> dict[str, Any]:
        self._require_ready("tools/call")
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
        return self.handler.call_tool(name, arguments, token)


__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_PROTOCOL_VERSION",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Handler",
    "JsonRpcError",
    "Session",
]
