"""Benchmark: flow-mcp against a minimal server built on the official MCP SDK's Server class.

Both servers run as subprocesses on pipes and are driven by the same raw client in the same
run: ``initialize`` and ``notifications/initialized``, then rounds of ``ping``, ``tools/list``
and ``tools/call flow_status``, each timed as one round trip. Both servers answer
``flow_status`` from the same ``flow_core.Runtime`` and list the same three tool definitions,
so the difference is the protocol stack.

Prints one JSON object: per server and method the median and p99 in microseconds, the ratios
(SDK time / flow-mcp time, higher is better for flow-mcp) and whether the targets hold
(flow-mcp at least 3x faster on every method; ping p99 under 1 ms).

Run: ``python bench/bench_mcp.py [--rounds N]`` (``nox -s bench`` runs it with the SDK
installed).
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
import time
from pathlib import Path
from typing import Any

INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}
DEADLINE_S = 60.0


def sdk_server(config: str) -> None:
    """The comparison server: ``mcp.server.lowlevel.Server`` over the SDK's stdio transport."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    import flow_core
    from flow_mcp._tools import tool_definitions

    loaded = flow_core.load_config(config_file=config)
    runtime = flow_core.Runtime(loaded)
    tools = [types.Tool.model_validate(t) for t in tool_definitions()]

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        report = runtime.status()
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=report.to_json())],
            structured_content=report.to_dict(),
            is_error=not report.ok,
        )

    server: Server[Any] = Server(
        "flow-sdk-baseline", version="0", on_list_tools=on_list_tools, on_call_tool=on_call_tool
    )

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


class Client:
    """A raw JSON-lines client on a subprocess's pipes."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.buf = b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.rfd, selectors.EVENT_READ)
        self.next_id = 0

    def _line(self) -> bytes:
        while b"\n" not in self.buf:
            if not self.sel.select(DEADLINE_S):
                raise TimeoutError("server did not answer")
            chunk = os.read(self.rfd, 1 << 20)
            if not chunk:
                raise EOFError("server closed stdout")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def send(self, msg: dict[str, Any]) -> None:
        data = json.dumps(msg, separators=(",", ":")).encode() + b"\n"
        while data:
            data = data[os.write(self.wfd, data) :]

    def call(self, method: str, params: dict[str, Any] | None = None) -> float:
        """One request; returns the round trip in microseconds."""
        self.next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        start = time.perf_counter_ns()
        self.send(msg)
        while True:
            reply = json.loads(self._line())
            if reply.get("id") == self.next_id:
                break
        elapsed = (time.perf_counter_ns() - start) / 1000.0
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return elapsed

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


CALLS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("ping", "ping", None),
    ("tools_list", "tools/list", None),
    ("flow_status", "tools/call", {"name": "flow_status", "arguments": {}}),
]


def measure(argv: list[str], env: dict[str, str], rounds: int, warmup: int) -> dict[str, Any]:
    client = Client(argv, env)
    try:
        client.call("initialize", INIT)
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        samples: dict[str, list[float]] = {key: [] for key, _, _ in CALLS}
        for i in range(warmup + rounds):
            for key, method, params in CALLS:
                us = client.call(method, params)
                if i >= warmup:
                    samples[key].append(us)
    finally:
        client.close()
    out: dict[str, Any] = {}
    for key, values in samples.items():
        values.sort()
        out[key] = {
            "median_us": round(statistics.median(values), 1),
            "p99_us": round(values[min(len(values) - 1, int(len(values) * 0.99))], 1),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--sdk-server", metavar="CONFIG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sdk_server:
        sdk_server(args.sdk_server)
        return 0

    load_before = round(os.getloadavg()[0], 2)  # tails (p99) mean little on a busy machine
    with tempfile.TemporaryDirectory(prefix="flow-bench-mcp-") as tmp:
        root = Path(tmp)
        ws = root / "ws"
        ws.mkdir()
        (root / "xdg").mkdir()
        config = root / "operator.toml"
        config.write_text(
            f"workspace_dir = {json.dumps(str(ws))}\n"
            '[ollama]\nbase_url = "http://127.0.0.1:9"\nmodel = "bench"\n'
            "[checks.ok]\n"
            f"cmd = {json.dumps([sys.executable, '-c', 'pass'])}\n"
            'timeout = 10000\nrequired = true\nkind = "lint"\nfiletypes = ["*"]\n'
        )
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        env["XDG_CONFIG_HOME"] = str(root / "xdg")
        flow_argv = [sys.executable, "-m", "flow_mcp", "--config", str(config)]
        sdk_argv = [sys.executable, os.path.abspath(__file__), "--sdk-server", str(config)]
        flow = measure(flow_argv, env, args.rounds, args.warmup)
        sdk = measure(sdk_argv, env, args.rounds, args.warmup)

    ratios = {k: round(sdk[k]["median_us"] / flow[k]["median_us"], 2) for k in flow}
    result = {
        "benchmark": "mcp_stdio_round_trips",
        "rounds": args.rounds,
        "cpus": os.cpu_count(),
        "loadavg_1m_before": load_before,
        "flow_mcp": flow,
        "sdk_lowlevel_server": sdk,
        "speedup_median": ratios,
        "ping_p99_us": flow["ping"]["p99_us"],
        "targets": {
            "at_least_3x_faster": all(r >= 3.0 for r in ratios.values()),
            "ping_p99_under_1ms": flow["ping"]["p99_us"] < 1000.0,
        },
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
