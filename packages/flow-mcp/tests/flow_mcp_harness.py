"""Shared fixtures: an isolated config, the shared loopback fake Ollama, a raw stdio client."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import selectors
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import flow_mcp
from flow_mcp._server import parse_options
from flow_testing.model_server import FakeModelServer

#: Safety net only (never used to wait for something to happen): a test that would otherwise
#: hang fails after this many seconds.
DEADLINE_S = 60.0

INIT_PARAMS = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "flow-mcp-tests", "version": "0"},
}


def without_diff(report: dict[str, Any]) -> dict[str, Any]:
    """The report as a result's second text block carries it: everything but the diff."""
    return {k: v for k, v in report.items() if k != "diff"}


def hello_script(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """A scripted model answering from what each request contains.

    A request with ``format`` is the reviewer (approves); a request offering ``write_file`` is
    the coder (writes ``hello.txt`` once, then says it is done); anything else is the planner.
    """
    messages = body.get("messages", [])
    tools = {t.get("function", {}).get("name") for t in body.get("tools", [])}
    if body.get("format") is not None:
        verdict = {"approved": True, "summary": "hello.txt is fine", "findings": []}
        return json.dumps(verdict), []
    if "write_file" in tools:
        if any(m.get("role") == "tool" for m in messages):
            return "Wrote hello.txt.", []
        write = {"path": "hello.txt", "content": "hello\n"}
        return "", [{"name": "write_file", "arguments": write}]
    return "1. Create hello.txt containing hello.", []


#: The shared loopback model server (``flow_testing.model_server``), played by hello_script.
FakeOllama = FakeModelServer


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    with FakeModelServer(hello_script, models=["fake-model"]) as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def write_config(
    tmp_path: Path,
    workspace: Path,
    base_url: str,
    checks: dict[str, list[str]] | None = None,
    sandbox_mode: str | None = None,
    kind: str = "lint",
) -> Path:
    """An operator config with the given checks (every one required, of ``kind``, over all
    files).

    ``sandbox_mode = "off"`` for tests whose checks talk to the test through files outside
    the workspace (FIFOs, pid files), which the default jail hides.
    """
    lines = [
        f"workspace_dir = {json.dumps(str(workspace))}",
        "[ollama]",
        f"base_url = {json.dumps(base_url)}",
        'model = "fake-model"',
        "timeout = 30",
        "[agent]",
        "max_iterations = 4",
        "max_cycles = 1",
    ]
    for name, argv in (checks or {"ok": [sys.executable, "-c", "print('ok')"]}).items():
        lines += [
            f"[checks.{name}]",
            f"cmd = {json.dumps(argv)}",
            "timeout = 30000",
            "required = true",
            f"kind = {json.dumps(kind)}",
            'filetypes = ["*"]',
        ]
    if sandbox_mode is not None:
        lines += ["[sandbox]", f"mode = {json.dumps(sandbox_mode)}"]
    path = tmp_path / "operator.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def server_env(tmp_path: Path) -> dict[str, str]:
    """The environment for a server process: no user config, no proxies, a private run store."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    xdg = tmp_path / "xdg"
    xdg.mkdir(exist_ok=True)
    env["XDG_CONFIG_HOME"] = str(xdg)
    env["XDG_STATE_HOME"] = str(tmp_path / "state")  # the run store of flow_run
    env["PYTHONUNBUFFERED"] = "1"
    return env


class RawServer:
    """``python -m flow_mcp`` on pipes, driven one raw line at a time.

    Every byte read from stdout is kept, so :meth:`assert_stdout_pure` can check that each
    line is a JSON-RPC 2.0 message.
    """

    def __init__(self, args: list[str], env: dict[str, str], stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self._stderr = stderr_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "flow_mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.stdout_fd = self.proc.stdout.fileno()
        self._buffer = b""
        self.lines: list[bytes] = []

    # -- writing
    def send_raw(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def request(self, rid: Any, method: str, params: Any = None) -> dict[str, Any]:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.recv()

    def notify(self, method: str, params: Any = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def initialize(self) -> dict[str, Any]:
        reply = self.request(0, "initialize", INIT_PARAMS)
        assert "result" in reply, reply
        self.notify("notifications/initialized")
        return reply

    # -- reading
    def _fill(self, deadline_s: float = DEADLINE_S) -> bool:
        with selectors.DefaultSelector() as sel:
            sel.register(self.stdout_fd, selectors.EVENT_READ)
            if not sel.select(deadline_s):
                raise AssertionError(f"no output within {deadline_s}s; stderr:\n{self.stderr()}")
        chunk = os.read(self.stdout_fd, 1 << 20)
        self._buffer += chunk
        return bool(chunk)

    def recv_line(self) -> bytes | None:
        """The next stdout line, or None at EOF."""
        while b"\n" not in self._buffer:
            if not self._fill():
                return None
        line, self._buffer = self._buffer.split(b"\n", 1)
        self.lines.append(line)
        return line

    def recv(self) -> dict[str, Any]:
        """The next message that is not a notification."""
        while True:
            line = self.recv_line()
            assert line is not None, f"stdout closed; stderr:\n{self.stderr()}"
            msg = json.loads(line)
            if "id" in msg:
                return msg  # type: ignore[no-any-return]

    def read_to_eof(self) -> None:
        while self.recv_line() is not None:
            pass
        assert self._buffer == b"", f"trailing bytes without newline: {self._buffer!r}"

    # -- ending
    def close_stdin(self) -> None:
        if not self.stdin.closed:
            # Data left in the buffer after the server stopped reading cannot be delivered.
            with contextlib.suppress(BrokenPipeError):
                self.stdin.close()

    def wait(self) -> int:
        return self.proc.wait(timeout=DEADLINE_S)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def assert_stdout_pure(self) -> None:
        for line in self.lines:
            batch = json.loads(line)  # an array only answers a batch (MCP 2025-03-26)
            for msg in batch if isinstance(batch, list) and batch else [batch]:
                self._assert_message(msg, line)

    @staticmethod
    def _assert_message(msg: Any, line: bytes) -> None:
        assert isinstance(msg, dict), line
        assert msg.get("jsonrpc") == "2.0", line
        assert ("id" in msg) != ("method" in msg) or "method" in msg, line
        if "id" in msg:
            assert ("result" in msg) != ("error" in msg), line

    def finish(self) -> int:
        """Close stdin, read stdout to EOF, check purity and return the exit code."""
        self.close_stdin()
        self.read_to_eof()
        code = self.wait()
        self.assert_stdout_pure()
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=DEADLINE_S)
        self.close_stdin()
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self._stderr.close()


ServerFactory = Callable[..., RawServer]


@pytest.fixture
def start_server(
    tmp_path: Path, workspace: Path, fake_ollama: FakeOllama
) -> Iterator[ServerFactory]:
    """Start ``python -m flow_mcp --config <operator.toml> [extra args]`` on raw pipes."""
    started: list[RawServer] = []

    def start(
        *extra: str,
        checks: dict[str, list[str]] | None = None,
        config: bool = True,
        sandbox_mode: str | None = None,
    ) -> RawServer:
        args: list[str] = []
        if config:
            cfg = write_config(tmp_path, workspace, fake_ollama.url, checks, sandbox_mode)
            args += ["--config", str(cfg)]
        server = RawServer(
            [*args, *extra], server_env(tmp_path), tmp_path / f"stderr-{len(started)}.log"
        )
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


class InProcessServer(RawServer):
    """The same session served in this process: ``flow_mcp.run_server`` on a thread, over pipes.

    For protocol logic (JSON-RPC, the lifecycle, framing, tool errors) that needs no process of
    its own: no interpreter start per test. What belongs to a process (fd takeover, signals,
    exit codes of ``python -m flow_mcp``, stderr) stays with :class:`RawServer`. The reading
    side (``recv``, ``finish``, ``assert_stdout_pure``) is RawServer's.
    """

    def __init__(self, args: list[str]) -> None:
        options = parse_options(args)
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        self.stdin = os.fdopen(in_w, "wb")
        self.stdout_fd = out_r
        self._buffer = b""
        self.lines: list[bytes] = []
        self.code: int | None = None

        def serve() -> None:
            try:
                self.code = flow_mcp.run_server(
                    options, stdin_fd=in_r, stdout_fd=out_w, handle_signals=False
                )
            finally:
                os.close(in_r)
                os.close(out_w)

        self.thread = threading.Thread(target=serve, name="flow-mcp-session", daemon=True)
        self.thread.start()

    def wait(self) -> int:
        self.thread.join(DEADLINE_S)
        assert not self.thread.is_alive(), "the in-process session did not end"
        assert self.code is not None, "the in-process session raised (see the log above)"
        return self.code

    def alive(self) -> bool:
        return self.thread.is_alive()

    def stderr(self) -> str:
        return "(in-process: the server's stderr is in pytest's captured output)"

    def kill(self) -> None:
        self.close_stdin()  # end of input ends the session
        self.thread.join(DEADLINE_S)
        with contextlib.suppress(OSError):
            os.close(self.stdout_fd)
        gc.unfreeze()  # the session froze the collector's view of this process at its start


@pytest.fixture
def start_inproc(
    tmp_path: Path, workspace: Path, fake_ollama: FakeOllama, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ServerFactory]:
    """Like ``start_server``, served in this process (:class:`InProcessServer`)."""
    for name, value in server_env(tmp_path).items():
        if name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "HOME") or name.lower().endswith("_proxy"):
            monkeypatch.setenv(name, value)
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    started: list[InProcessServer] = []

    def start(
        *extra: str, checks: dict[str, list[str]] | None = None, kind: str = "lint"
    ) -> RawServer:
        cfg = write_config(tmp_path, workspace, fake_ollama.url, checks, kind=kind)
        server = InProcessServer(["--config", str(cfg), *extra])
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


#: A check that starts a grandchild, writes both pids to the FIFO named by argv[1], then hangs.
HANGING_CHECK = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
fd = os.open(sys.argv[1], os.O_WRONLY)
os.write(fd, f"{os.getpid()} {child.pid}\\n".encode())
os.close(fd)
time.sleep(600)
"""


#: ``HANGING_CHECK`` for ``flow_run``: its first run, the baseline before any model request,
#: passes at once (run/_baseline.py); every later run hangs.
HANGING_AFTER_BASELINE = (
    "import os, sys\n"
    "first = sys.argv[1] + '.baseline'\n"
    "if not os.path.exists(first):\n"
    "    open(first, 'w').close()\n"
    "    sys.exit(0)\n" + HANGING_CHECK
)


def read_fifo(path: Path) -> list[int]:
    """The pids a ``HANGING_CHECK`` wrote to the FIFO at ``path`` (waits at most DEADLINE_S)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            assert sel.select(DEADLINE_S), "the check never reported its pid"
        return [int(p) for p in os.read(fd, 200).decode().split()]
    finally:
        os.close(fd)
