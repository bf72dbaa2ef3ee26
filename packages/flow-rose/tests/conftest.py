"""Fixtures: a real headless Neovim with the ``rose.tools`` test double, and helpers.

Each test that needs Neovim gets its own ``nvim --headless --clean`` process in its own
process group, listening on a socket inside a fresh 0700 directory, with the double's
directory on 'runtimepath'. A separate pynvim connection (``Editor.user``) plays the user:
it opens and edits buffers and sets the double's test globals. The bridge under test never
uses that connection.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import pynvim
import pytest

FIXTURE_RTP = Path(__file__).parent / "fixtures" / "rtp"
START_DEADLINE_S = 30.0


def nvim_binary() -> str | None:
    explicit = os.environ.get("NVIM")
    if explicit:
        return explicit if shutil.which(explicit) else None
    return shutil.which("nvim")


@dataclass
class Editor:
    """One running headless Neovim and the test's own ("user") connection to it."""

    proc: subprocess.Popen[bytes]
    root: Path  # the 0700 temporary directory
    socket: Path
    workspace: Path
    user: Any  # pynvim.Nvim

    def path(self, rel: str) -> Path:
        return self.workspace / rel

    def load(self, rel: str, text: str | None = None) -> int:
        """Create (when ``text`` is given) and load a file into a buffer; returns its number."""
        target = self.path(rel)
        if text is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        bufnr = int(self.user.funcs.bufadd(str(target)))
        self.user.funcs.bufload(bufnr)
        return bufnr

    def lines(self, bufnr: int) -> list[str]:
        return list(self.user.api.buf_get_lines(bufnr, 0, -1, True))

    def type_into(self, bufnr: int, lines: list[str]) -> None:
        """What a user typing does: change the buffer without saving it."""
        self.user.api.buf_set_lines(bufnr, 0, -1, True, lines)

    def option(self, bufnr: int, name: str) -> Any:
        return self.user.api.buf_get_option(bufnr, name)

    def set_option(self, bufnr: int, name: str, value: Any) -> None:
        self.user.api.buf_set_option(bufnr, name, value)

    def set_global(self, name: str, value: Any) -> None:
        self.user.vars[name] = value

    def get_global(self, name: str) -> Any:
        return self.user.vars.get(name)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


def close_nvim(user: Any) -> None:
    """Close a test pynvim connection so its socket is closed now, not at garbage collection.

    (pynvim closes its event loop before the transport's socket close has run.)
    """
    pynvim_loop = user._session.loop
    aio = getattr(pynvim_loop, "_loop", None)
    transport = getattr(pynvim_loop, "_transport", None)
    if transport is not None and aio is not None and not aio.is_closed():
        transport.close()
        aio.call_soon(aio.stop)
        aio.run_forever()
    with contextlib.suppress(Exception):
        user.close()


def _connect_with_retries(sock: Path, proc: subprocess.Popen[bytes]) -> Any:
    """Attach as soon as Neovim listens; bounded by a deadline, not a fixed sleep."""
    deadline = time.monotonic() + START_DEADLINE_S
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nvim exited early with status {proc.returncode}")
        if sock.exists():
            try:
                return pynvim.attach("socket", path=str(sock))
            except OSError as err:
                last = err
        time.sleep(0.02)  # poll interval while waiting for the socket
    raise RuntimeError(f"nvim did not listen on {sock} within {START_DEADLINE_S} s: {last}")


@pytest.fixture
def editor() -> Iterator[Editor]:
    binary = nvim_binary()
    if binary is None:
        pytest.skip("no Neovim binary: install neovim or set NVIM")
    root = Path(tempfile.mkdtemp(prefix="frose-"))  # mkdtemp makes it 0700
    workspace = root / "ws"
    workspace.mkdir()
    sock = root / "nvim.sock"
    proc = subprocess.Popen(
        [
            binary,
            "--headless",
            "--clean",
            "-n",
            "--listen",
            str(sock),
            "--cmd",
            f"set rtp+={FIXTURE_RTP}",
        ],
        cwd=workspace,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    user = None
    try:
        user = _connect_with_retries(sock, proc)
        yield Editor(proc=proc, root=root, socket=sock, workspace=workspace, user=user)
    finally:
        if user is not None:
            close_nvim(user)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)


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
