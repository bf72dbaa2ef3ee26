"""The one connection to Neovim, owned by one worker thread.

Why pynvim is imported here, at module import time: pynvim remembers, when it is first
imported, which thread is the "main" one, and installs SIGINT/SIGTERM handlers whenever its
event loop runs on that thread. Importing it while ``flow_rose`` is imported (on the
application's main thread, before any bridge exists) makes the worker below a *non*-main thread
to pynvim, so pynvim never touches signal handling and Flow's own SIGTERM/Ctrl-C handling keeps
working. Importing it lazily from the worker would make the worker the "main" thread and break
that (``add_signal_handler`` only works on the real main thread).

Threading model: the connection is created, used for every request and closed on a single
dedicated worker thread, fed through a queue; callers wait on a ``Future`` with the editor
request timeout (seconds). pynvim sessions are not thread-safe, and this keeps every pynvim
object on one thread. On a timeout the caller interrupts the worker's event loop with pynvim's
thread-safe call and the connection is closed for good (its state is unknown); if Neovim dies,
the pending request fails at once with a connection error.

What is sent: only ``nvim_exec_lua`` requests carrying one of two constant Lua strings, built in
exactly one place (``_send``). The bridge uses pynvim's msgpack-rpc ``Session`` directly, not its
higher-level ``Nvim`` object, so not even the ``nvim_get_api_info`` handshake is sent; the one
other message on the wire is the ``nvim_set_client_info`` notification pynvim sends when the
session opens (it names the client; it runs no Lua, command or keys).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import threading
from collections.abc import Mapping
from concurrent.futures import Future, TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

import pynvim  # type: ignore[import-untyped]  # imported on the main thread: see module doc

from flow_core import EditorError, ErrorCode
from flow_rose._errors import editor_error
from flow_rose._socket import check_peer

SCHEMAS_LUA = "return require('rose.tools').schemas()"
"""The first of the two Lua expressions the bridge ever sends (no parameters)."""

CALL_LUA = "return require('rose.tools').call(...)"
"""The second: the tool name and its argument object travel as the two parameters."""

_CLOSE_JOIN_SECONDS = 5.0


class _EventLoop(Protocol):
    """The part of pynvim's msgpack event loop the bridge uses (thread-safe by design)."""

    def threadsafe_call(self, fn: Any) -> None: ...

    def stop(self) -> None: ...


class _Session(Protocol):
    """The part of ``pynvim.msgpack_rpc.Session`` the bridge uses."""

    @property
    def loop(self) -> _EventLoop: ...

    def request(self, method: str, *args: Any) -> Any: ...

    def close(self) -> None: ...


def _open_session(path: str) -> _Session:
    return cast(_Session, pynvim.socket_session(path))


def _send(session: _Session, kind: Literal["schemas", "call"], args: tuple[Any, ...]) -> Any:
    """The only function that talks to Neovim: one of the two fixed Lua expressions.

    ``schemas`` sends ``SCHEMAS_LUA`` with no parameters; ``call`` sends ``CALL_LUA`` with
    ``(name, arguments)`` as parameters. Nothing else (no other Lua, Ex command or keys) can be
    expressed through this function.
    """
    if kind == "schemas":
        return session.request("nvim_exec_lua", SCHEMAS_LUA, [])
    name, arguments = args
    return session.request("nvim_exec_lua", CALL_LUA, [name, arguments])


@dataclass
class _Job:
    kind: Literal["connect", "schemas", "call"]
    args: tuple[Any, ...]
    future: Future[Any] = field(default_factory=Future)


