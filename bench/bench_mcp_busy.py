"""Benchmark: flow-mcp stays responsive while a ``flow_run`` is busy, and stops it on request.

One flow-mcp server (``--trusted``) on pipes, a loopback fake Ollama in this process, and a
raw JSON-lines client. Three figures, each measured side by side with its reference in the
same run:

- **ping while busy**: ping round trips while ``flow_run`` waits for a model reply (the fake
  holds it) and while a check runs, against ping round trips on the idle server. Target: p99
  while busy under 10 ms.
- **cancel during a model request**: ``notifications/cancelled`` is sent while the coder's
  model request is held; a ``tools/list`` sent right behind it is served by the main thread
  only once the run has stopped, so its answer marks "run stopped". The model reply is then
  released: the late ``write_file`` must write nothing. Reference: how long the held reply
  would still have taken. Target: under 0.5 s.
- **cancel during a check**: the coder writes ``hello.txt``, the host's check (a 60 s sleep,
  in Flow's default jail) runs; the cancellation must kill it and roll ``hello.txt`` back.
  Reference: the check's own duration. Target: under 0.2 s.

No response may arrive for a cancelled request (MCP 2025-11-25, "Cancellation"); the script
fails loudly if one does. Prints one JSON object.

Usage: ``python bench/bench_mcp_busy.py [--pings N] [--cancels N]`` (``nox -s bench`` runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DEADLINE_S = 60.0
MODEL_HOLD_S = 30.0  # how long the fake model would take to answer the held request
CHECK_S = 60.0  # how long the check would run


class FakeOllama:
    """Ollama's ``/api/chat`` for one scripted run: planner, coder (writes hello.txt), reviewer.

    With ``hold_coder`` set, the coder's first request of a run waits until ``release`` is set
    (or ``MODEL_HOLD_S`` passes), as a slow model would.
    """

    def __init__(self) -> None:
        self.hold_coder = False
        self.coder_waiting = threading.Event()
        self.release = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _reply(self, body: dict[str, Any]) -> None:
                data = (json.dumps(body) + "\n").encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._reply({"models": [{"name": "bench", "model": "bench"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path == "/api/show":
                    self._reply({"details": {}, "capabilities": ["completion", "tools"]})
                    return
                self._reply(owner.answer(body))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages", [])
        tools = {t.get("function", {}).get("name") for t in body.get("tools", [])}
        message: dict[str, Any] = {"role": "assistant", "content": ""}
        if body.get("format") is not None:
            message["content"] = json.dumps({"approved": True, "summary": "ok", "findings": []})
        elif "write_file" in tools:
            if any(m.get("role") == "tool" for m in messages):
                message["content"] = "Wrote hello.txt."
            else:
                if self.hold_coder:
                    self.coder_waiting.set()
                    self.release.wait(MODEL_HOLD_S)
                write = {"path": "hello.txt", "content": "hello\n"}
                message["tool_calls"] = [{"function": {"name": "write_file", "arguments": write}}]
        else:
            message["content"] = "1. Create hello.txt containing hello."
        return {"model": "bench", "message": message, "done": True, "done_reason": "stop"}


class Client:
    """A raw JSON-lines client on the server's pipes; keeps every message it reads."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.buf = b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.rfd, selectors.EVENT_READ)
        self.next_id = 0
        self.seen: list[dict[str, Any]] = []

    def send(self, msg: dict[str, Any]) -> None:
        data = json.dumps(msg, separators=(",", ":")).encode() + b"\n"
        while data:
            data = data[os.write(self.wfd, data) :]

    def read(self) -> dict[str, Any]:
        while b"\n" not in self.buf:
            if not self.sel.select(DEADLINE_S):
                raise TimeoutError("server did not answer")
            chunk = os.read(self.rfd, 1 << 20)
            if not chunk:
                raise EOFError("server closed stdout")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        msg: dict[str, Any] = json.loads(line)
        self.seen.append(msg)
        return msg

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        self.next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.next_id

    def wait_for(self, rid: int) -> dict[str, Any]:
        while True:
            msg = self.read()
            if msg.get("id") == rid and "method" not in msg:
                return msg

    def round_trip_us(self, method: str) -> float:
        start = time.perf_counter_ns()
        self.wait_for(self.request(method))
        return (time.perf_counter_ns() - start) / 1000.0

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def summary(values: list[float], unit: str) -> dict[str, float]:
    return {
        f"median_{unit}": round(statistics.median(values), 2),
        f"p99_{unit}": round(p99(values), 2),
        f"max_{unit}": round(max(values), 2),
    }


def start_run(client: Client, token: str) -> int:
    params = {
        "name": "flow_run",
        "arguments": {"task": "Create hello.txt"},
        "_meta": {"progressToken": token},
    }
    return client.request("tools/call", params)


def cancel_and_time(client: Client, rid: int) -> float:
    """Cancel ``rid``; seconds until a tools/list sent right behind it is answered."""
    start = time.perf_counter()
    client.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}
    )
    client.wait_for(client.request("tools/list"))
    return time.perf_counter() - start


def wait_progress(client: Client, token: str, message: str) -> None:
    while True:
        msg = client.read()
        params = msg.get("params", {})
        if (
            msg.get("method") == "notifications/progress"
            and params.get("progressToken") == token
            and str(params.get("message", "")).startswith(message)
        ):
            return


