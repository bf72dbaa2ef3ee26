"""Hard time bounds: a total deadline per model request, ``max_seconds`` per run, and the
connection of an abandoned request closed so the server can stop generating.

The servers here are raw loopback sockets, so the test sees what the server sees: when the
client's connection ends (EOF or a failed send), and how many bytes it managed to drip.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flow_core import BackendError, ChatMessage, FlowConfig, Runtime
from flow_core.models import HTTPSettings
from flow_core.models.openai import OpenAIBackend

PY = sys.executable
#: A required check of a kind the baseline does not run (run/_baseline.py), so the model
#: request starts at once: the run's max_seconds must run out during that request, not during a
#: baseline check run that takes longer than the limit on a loaded machine.
CHECKS = {"lint": {"cmd": [PY, "-c", "print('ok')"], "kind": "check", "filetypes": ["python"]}}


class RawServer:
    """One-connection-at-a-time HTTP server on 127.0.0.1 that either drips or stays silent.

    ``drip_s``: send response headers, then one byte of JSON whitespace every ``drip_s``
    seconds, ``max_drips`` times at most; ``None``: never answer, wait for the client to go.
    ``gone`` is set when the server noticed the client closed the connection.
    """

    def __init__(self, *, drip_s: float | None, max_drips: int = 200) -> None:
        self.drip_s = drip_s
        self.max_drips = max_drips
        self.drips = 0
        self.requests = 0
        self.got_request = threading.Event()
        self.gone = threading.Event()
        self.stop = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.05)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                self._one(conn)

    def _one(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        while len(body) < length:
            body += conn.recv(65536)
        if head.startswith(b"GET"):  # GET /v1/models: lists nothing, so no model is checked
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b'Content-Length: 12\r\n\r\n{"data": []}'
            )
            return
        self.requests += 1
        self.got_request.set()
        if self.drip_s is None:
            conn.settimeout(30)
            try:
                if conn.recv(1) == b"":  # EOF: the client closed its side
                    self.gone.set()
            except OSError:
                self.gone.set()
            return
        try:
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            while self.drips < self.max_drips and not self.stop.is_set():
                conn.sendall(b"1\r\n \r\n")
                self.drips += 1
                # The drip's pace is the scenario itself, not synchronisation.
                self.stop.wait(self.drip_s)
            conn.sendall(b"0\r\n\r\n")
        except OSError:
            self.gone.set()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.sock.close()


@pytest.fixture
def drip() -> Any:
    server = RawServer(drip_s=0.1)
    yield server
    server.close()


@pytest.fixture
def silent() -> Any:
    server = RawServer(drip_s=None)
    yield server
    server.close()


def test_a_dripping_server_is_cut_off_at_the_total_timeout(drip: RawServer) -> None:
    backend = OpenAIBackend(HTTPSettings(drip.url, timeout=1.0, tool_results="native"))
    with pytest.raises(BackendError) as info:
        backend.chat("m", [ChatMessage("user", "hi")])
    assert info.value.code == "backend_timeout"
    assert "whole request" in info.value.message
    # The server saw the connection end long before its 200 drips (20 s) were through.
    assert drip.gone.wait(10)
    assert drip.drips < drip.max_drips
    backend.close()


def test_without_the_total_deadline_the_drip_would_run_on(drip: RawServer) -> None:
    # Negative control: each byte arrives well within the per-read timeout, so only the
    # total deadline stops the request; a 0.5 s read timeout alone never fires.
    import httpx

    with httpx.Client(timeout=0.5, trust_env=False) as client:
        drip.max_drips = 25
        with client.stream("POST", drip.url + "/chat/completions", content=b"{}") as reply:
            received = sum(len(c) for c in reply.iter_bytes())
    assert received == 25


def test_interrupt_closes_the_request_in_flight(
    silent: RawServer, flow_config: Callable[..., FlowConfig], tmp_path: Path
) -> None:
    config = flow_config(CHECKS, backend="openai", openai={"base_url": silent.url})
    backend = OpenAIBackend(HTTPSettings(silent.url, timeout=60, tool_results="native"))
    rt = Runtime(config, trusted=True, backend=backend)
    result: list[Any] = []
    runner = threading.Thread(target=lambda: result.append(rt.run("do it")))
    runner.start()
    assert silent.got_request.wait(30)
    rt.interrupt()
    runner.join(30)
    assert not runner.is_alive()
    assert result[0].status == "interrupted"
    # The server saw the connection close: it could stop generating.
    assert silent.gone.wait(10)
    rt.close()


def test_max_seconds_ends_the_run_with_budget_time(
    silent: RawServer, flow_config: Callable[..., FlowConfig]
) -> None:
    config = flow_config(
        CHECKS,
        # Long enough that the run reaches its first request on a loaded machine (the time
        # before it counts too), short enough for a test: the silent server never answers.
        agent={"max_seconds": 5},
        backend="openai",
        openai={"base_url": silent.url},
    )
    backend = OpenAIBackend(HTTPSettings(silent.url, timeout=60, tool_results="native"))
    with Runtime(config, trusted=True, backend=backend) as rt:
        report = rt.run("do it")
    assert report.status == "failed"
    assert [e.code for e in report.errors] == ["budget_time"]
    assert "agent.max_seconds" in report.errors[0].message
    assert silent.gone.wait(10)
    assert silent.requests == 1  # no role started after the limit