class Connection:
    """One private connection to Neovim, served by its own worker thread.

    Args:
        path: an already validated Unix socket path.
        timeout: the editor request timeout in seconds (already range-checked).

    Raises:
        EditorError: ``editor_unavailable`` when the socket cannot be connected,
            ``editor_timeout`` when connecting takes longer than ``timeout``.
    """

    def __init__(self, path: str, timeout: float) -> None:
        self._timeout = timeout
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._request_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._failure: str | None = None
        self._closed = False
        self._loop: _EventLoop | None = None
        self._thread = threading.Thread(target=self._serve, name="flow-rose-editor", daemon=True)
        self._thread.start()
        try:
            self._submit("connect", (path,))
        except BaseException:
            self.close()
            raise

    @property
    def timeout(self) -> float:
        """The editor request timeout, in seconds."""
        return self._timeout

    def schemas(self) -> Any:
        """Send ``SCHEMAS_LUA``; returns the decoded Lua value."""
        return self._submit("schemas", ())

    def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Send ``CALL_LUA`` with ``name`` and ``arguments`` (a JSON object) as parameters."""
        try:
            plain = json.loads(json.dumps(dict(arguments), allow_nan=False))
        except (TypeError, ValueError) as err:
            raise editor_error(
                "editor_arguments_invalid",
                f"arguments for {name} are not a JSON object: {err}",
            ) from err
        return self._submit("call", (name, plain))

    def close(self) -> None:
        """Close the connection on the worker thread (idempotent, bounded wait)."""
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
        self._interrupt()
        self._jobs.put(None)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=min(self._timeout, _CLOSE_JOIN_SECONDS))

    # -- caller side -------------------------------------------------------------------

    def _submit(self, kind: Literal["connect", "schemas", "call"], args: tuple[Any, ...]) -> Any:
        with self._request_lock:
            self._check_usable()
            if not self._thread.is_alive():
                raise editor_error("editor_unavailable", "the editor connection has ended")
            job = _Job(kind, args)
            self._jobs.put(job)
            try:
                return job.future.result(timeout=self._timeout)
            except FutureTimeout as err:
                if self._failure is not None and not self._thread.is_alive():
                    # The worker ended (Neovim gone) before it could take this job.
                    raise editor_error(
                        "editor_unavailable",
                        f"the editor connection ended: {self._failure}",
                    ) from err
                what = "connecting to Neovim" if kind == "connect" else "a Rose request"
                reason = f"{what} did not finish within the editor timeout of {self._timeout:g} s"
                self._mark_failed(reason)
                self._interrupt()
                self._jobs.put(None)
                raise editor_error(
                    "editor_timeout", reason + "; the editor connection is closed"
                ) from err

    def _check_usable(self) -> None:
        with self._state_lock:
            if self._failure is not None:
                raise editor_error(
                    "editor_unavailable",
                    f"the editor connection is closed after an earlier failure "
                    f"({self._failure}); reconnect",
                )
            if self._closed:
                raise editor_error("editor_unavailable", "the editor connection was closed")

    def _mark_failed(self, reason: str) -> None:
        with self._state_lock:
            if self._failure is None:
                self._failure = reason

    def _interrupt(self) -> None:
        """Stop the worker's pynvim event loop from another thread (pynvim's thread-safe call)."""
        loop = self._loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):  # a closed loop has nothing running
            loop.threadsafe_call(loop.stop)

    # -- worker side ---------------------------------------------------------------------

    def _serve(self) -> None:
        session: _Session | None = None
        try:
            while True:
                job = self._jobs.get()
                if job is None:
                    return
                if not job.future.set_running_or_notify_cancel():
                    continue
                try:
                    if job.kind == "connect":
                        session = _open_session(job.args[0])
                        self._loop = session.loop
                        _check_session_peer(session, job.args[0])
                        result: Any = None
                    else:
                        assert session is not None
                        result = _send(session, job.kind, job.args)
                except EditorError as err:  # the peer is not ours: never used, closed now
                    self._mark_failed(err.message)
                    job.future.set_exception(err)
                    return
                except (OSError, EOFError) as err:
                    # The socket is gone (Neovim killed or exited), refused, or our own
                    # interrupt after a timeout stopped the loop: the connection is over.
                    if self._closed:
                        reason = "the editor connection was closed"
                    else:
                        reason = f"Neovim is unavailable: {type(err).__name__}: {err}"
                    self._mark_failed(reason)
                    job.future.set_exception(_error("editor_unavailable", reason, err))
                    return
                except Exception as err:
                    # A Lua error inside rose.tools (or no rose.tools at all); the connection
                    # itself is still sound.
                    job.future.set_exception(
                        _error(
                            "editor_protocol",
                            f"Rose's rose.tools raised an error: {_first_line(err)}",
                            err,
                        )
                    )
                else:
                    job.future.set_result(result)
        finally:
            self._loop = None
            if session is not None:
                _close_session(session)
            self._fail_pending()

    def _fail_pending(self) -> None:
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return
            if job is not None and job.future.set_running_or_notify_cancel():
                job.future.set_exception(
                    _error("editor_unavailable", "the editor connection was closed")
                )


def _check_session_peer(session: _Session, path: str) -> None:
    """Refuse a session whose socket is served by another user (see ``_socket.check_peer``).

    The connected socket is taken from pynvim's asyncio transport (the same layout
    :func:`_close_session` relies on); when it cannot be found the peer cannot be verified
    and the session is refused (fail closed).

    Raises:
        EditorError: ``editor_socket_peer``.
    """
    transport = getattr(session.loop, "_transport", None)
    sock = None
    if isinstance(transport, asyncio.BaseTransport):
        sock = transport.get_extra_info("socket")
    if sock is None:
        raise editor_error(
            "editor_socket_peer",
            f"cannot reach the connected socket for {path!r} to verify its peer "
            "(unknown pynvim layout); refusing to use it",
        )
    check_peer(sock, path)


def _close_session(session: _Session) -> None:
    """Close a pynvim session so that its socket is really closed (on the worker thread).

    pynvim's own ``close`` closes the asyncio transport and then the event loop at once, so the
    transport's scheduled socket close never runs and the socket leaks until garbage
    collection (with a ``ResourceWarning``). When pynvim's asyncio loop is recognisable, the
    transport is closed first and the loop is given the one turn that closes the socket; any
    other pynvim layout falls back to the plain ``close``.
    """
    pynvim_loop = session.loop
    aio = getattr(pynvim_loop, "_loop", None)
    transport = getattr(pynvim_loop, "_transport", None)
    with contextlib.suppress(Exception):
        if (
            isinstance(aio, asyncio.AbstractEventLoop)
            and isinstance(transport, asyncio.BaseTransport)
            and not aio.is_closed()
            and not aio.is_running()
        ):
            transport.close()
            aio.call_soon(aio.stop)
            aio.run_forever()
    with contextlib.suppress(Exception):  # closing a dead connection may fail; it is gone
        session.close()


def _error(code: ErrorCode, message: str, cause: BaseException | None = None) -> EditorError:
    err = editor_error(code, message)
    err.__cause__ = cause
    return err


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
