"""Framing: stdio lines ↔ JSON values (MCP 2025-11-25, "Basic > Transports > stdio").

The stdio transport carries one JSON-RPC message per line. Lines are UTF-8 and end with
``\\n``; a message must never contain a raw newline, so the writer emits compact JSON whose
strings escape every control character. Nothing but protocol messages may reach the client's
stdout, which is why :class:`FrameWriter` writes to a private descriptor (see ``_server``).

This layer knows nothing about JSON-RPC: it turns a line into a Python value or a
:class:`FrameError` carrying the JSON-RPC error code the session should answer with.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import threading
from collections.abc import Callable
from typing import Any, BinaryIO, Final

#: Largest accepted frame in bytes, newline included (4 MiB). Longer lines end the session.
MAX_FRAME_BYTES: Final = 4 * 1024 * 1024

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600

_CONTENT_LENGTH = b"content-length:"


class FrameError(Exception):
    """A line that is not one JSON value.

    Attributes:
        code: the JSON-RPC error code to answer with (``-32700`` or ``-32600``).
        message: a human-readable reason, safe to send to the client.
        fatal: True when the session must close after answering (oversized frame).
    """

    def __init__(self, code: int, message: str, *, fatal: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fatal = fatal


class FrameReader:
    """Reads newline-delimited frames from a binary stream.

    Args:
        stream: a buffered binary stream (``os.fdopen(fd, "rb")``).
        limit: the largest frame in bytes (default :data:`MAX_FRAME_BYTES`).
    """

    def __init__(self, stream: BinaryIO, *, limit: int = MAX_FRAME_BYTES) -> None:
        self._stream = stream
        self._limit = limit

    def read_line(self) -> bytes | None:
        """Return the next non-blank line without its line ending, or None at EOF.

        Raises:
            FrameError: the line is longer than the limit (``fatal`` is set: the rest of the
                stream can no longer be trusted to start at a message boundary).
        """
        while True:
            line = self._stream.readline(self._limit + 1)
            if not line:
                return None
            if len(line) > self._limit:
                raise FrameError(
                    INVALID_REQUEST,
                    f"frame larger than {self._limit} bytes; closing the session",
                    fatal=True,
                )
            line = line.rstrip(b"\r\n")
            if line.strip():
                return line


class DescriptorFrameReader(FrameReader):
    """Reads frames straight from a descriptor, waking up for signals without a race.

    A blocking ``read()`` on stdin cannot be relied on to notice a signal: one that arrives
    after Python last checked for pending signals but before the ``read`` syscall starts is
    only handled once a line comes in, so an idle server would ignore SIGTERM. Here every
    wait is a ``select`` on the input descriptor *and* the wakeup descriptor given to
    ``signal.set_wakeup_fd``, which the interpreter writes to on every signal: the wait
    always ends, and the Python-level handler runs as soon as it does.

    Args:
        fd: the input descriptor (the client's stdin, moved to a private descriptor).
        limit: the largest frame in bytes, newline included.
        wakeup_fd: the read end of the signal wakeup pipe, or None (plain blocking reads).
    """

    def __init__(self, fd: int, *, limit: int = MAX_FRAME_BYTES, wakeup_fd: int | None = None):
        self._fd = fd
        self._limit = limit
        self._wakeup = wakeup_fd
        self._buf = bytearray()
        self._eof = False
        self._stop_r: int | None = None
        self._stop_w: int | None = None

    def stop(self) -> None:
        """Make a :meth:`read_line` that waits (now or later, on any thread) return None.

        Used by the server's reader thread when the session ends before the client closed
        stdin (a signal, an oversized frame). Idempotent; the pipe is freed by :meth:`close`.
        """
        if self._stop_w is None:
            self._open_stop_pipe()
        assert self._stop_w is not None
        with contextlib.suppress(OSError):
            os.write(self._stop_w, b"x")

    def close(self) -> None:
        """Free the stop pipe (the input descriptor itself belongs to the caller)."""
        for fd in (self._stop_r, self._stop_w):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._stop_r = self._stop_w = None

    def prepare_stop(self) -> None:
        """Create the stop pipe now, before another thread starts waiting in :meth:`read_line`."""
        if self._stop_w is None:
            self._open_stop_pipe()

    def _open_stop_pipe(self) -> None:
        self._stop_r, self._stop_w = os.pipe()
        os.set_blocking(self._stop_w, False)

    def read_line(self) -> bytes | None:
        """Same contract as :meth:`FrameReader.read_line`."""
        while True:
            end = self._buf.find(b"\n")
            if end < 0 and not self._eof:
                if len(self._buf) > self._limit:
                    raise self._too_large()
                self._fill()
                continue
            if end < 0:  # EOF: a last line without its newline, then nothing
                if not self._buf:
                    return None
                end = len(self._buf) - 1
            line = bytes(self._buf[: end + 1])
            del self._buf[: end + 1]
            if len(line) > self._limit:
                raise self._too_large()
            line = line.rstrip(b"\r\n")
            if line.strip():
                return line

    def _fill(self) -> None:
        watched = [fd for fd in (self._fd, self._wakeup, self._stop_r) if fd is not None]
        if len(watched) > 1:
            while True:
                ready, _, _ = select.select(watched, [], [])
                if self._stop_r is not None and self._stop_r in ready:
                    self._eof = True
                    self._buf.clear()
                    return
                if self._wakeup is not None and self._wakeup in ready:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wakeup, 512)  # drained; the handler has run or will now
                if self._fd in ready:
                    break
        chunk = os.read(self._fd, 1 << 16)
        if chunk:
            self._buf += chunk
        else:
            self._eof = True

    def _too_large(self) -> FrameError:
        return FrameError(
            INVALID_REQUEST,
            f"frame larger than {self._limit} bytes; closing the session",
            fatal=True,
        )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode(line: bytes) -> Any:
    """Parse one frame into a JSON value.

    Args:
        line: the frame's bytes, without the trailing newline.

    Raises:
        FrameError: ``-32700`` for invalid UTF-8 or invalid JSON, including LSP-style
            ``Content-Length:`` headers, which the MCP stdio transport does not use.
    """
    if line[:15].lower() == _CONTENT_LENGTH:
        raise FrameError(
            PARSE_ERROR,
            "Content-Length framing is not supported: send one JSON-RPC message per line",
        )
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as err:
        raise FrameError(PARSE_ERROR, f"frame is not valid UTF-8: {err.reason}") from err
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as err:
        raise FrameError(PARSE_ERROR, f"frame is not valid JSON: {err}") from err


def encode(message: dict[str, Any]) -> bytes:
    """Serialise one message as a compact, ASCII-only JSON line ending in ``\\n``.

    ASCII output is valid UTF-8 and survives lone surrogates that a check's output may carry.
    """
    return json.dumps(message, separators=(",", ":"), ensure_ascii=True).encode("ascii") + b"\n"


def result_frame(rid: str | int, result_json: bytes) -> bytes:
    """A response (no newline) around a ``result`` that is already compact ASCII JSON."""
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(rid, ensure_ascii=True).encode("ascii")
    return head + b',"result":' + result_json + b"}"


class FrameWriter:
    """Writes whole frames to a file descriptor, one ``write`` loop per message.

    One lock keeps frames whole and never interleaved: answers from the main thread, ``ping``
    answers from the reader thread and progress notifications all go through it.

    Args:
        fd: the protocol descriptor (the client's stdout).
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        #: True while the main thread writes a frame; a signal handler (which runs on the main
        #: thread) must not interrupt then, or the client would receive half a line.
        self.busy = False
        #: Called after each whole frame (the server uses it to deliver a deferred signal).
        self.after_write: Callable[[], None] | None = None
        #: Set once a write failed (the client stopped reading); no frame is written after.
        self.broken = False
        #: Called once, on the writing thread, when the first write fails (the session stops
        #: its work: nobody can receive the answer).
        self.on_broken: Callable[[], None] | None = None

    def send(self, message: dict[str, Any]) -> None:
        """Write one message.

        Raises:
            OSError: the client closed its end (``BrokenPipeError``) or another write failure.
        """
        self.send_bytes(encode(message))

    def send_result_json(self, rid: str | int, result_json: bytes) -> None:
        """Write a response whose ``result`` is already compact ASCII JSON (no newlines)."""
        self.send_bytes(result_frame(rid, result_json) + b"\n")

    def send_bytes(self, frame: bytes) -> None:
        """Write one already-encoded frame (it must end with its single newline).

        Raises:
            OSError: the write failed (``BrokenPipeError``: the client stopped reading), now
                or for an earlier frame; :attr:`on_broken` has been called once by then.
        """
        data = memoryview(frame)
        main = threading.current_thread() is threading.main_thread()
        failed: OSError | None = None
        with self._lock:
            if self.broken:
                raise BrokenPipeError("the client stopped reading; nothing more is written")
            self.busy = main
            try:
                while data:
                    written = os.write(self._fd, data)
                    data = data[written:]
            except OSError as err:
                self.broken = True
                failed = err
            finally:
                self.busy = False
        if failed is not None:
            if self.on_broken is not None:
                self.on_broken()
            raise failed
        if main and self.after_write is not None:
            self.after_write()

    def drain(self) -> None:
        """Wait until no other thread is in the middle of a frame (taken and released)."""
        with self._lock:
            pass