def wait_file(path: Path) -> str:
    deadline = time.monotonic() + DEADLINE_S
    while not path.exists() or not path.read_text():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.001)  # a benchmark, not a test: a short poll is fine here
    return path.read_text()


def marked(marker: str) -> list[int]:
    """Host pids of the processes whose command line carries ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline.split(b"\0"):
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def run_bench(root: Path, pings: int, cancels: int) -> dict[str, Any]:
    ws = root / "ws"
    ws.mkdir()
    (root / "xdg").mkdir()
    # The check runs in Flow's jail by default ([sandbox] auto: bubblewrap when usable), which
    # sees only the workspace and has its own pid namespace: it says it started through a
    # file in the workspace, and its host pids are found by a marker in their command line.
    started = ws / ".check-started"
    marker = f"flow-bench-check-{os.getpid()}"
    check = f"import sys, time; open(sys.argv[1], 'w').write('1'); time.sleep({CHECK_S})"
    model = FakeOllama()
    config = root / "operator.toml"
    config.write_text(
        f"workspace_dir = {json.dumps(str(ws))}\n"
        f'[ollama]\nbase_url = {json.dumps(model.url)}\nmodel = "bench"\ntimeout = 120\n'
        "[agent]\nmax_iterations = 4\nmax_cycles = 1\n"
        "[checks.slow]\n"
        f"cmd = {json.dumps([sys.executable, '-c', check, str(started), marker])}\n"
        f'timeout = {int(CHECK_S * 2000)}\nrequired = true\nkind = "lint"\nfiletypes = ["*"]\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env["XDG_CONFIG_HOME"] = str(root / "xdg")
    client = Client([sys.executable, "-m", "flow_mcp", "--config", str(config), "--trusted"], env)
    hello = ws / "hello.txt"
    cancelled_ids: list[int] = []
    try:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b"}}
        client.wait_for(client.request("initialize", init))
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for _ in range(50):  # warm-up, not measured
            client.round_trip_us("ping")
        idle = [client.round_trip_us("ping") for _ in range(pings)]

        busy_model: list[float] = []
        cancel_model: list[float] = []
        model.hold_coder = True
        for i in range(cancels):
            model.coder_waiting.clear()
            model.release.clear()
            rid = start_run(client, f"m{i}")
            assert model.coder_waiting.wait(DEADLINE_S), "the coder's request never came"
            if i == 0:
                busy_model = [client.round_trip_us("ping") for _ in range(pings)]
            cancel_model.append(cancel_and_time(client, rid))
            cancelled_ids.append(rid)
            model.release.set()  # the late reply (a write_file call) must be dropped
        model.hold_coder = False
        client.wait_for(client.request("ping"))
        late_write = hello.exists()

        busy_check: list[float] = []
        cancel_check: list[float] = []
        checks_left: list[int] = []
        seen_pids: list[int] = []
        rolled_back = True
        for i in range(cancels):
            started.unlink(missing_ok=True)
            rid = start_run(client, f"c{i}")
            wait_progress(client, f"c{i}", "check slow: running")
            wait_file(started)
            pids = marked(marker)
            if i == 0:
                busy_check = [client.round_trip_us("ping") for _ in range(pings)]
            cancel_check.append(cancel_and_time(client, rid))
            cancelled_ids.append(rid)
            seen_pids += pids
            checks_left += [p for p in pids if alive(p)]
            rolled_back = rolled_back and not hello.exists()
    finally:
        model.release.set()
        client.close()
        model.httpd.shutdown()
    answered = [m for m in client.seen if m.get("id") in cancelled_ids and "method" not in m]
    if answered:
        raise AssertionError(f"cancelled requests were answered: {answered[:2]}")
    ping_busy_p99_ms = max(p99(busy_model), p99(busy_check)) / 1000.0
    return {
        "benchmark": "mcp_busy_ping_and_cancel",
        "cpus": os.cpu_count(),
        "pings": pings,
        "cancels": cancels,
        "ping_idle": summary(idle, "us"),
        "ping_during_model_request": summary(busy_model, "us"),
        "ping_during_check": summary(busy_check, "us"),
        "ping_busy_p99_over_idle_p99": round(max(p99(busy_model), p99(busy_check)) / p99(idle), 2),
        "cancel_during_model_request": summary([s * 1000 for s in cancel_model], "ms"),
        "cancel_model_vs_held_reply": round(max(cancel_model) / MODEL_HOLD_S, 4),
        "cancel_during_check": summary([s * 1000 for s in cancel_check], "ms"),
        "cancel_check_vs_check_duration": round(max(cancel_check) / CHECK_S, 4),
        "nothing_written_after_cancel": not late_write,
        "check_processes_left": checks_left,
        "check_processes_seen": bool(seen_pids),
        "edits_rolled_back": rolled_back,
        "targets": {
            "ping_busy_p99_under_10ms": ping_busy_p99_ms < 10.0,
            "cancel_model_under_0_5s": max(cancel_model) < 0.5,
            "cancel_check_under_0_2s": max(cancel_check) < 0.2,
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pings", type=int, default=500)
    parser.add_argument("--cancels", type=int, default=5)
    args = parser.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="flow-bench-busy-") as tmp:
        result = run_bench(Path(tmp), args.pings, args.cancels)
    result["loadavg_1m_before"] = load_before
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
