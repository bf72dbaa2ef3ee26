"""Benchmark: the size of one large ``flow_run`` result over MCP (flow-mcp README, "Results").

One flow-mcp server (``--trusted``) on pipes and the shared loopback fake model, whose coder
writes four files of 200,000 characters in one turn (the case that once made a 1.77 MB
result line). Prints one JSON object: the answer line's size in bytes, the characters of
its text blocks and of ``structuredContent.diff``, whether the diff's text appears in the
text blocks, and the cap in force. Target: the line stays within the cap (default 40,000
characters; the line escapes a few characters more).

Usage: ``python bench/bench_mcp_result_size.py [--max-result-chars N]`` (``nox -s bench``
runs it). To measure another checkout's server, put its ``packages/flow-mcp/src`` first on
``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from flow_testing.model_server import FakeModelServer

FILES = {
    f"big{i}.txt": "".join(f"row {n:05d} of file {i} ".ljust(99, "x") + "\n" for n in range(2_000))
    for i in range(4)
}
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "b", "version": "0"},
}


def _script(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    tools = {t.get("function", {}).get("name") for t in body.get("tools", [])}
    if body.get("format") is not None:
        return json.dumps({"approved": True, "summary": "ok", "findings": []}), []
    if "write_file" in tools:
        if any(m.get("role") == "tool" for m in body.get("messages", [])):
            return "Wrote them.", []
        calls = [
            {"name": "write_file", "arguments": {"path": p, "content": c}} for p, c in FILES.items()
        ]
        return "", calls
    return "1. Write the four files.", []


def _config(root: Path, url: str) -> Path:
    workspace = root / "ws"
    workspace.mkdir()
    lines = [
        f"workspace_dir = {json.dumps(str(workspace))}",
        "[ollama]",
        f"base_url = {json.dumps(url)}",
        'model = "fake-model"',
        "[agent]",
        "max_cycles = 1",
        "[checks.ok]",
        f"cmd = {json.dumps([sys.executable, '-c', 'print(1)'])}",
        "required = true",
        'kind = "lint"',
        'filetypes = ["*"]',
    ]
    path = root / "operator.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def measure(extra: list[str]) -> dict[str, Any]:
    """Run the large task once and describe its answer line."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeModelServer(_script, models=["fake-model"]) as model,
    ):
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        env.update(XDG_CONFIG_HOME=str(root / "xdg"), XDG_STATE_HOME=str(root / "state"))
        cmd = [
            sys.executable,
            "-m",
            "flow_mcp",
            "--config",
            str(_config(root, model.url)),
            "--trusted",
        ]
        call = {"name": "flow_run", "arguments": {"task": "write the four files"}}
        messages = [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
        ]
        with subprocess.Popen(
            [*cmd, *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        ) as proc:
            assert proc.stdin is not None
            assert proc.stdout is not None
            proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
            proc.stdin.flush()
            line = b""
            while b'"id":1' not in line[:40]:
                line = proc.stdout.readline()
                if not line:
                    raise SystemExit("the server ended without answering flow_run")
            proc.stdin.close()
            proc.wait(60)
    result = json.loads(line)["result"]
    texts = [block["text"] for block in result["content"]]
    diff = result["structuredContent"]["diff"]
    return {
        "result_line_bytes": len(line),
        "text_chars": sum(len(t) for t in texts),
        "structured_diff_chars": len(diff),
        "diff_in_text": any("row 01000 of file" in t for t in texts),
        "run_id": result["structuredContent"].get("run_id"),
        "changed_files": len(result["structuredContent"]["changed_files"]),
        "args": extra,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-result-chars", default=None)
    ns, _ = parser.parse_known_args()  # nox -s bench passes the same arguments to every script
    extra = [] if ns.max_result_chars is None else ["--max-result-chars", ns.max_result_chars]
    print(json.dumps({"bench": "mcp_result_size", **measure(extra)}))


if __name__ == "__main__":
    main()
