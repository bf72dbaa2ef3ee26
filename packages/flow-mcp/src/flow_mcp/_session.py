"""Session: JSON-RPC 2.0 messages and the MCP lifecycle (MCP 2025-11-25, "Basic").

The session turns decoded frames into method calls and answers. A reader thread (``_inbox``)
keeps reading while a request runs: it answers ``ping`` at once and acts on
``notifications/cancelled`` ("Basic > Utilities > Cancellation": the running request is
stopped and gets no response); every other request is served on the main thread, in order,
one at a time. The first request also picks the protocol era: the handshake below, or MCP
2026-07-28's per-request envelope opened by ``server/discover`` (see ``_eras``).

* Lifecycle ("Basic > Lifecycle"): ``initialize`` first, then the client's
  ``notifications/initialized``. Requests before ``initialize`` get ``-32600`` saying what
  to send first; requests after a successful ``initialize`` but before the notification are
  served (several SDK clients send ``tools/list`` at once) and noted on stderr; ``ping`` is
  answered in every state ("Basic > Utilities > Ping").
* Version negotiation: a requested version this server speaks is echoed back; any other gets
  :data:`LATEST_PROTOCOL_VERSION`, and the client decides whether to continue.
* Messages ("Basic > Messages"): requests carry a string or integer id and always get exactly
  one answer; notifications never get one, and unknown notifications are ignored. JSON-RPC
  batches (arrays) are served only on a session that negotiated 2025-03-26, the revision
  that had them (2025-06-18 removed them); elsewhere they get one ``-32600``.
* End of input ("Basic > Lifecycle > Shutdown": a stdio client ends a session by closing
  stdin): the client is gone, as it is when a write to it fails; the running tool call is
  interrupted and every queued request is dropped unrun (:meth:`Session.client_gone`).
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
from collections.abc import Callable
from typing import Any

from flow_mcp._eras import (
    MODERN_PROTOCOL_VERSIONS,
    Era,
    EraError,
    batch_refusal,
    envelope_version,
    has_envelope,
    opening_era,
    refuse_envelope_in_handshake_era,
    stamp_result,
    unsupported,
)
from flow_mcp._framing import (
    INVALID_REQUEST,
    PARSE_ERROR,
    FrameError,
    FrameReader,
    FrameWriter,
    encode,
    result_frame,
)
from flow_mcp._inbox import EOF, Inbox
from flow_mcp._inflight import InFlight, does_work
from flow_mcp._methods import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    Methods,
    State,
)
from flow_mcp._rpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Handler,
    JsonRpcError,
    Method,
    PreEncoded,
    RequestId,
)


def _log_to_stderr(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


#: Receives the frames of a batch's answers (compact JSON, no newline) instead of the writer.
Sink = Callable[[bytes], None]


class Session(Methods):
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
        self._inflight = InFlight()
        self._tools_list_json: bytes | None = None
        #: "handshake" (initialize first) or "modern" (MCP 2026-07-28, per-request envelope);
        #: the client's first request decides (see ``_eras``).
        self.era: Era = "undecided"
        self._server_info = {"name": "flow", "title": "Flow", "version": server_version}
        self._tools_list_modern_json: bytes | None = None
        self._methods: dict[str, Method] = {
            "initialize": self._initialize,
            "ping": self._ping,
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
        }
        self._modern_methods: dict[str, Method] = {
            "server/discover": self._discover,
            "ping": self._ping,
            "tools/list": self._tools_list_modern,
            "tools/call": self._tools_call_modern,
        }

    # ------------------------------------------------------------------ loop

    def prepare(self) -> None:
        """Encode the constant ``tools/list`` results now, so the first listing is as fast."""
        if self._tools_list_json is None:
            tools = {"tools": self.handler.list_tools()}
            self._tools_list_json = encode(tools).rstrip(b"\n")
            modern = stamp_result("tools/list", tools, self._server_info)
            self._tools_list_modern_json = encode(modern).rstrip(b"\n")

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
        self.writer.on_broken = lambda: self.client_gone("the client stopped reading")
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
            self._decide_era(method, message.get("params"))
            self._execute(rid, "ping", message)
            return True
        if isinstance(method, str):
            self._decide_era(method, message.get("params"))
            self._inflight.queued(rid)
        return False

    def _decide_era(self, method: str, params: Any) -> Era:
        """The connection's era; the first request that can decide it does (see ``_eras``)."""
        with self._lock:
            if self.era == "undecided":
                self.era = opening_era(method, params)
            return self.era

    def end_of_input(self) -> None:
        """Stdin ended (reader thread): the client is gone; see :meth:`client_gone`."""
        self.client_gone("the client closed stdin")

    def client_gone(self, why: str) -> None:
        """The client closed stdin or stopped reading (any thread; idempotent).

        The running tool call is interrupted (checks killed, a run's edits rolled back) and
        every queued ``flow_check``/``flow_run`` call is dropped unrun: no work starts for a
        client that cannot receive its answer (flow-mcp README, "End of input"). Requests
        that do no work (``initialize``, ``ping``, ``tools/list``, ``flow_status``) are still
        answered, as is the interrupted call, for a client that only closed stdin.
        """
        method = self._inflight.end_input(why)
        if method == "tools/call":
            self._log(f"flow-mcp: {why} during a tool call; interrupting it")
            self.handler.cancel(why)

    def _cancel(self, params: Any) -> None:
        rid = params.get("requestId") if isinstance(params, dict) else None
        if not (isinstance(rid, str | int) and not isinstance(rid, bool)):
            self._log("flow-mcp: notifications/cancelled without a valid requestId; ignored")
            return
        reason = params.get("reason") if isinstance(params, dict) else None
        why = reason if isinstance(reason, str) and reason else "no reason given"
        hit, method = self._inflight.cancel(rid, f"cancelled by the client: {why[:200]}")
        if hit == "queued":
            self._log(f"flow-mcp: id={rid!r} cancelled before it started; it will not run")
        elif hit == "ignored":
            # Unknown, finished, or initialize/server/discover (which must not be cancelled).
            self._log(f"flow-mcp: cancellation of id={rid!r} ignored (not in progress)")
        elif hit == "running":
            self._log(f"flow-mcp: cancelling id={rid!r} ({why[:200]}); no response will be sent")
            if method == "tools/call":
                self.handler.cancel(f"cancelled by the client: {why[:200]}")

    # -------------------------------------------------------------- messages

    def handle_message(self, message: Any, sink: Sink | None = None) -> None:
        """Classify one decoded message and answer it as JSON-RPC 2.0 requires.

        ``sink``: collect the answer for a batch instead of writing it.
        """
        if isinstance(message, list) and sink is None:
            self._batch(message)
            return
        if not isinstance(message, dict):
            self._reject(None, "a message must be a JSON object", sink)
            return
        has_id = "id" in message
        rid = message.get("id")
        valid_id = isinstance(rid, str | int) and not isinstance(rid, bool)
        echo: RequestId | None = rid if valid_id else None
        if message.get("jsonrpc") != "2.0":
            self._reject(echo, 'member "jsonrpc" must be exactly "2.0"', sink)
            return
        if "method" not in message:
            if has_id and ("result" in message or "error" in message):
                # A response; this server never sends requests, so there is nothing to match.
                self._log(f"flow-mcp: ignored a response with id={rid!r}")
                return
            self._reject(echo, 'member "method" is missing', sink)
            return
        method = message["method"]
        if not isinstance(method, str):
            self._reject(echo, 'member "method" must be a string', sink)
            return
        params = message.get("params")
        if not has_id:
            self._notification(method, params)
            return
        if not valid_id:
            self._reject(None, 'member "id" must be a string or an integer', sink)
            return
        assert echo is not None
        if sink is not None and method == "initialize":
            self._reject(echo, "initialize must not be part of a batch", sink)
            return
        self._request(echo, method, message, sink)

    def _batch(self, items: list[Any]) -> None:
        """A JSON-RPC batch (JSON-RPC 2.0 section 6; MCP 2025-03-26 only, see ``_eras``).

        Each element is served in order as if it came alone; the answers (none for
        notifications or cancelled requests) go back as one array, or nothing when there are
        none. An empty batch is one ``-32600`` error.
        """
        why = batch_refusal(self.era, self.protocol_version)
        if why is not None:
            self._reject(None, why)
            return
        if not items:
            self._reject(None, "an empty batch")
            return
        frames: list[bytes] = []
        for item in items:
            self.handle_message(item, frames.append)
        self._log(f"flow-mcp: batch of {len(items)} message(s), {len(frames)} answer(s)")
        if frames:
            self.writer.send_bytes(b"[" + b",".join(frames) + b"]\n")

    def _reject(self, rid: RequestId | None, why: str, sink: Sink | None = None) -> None:
        self._send_error(rid, JsonRpcError(INVALID_REQUEST, f"Invalid Request: {why}"), sink)
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

    def _request(
        self, rid: RequestId, method: str, message: dict[str, Any], sink: Sink | None = None
    ) -> None:
        """Serve one request on the main thread, unless it was cancelled (then: no answer)."""
        if not self._inflight.start(rid, method, work=does_work(method, message.get("params"))):
            if self._inflight.ended:
                self._log(f"flow-mcp: {method} id={rid!r} dropped unrun (the client is gone)")
            else:
                self._log(f"flow-mcp: {method} id={rid!r} cancelled before it started")
            return
        try:
            self._execute(rid, method, message, drop=self._inflight.cancelled, sink=sink)
        finally:
            self._inflight.finish()

    def _execute(
        self,
        rid: RequestId,
        method: str,
        message: dict[str, Any],
        *,
        drop: Callable[[], bool] = lambda: False,
        sink: Sink | None = None,
    ) -> None:
        """Run one method and send its answer, unless ``drop()`` says the client cancelled it
        ("Basic > Utilities > Cancellation": no response for a cancelled request)."""
        start = time.perf_counter()
        outcome = "ok"
        modern = False
        try:
            params = message.get("params", {})
            if params is None:
                params = {}
            handler, modern = self._lookup(method, params)
            if not isinstance(params, dict):
                raise JsonRpcError(INVALID_PARAMS, 'Invalid params: "params" must be an object')
            result = handler(params)
            if modern and isinstance(result, dict):
                result = stamp_result(method, result, self._server_info)
        except JsonRpcError as err:
            outcome = f"error {err.code}"
            if not drop():
                self._send_error(rid, err, sink)
        except Exception as err:
            outcome = f"error {INTERNAL_ERROR}"
            self._log("flow-mcp: internal error\n" + traceback.format_exc().rstrip())
            if not drop():
                text = f"Internal error: {type(err).__name__}: {err}"[:2000]
                self._send_error(rid, JsonRpcError(INTERNAL_ERROR, text), sink)
        else:
            if drop():
                outcome = "cancelled (no response, as the client asked)"
            elif isinstance(result, PreEncoded):
                self._out(result_frame(rid, result.data), sink)
            else:
                if result.get("isError") is True:
                    outcome = "isError"
                self._out(encode({"jsonrpc": "2.0", "id": rid, "result": result})[:-1], sink)
        ms = (time.perf_counter() - start) * 1000.0
        self._log(f"flow-mcp: {method} id={rid!r} {ms:.2f}ms {outcome}")

    def _lookup(self, method: str, params: Any) -> tuple[Method, bool]:
        """The method for this era and whether its result gets the per-request-era stamp.

        Raises:
            JsonRpcError: ``-32601`` unknown method; ``-32602``/``-32022``/``-32600`` for an
                envelope that is missing, names an unknown version or comes in the wrong era.
        """
        era = self._decide_era(method, params)
        try:
            if era == "modern":
                if method == "initialize":
                    requested = params.get("protocolVersion") if isinstance(params, dict) else None
                    raise unsupported(
                        requested,
                        MODERN_PROTOCOL_VERSIONS,
                        "this connection serves MCP 2026-07-28 per request (opened by a request "
                        "carrying its envelope); the initialize handshake is not accepted on it",
                    )
                envelope_version(method, params, SUPPORTED_PROTOCOL_VERSIONS)
                handler = self._modern_methods.get(method)
            elif method != "initialize" and has_envelope(params):
                if era == "handshake":
                    raise refuse_envelope_in_handshake_era()
                envelope_version(method, params, SUPPORTED_PROTOCOL_VERSIONS)  # raises -32022
                handler = None
            else:
                handler = self._methods.get(method)
        except EraError as err:
            raise JsonRpcError(err.code, err.message, err.data) from None
        if handler is None:
            raise JsonRpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return handler, era == "modern"

    def _send_error(
        self, rid: RequestId | None, err: JsonRpcError, sink: Sink | None = None
    ) -> None:
        self._out(encode({"jsonrpc": "2.0", "id": rid, "error": err.to_dict()})[:-1], sink)

    def _out(self, frame: bytes, sink: Sink | None) -> None:
        """One answer (compact JSON without its newline): to the batch, else to the client."""
        if sink is not None:
            sink(frame)
        else:
            self.writer.send_bytes(frame + b"\n")


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
