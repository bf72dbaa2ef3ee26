"""Fixtures: a real headless Neovim with the ``rose.tools`` test double, and a recording proxy.

Each test that needs Neovim gets its own ``nvim --headless --clean`` process from the suites'
shared fixture (``flow_testing.nvim``): its own process group, a socket inside a fresh 0700
directory, the double's directory on 'runtimepath'. A separate pynvim connection
(``Editor.user``) plays the user: it opens and edits buffers and sets the double's test
globals. The bridge under test never uses that connection.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import pytest

from flow_testing.nvim import Editor, headless_neovim

FIXTURE_RTP = Path(__file__).parent / "fixtures" / "rtp"


@pytest.fixture
def editor() -> Iterator[Editor]:
    """A real headless Neovim with the ``rose.tools`` double on 'runtimepath' (flow_testing)."""
    with headless_neovim([FIXTURE_RTP], prefix="frose-") as running:
        yield running


@dataclass
class RecordingProxy:
    """A Unix-socket relay in front of Neovim that decodes and records every client message.

    The bridge connects to ``path``; bytes are forwarded unchanged both ways, and every
    msgpack-rpc message the *client* sends is appended to ``messages``.
    """

    target: Path
    path: Path
    messages: list[Any] = field(default_factory=list)
    _server: socket.socket | None = None
    _threads: list[threading.Thread] = field(default_factory=list)
    _sockets: list[socket.socket] = field(default_factory=list)

    def start(self) -> None:
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        self._server.listen(4)
        self._spawn(self._accept)

    def _spawn(self, fn: Any, *args: Any) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        self._threads.append(t)

    def _accept(self) -> None:
        assert self._server is not None
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(str(self.target))
            self._sockets += [client, upstream]
            self._spawn(self._pump, client, upstream, True)
            self._spawn(self._pump, upstream, client, False)

    def _pump(self, src: socket.socket, dst: socket.socket, record: bool) -> None:
        unpacker = msgpack.Unpacker(raw=False)
        try:
            while data := src.recv(65536):
                if record:
                    unpacker.feed(data)
                    self.messages.extend(unpacker)
                dst.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        if self._server is not None:
            with contextlib.suppress(OSError):
                self._server.shutdown(socket.SHUT_RDWR)
            self._server.close()
        for s in self._sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        for t in self._threads:
            t.join(timeout=5)


@pytest.fixture
def proxy(editor: Editor) -> Iterator[RecordingProxy]:
    p = RecordingProxy(target=editor.socket, path=editor.root / "proxy.sock")
    p.start()
    try:
        yield p
    finally:
        p.close()
