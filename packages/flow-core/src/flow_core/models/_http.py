"""HTTP helpers shared by the model backends (Ollama's native API, OpenAI-compatible servers).

The rules are ``docs/architecture.md``'s "Trust" section: the default endpoint is
loopback, a non-loopback endpoint needs an explicit ``allow_remote``, environment proxies and
redirects are disabled, and response sizes are bounded while they arrive.

``httpx`` is imported only inside the functions that need it, so that ``flow status`` never
imports it. The URL rule itself lives in ``flow_core._urls`` (the config loader uses it too).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flow_core._catalogue import ErrorCode, codes_of
from flow_core._errors import BackendError
from flow_core._urls import url_problem
from flow_core.models._bodies import (
    encode_json_body,
    excerpt,
    iter_lines_capped,
    read_capped,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "BACKEND_ERROR_CODES",
    "REQUEST_SCOPE",
    "TOOL_RESULT_MODES",
    "HTTPStatusError",
    "Peer",
    "RequestScope",
    "check_backend_settings",
    "check_base_url",
    "encode_json_body",
    "excerpt",
    "iter_lines_capped",
    "make_client",
    "monotonic_ms",
    "read_capped",
    "stream_request",
]

#: Stable ``BackendError.code`` values the HTTP backends raise, with their meaning (a view of
#: the catalogue's rows, ``flow_core._codes``).
BACKEND_ERROR_CODES: dict[str, str] = codes_of("backend")


class _Watch:
    """One HTTP exchange's connection, so that it can be shut down from another thread.

    ``socket.shutdown`` (not ``close``) wakes a thread blocked reading the socket and sends
    the server a FIN, so a server that checks for disconnects can stop generating.
    """

    __slots__ = ("expired", "lock", "sock", "stopped")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sock: socket.socket | None = None
        self.expired = False  # the total deadline passed
        self.stopped = False  # expired or aborted: the connection is (to be) shut down

    def trace(self, event: str, info: Mapping[str, Any]) -> None:
        """httpcore's ``trace`` extension: keep the socket of the connection just opened."""
        if event != "connection.connect_tcp.complete":
            return
        stream = info.get("return_value")
        get = getattr(stream, "get_extra_info", None)
        sock = get("socket") if callable(get) else None
        if isinstance(sock, socket.socket):
            with self.lock:
                self.sock = sock
                late = self.stopped
            if late:
                self._shutdown(sock)

    def stop(self, *, expired: bool = False) -> None:
        with self.lock:
            self.expired = self.expired or expired
            self.stopped = True
            sock = self.sock
        if sock is not None:
            self._shutdown(sock)

    @staticmethod
    def _shutdown(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class RequestScope:
    """The HTTP exchanges a caller may abandon: ``abort()`` shuts their connections down.

    The runtime sets one in ``REQUEST_SCOPE`` around each model request; when it abandons the
    request (``Runtime.interrupt()``, the run's ``max_seconds``) it calls ``abort()``, so the
    helper thread stops reading at once and the server sees the connection close.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watches: list[_Watch] = []
        self.aborted = False

    def add(self, watch: _Watch) -> None:
        with self._lock:
            self._watches.append(watch)
            aborted = self.aborted
        if aborted:
            watch.stop()

    def abort(self) -> None:
        """Shut down every connection of the scope, now and for any opened later."""
        with self._lock:
            self.aborted = True
            watches = list(self._watches)
        for watch in watches:
            watch.stop()


#: The ``RequestScope`` of the model request running in this context (None outside one).
REQUEST_SCOPE: contextvars.ContextVar[RequestScope | None] = contextvars.ContextVar(
    "flow_request_scope", default=None
)


class HTTPStatusError(BackendError):
    """``backend_http``: the server answered with an error status (kept for re-coding).

    Attributes:
        status: the HTTP status code.
        body: the first bytes of the response body.
    """

    default_code = "backend_http"

    def __init__(self, message: str, *, status: int, body: bytes, code: ErrorCode | None = None):
        super().__init__(message, code=code)
        self.status = status
        self.body = body


def check_base_url(url: str, *, allow_remote: bool, setting: str) -> str:
    """Validate a base URL at backend construction; returns it without a trailing ``/``.

    Args:
        url: the base URL.
        allow_remote: whether a non-loopback host is allowed.
        setting: the config key to name in the message (e.g. ``"ollama.base_url"``).

    Raises:
        BackendError: code ``remote_refused`` for a non-loopback host without
            ``allow_remote``, ``backend_malformed`` for a URL that is not usable at all.
    """
    found = url_problem(url, allow_remote=allow_remote)
    if found is None:
        return url.rstrip("/")
    code, problem = found
    if code == "remote_refused":
        table = setting.rpartition(".")[0] or setting
        fix = (
            f"use a loopback URL such as http://127.0.0.1:PORT, or set {table}.allow_remote = "
            "true in the operator config for a server you trust"
        )
    else:
        fix = f"correct {setting} in the operator config"
    raise BackendError(f"{setting}: {problem}; fix: {fix}", code=code)


def make_client(
    base_url: str, *, timeout: float, transport: httpx.BaseTransport | None = None
) -> httpx.Client:
    """An ``httpx.Client`` with Flow's fixed safety settings.

    ``trust_env=False`` (no proxy variables, no ``.netrc``), ``follow_redirects=False``, one
    timeout in seconds for connect, read, write and pool.

    Args:
        base_url: the server root.
        timeout: seconds, > 0.
        transport: an ``httpx`` transport (tests pass ``httpx.MockTransport``).
    """
    import httpx

    return httpx.Client(
        base_url=base_url,
        timeout=httpx.Timeout(timeout),
        trust_env=False,
        follow_redirects=False,
        transport=transport,
        headers={
            "Accept": "application/json, application/x-ndjson",
            "Accept-Encoding": "identity",
            "User-Agent": "flow-core",
        },
    )


def _error_text(body: bytes) -> str:
    """The ``error`` field of a JSON error body, else an excerpt of the body."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return excerpt(body)
    if isinstance(data, Mapping):
        err = data.get("error")
        if isinstance(err, str):
            return excerpt(err)
        if isinstance(err, Mapping) and isinstance(err.get("message"), str):
            return excerpt(err["message"])
    return excerpt(body)


@dataclass(frozen=True)
class Peer:
    """The server a request goes to, in the words its error messages use.

    Attributes:
        server: a human name ("Ollama at http://127.0.0.1:11434").
        fix: what to tell the operator when the server cannot be reached.
        timeout_key: the config key that sets the client's timeout (``"ollama.timeout"``),
            named with its value in a ``backend_timeout`` message; ``None`` names none.
    """

    server: str
    fix: str
    timeout_key: str | None = None


@contextmanager
def stream_request(
    client: httpx.Client, method: str, path: str, *, json_body: Any = None, peer: Peer
) -> Iterator[httpx.Response]:
    """Send a request and yield the streaming response, translating failures.

    The whole exchange, from connecting to the last byte of the body read inside the
    ``with`` block, must finish within the client's timeout (seconds): besides httpx's
    per-operation timeouts, a timer shuts the connection down when that total runs out, so a
    server that sends a byte every half second is cut off too (``backend_timeout``). Each
    exchange uses its own connection (``Connection: close``) so that it can be shut down
    without touching another one; it joins the caller's ``REQUEST_SCOPE`` when one is set.

    A 3xx status raises ``redirect_refused``; other statuses >= 400 raise ``backend_http``
    (the caller may catch it and re-raise with a better code, e.g. ``model_not_found``; the
    error carries ``status`` and ``body`` attributes). Transport failures raise
    ``backend_unreachable`` or ``backend_timeout``.

    Args:
        client: from ``make_client``.
        method / path: the HTTP request, path relative to the client's base URL.
        json_body: request body, sent as JSON.
        peer: the server, named in messages, with the fix and timeout key they give.

    Raises:
        BackendError: see above.
    """
    import httpx

    watch = _Watch()
    scope = REQUEST_SCOPE.get()
    if scope is not None:
        scope.add(watch)
    timer = _deadline_timer(client, watch)
    request = f"{method} {path}"
    try:
        kwargs: dict[str, Any] = {"headers": {"Connection": "close"}}
        kwargs["extensions"] = {"trace": watch.trace}
        if json_body is not None:
            kwargs["content"] = encode_json_body(json_body, server=peer.server)
            kwargs["headers"]["Content-Type"] = "application/json"
        if timer is not None:
            timer.start()
        with client.stream(method, path, **kwargs) as response:
            _refuse_status(response, request, peer.server)
            yield response
    except httpx.TransportError as exc:
        if watch.expired:
            raise BackendError(
                _deadline_message(client, request, peer), code="backend_timeout"
            ) from exc
        _raise_transport(exc, client, request, peer)
    finally:
        if timer is not None:
            timer.cancel()


def _deadline_timer(client: httpx.Client, watch: _Watch) -> threading.Timer | None:
    """A timer that shuts ``watch``'s connection when the client's total timeout runs out
    (not started); ``None`` when the client has no read timeout."""
    total = getattr(getattr(client, "timeout", None), "read", None)
    if not (isinstance(total, int | float) and total > 0):
        return None
    timer = threading.Timer(float(total), lambda: watch.stop(expired=True))
    timer.daemon = True
    return timer


def _refuse_status(response: httpx.Response, request: str, server: str) -> None:
    """Raise for a redirect (``redirect_refused``) or an error status (``backend_http``)."""
    if 300 <= response.status_code < 400:
        where = response.headers.get("location", "?")
        raise BackendError(
            f"{server} answered {request} with redirect {response.status_code} "
            f"to {where}; Flow does not follow redirects: fix the base_url",
            code="redirect_refused",
        )
    if response.status_code >= 400:
        body = read_capped(response, 64_000, server=server, truncate=True)
        raise HTTPStatusError(
            f"{server} answered {request} with HTTP {response.status_code}: {_error_text(body)}",
            status=response.status_code,
            body=body,
        )


def _deadline_message(client: httpx.Client, request: str, peer: Peer) -> str:
    """``backend_timeout`` for a request whose total time ran out."""
    server, key = peer.server, peer.timeout_key
    seconds = getattr(getattr(client, "timeout", None), "read", None)
    limit = f"{seconds:g} s" if isinstance(seconds, int | float) else "the time allowed"
    what = key if key is not None else "the timeout"
    named = f" ({key})" if key is not None else ""
    return (
        f"{server} did not finish {request} within {limit}{named}, the limit for the whole "
        f"request; the connection was closed; fix: raise {what} (seconds) in the operator "
        "config, or use a smaller or faster model"
    )


def _raise_transport(exc: Exception, client: httpx.Client, request: str, peer: Peer) -> None:
    """Translate an httpx transport failure into ``BackendError`` (always raises)."""
    import httpx

    server, fix, timeout_key = peer.server, peer.fix, peer.timeout_key
    if isinstance(exc, httpx.TimeoutException):
        message = _timeout_message(exc, client, server, request, timeout_key)
        raise BackendError(message, code="backend_timeout") from exc
    if isinstance(exc, httpx.ConnectError):
        message = f"cannot reach {server} ({_reason(exc)}): {fix}"
        raise BackendError(message, code="backend_unreachable") from exc
    message = (
        f"the connection to {server} failed during {request} ({type(exc).__name__}: {exc}): {fix}"
    )
    raise BackendError(message, code="backend_unreachable") from exc


#: Each httpx timeout class: the phase it ends, in words, and the ``httpx.Timeout`` field.
_TIMEOUT_PHASES = {
    "ConnectTimeout": ("while connecting", "connect"),
    "ReadTimeout": ("while waiting for the reply", "read"),
    "WriteTimeout": ("while sending the request", "write"),
    "PoolTimeout": ("while waiting for a free connection", "pool"),
}


def _timeout_message(
    exc: Exception, client: httpx.Client, server: str, request: str, key: str | None
) -> str:
    """``backend_timeout``: the seconds that ran out and the config key that sets them."""
    phase, field = _TIMEOUT_PHASES.get(type(exc).__name__, ("", "read"))
    seconds = getattr(client.timeout, field)
    limit = f"within {seconds:g} s" if isinstance(seconds, int | float) else "in time"
    if key is not None:
        limit += f" ({key})"
    ran_out = f": the time ran out {phase}" if phase else ""
    what = key if key is not None else "the timeout"
    return (
        f"{server} did not answer {request} {limit}{ran_out}; "
        f"fix: raise {what} (seconds) in the operator config, or use a smaller or faster model"
    )


def _reason(exc: Exception) -> str:
    text = str(exc).lower()
    if "refused" in text:
        return "connection refused"
    return str(exc) or type(exc).__name__


def monotonic_ms() -> float:
    """Milliseconds from a monotonic clock (for ``ChatResponse.duration_ms``)."""
    return time.monotonic() * 1000.0


#: How a backend delivers tool results to the model (``tool_results`` in the config).
TOOL_RESULT_MODES = ("auto", "native", "user")


def check_backend_settings(*, timeout: float, max_response_bytes: int, tool_results: str) -> None:
    """The constructor checks every HTTP backend shares.

    Raises:
        ValueError: ``timeout`` (seconds) or ``max_response_bytes`` (bytes) is not positive, or
            ``tool_results`` is not one of ``TOOL_RESULT_MODES``.
    """
    if tool_results not in TOOL_RESULT_MODES:
        raise ValueError("tool_results must be 'auto', 'native' or 'user'")
    if not timeout > 0:
        raise ValueError("timeout must be a positive number of seconds")
    if max_response_bytes <= 0:
        raise ValueError("max_response_bytes must be a positive number of bytes")
