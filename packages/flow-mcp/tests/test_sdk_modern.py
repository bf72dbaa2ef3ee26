"""The official SDK's high-level ``mcp.Client`` in both modes, against the real server.

* ``mode="auto"`` (the default) probes ``server/discover`` first; Flow answers it as the SDK
  2.x defines it, so the client adopts MCP 2026-07-28 (per-request envelope) with no
  fallback to ``initialize``.
* ``mode="legacy"`` performs the ``initialize`` handshake and gets 2025-11-25.

In both modes the client calls every tool and cancels a running ``flow_run`` (leaving its
``call_tool`` scope sends ``notifications/cancelled``); in legacy mode it also pings while
the run is busy (``ping`` is gone from 2026-07-28).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from flow_mcp_harness import (
    DEADLINE_S,
    HANGING_AFTER_BASELINE,
    FakeOllama,
    read_fifo,
    server_env,
    write_config,
)
from mcp import Client, StdioServerParameters

from flow_testing.procs import alive


def _params(tmp_path: Path, workspace: Path, ollama: FakeOllama, checks: Any) -> Any:
    # The hanging check talks to the test through a FIFO outside the workspace, which the
    # check jail would hide: [sandbox] off.
    config = write_config(tmp_path, workspace, ollama.url, checks, "off" if checks else None)
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "flow_mcp", "--config", str(config), "--trusted"],
        env=server_env(tmp_path),
    )


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_sdk_client_connects_and_calls_every_tool(
    tmp_path: Path, workspace: Path, fake_ollama: FakeOllama, mode: str, version: str
) -> None:
    params = _params(tmp_path, workspace, fake_ollama, None)
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async def main() -> None:
        async with Client(params, mode=mode) as client:
            assert client.protocol_version == version
            # auto: adopted from server/discover, never fell back to initialize (and vice versa).
            assert (client.session.discover_result is not None) is (mode == "auto")
            assert (client.session.initialize_result is not None) is (mode == "legacy")
            assert client.server_info is not None
            assert client.server_info.name == "flow"
            assert client.server_capabilities.tools is not None
            listed = await client.list_tools()
            assert sorted(t.name for t in listed.tools) == [
                "flow_check",
                "flow_run",
                "flow_status",
            ]
            status = await client.call_tool("flow_status", {})
            assert status.is_error is False
            check = await client.call_tool("flow_check", {"name": "ok"})
            assert check.is_error is False
            run = await client.call_tool(
                "flow_run", {"task": "Create hello.txt"}, progress_callback=on_progress
            )
            assert run.structured_content is not None
            assert run.structured_content["status"] == "verified", run.structured_content

    anyio.run(main)
    assert "run finished: verified" in progress
    assert (workspace / "hello.txt").read_text() == "hello\n"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sdk_client_cancels_a_running_flow_run(
    tmp_path: Path, workspace: Path, fake_ollama: FakeOllama, mode: str
) -> None:
    fifo = tmp_path / "pids.fifo"
    os.mkfifo(fifo)
    params = _params(
        tmp_path,
        workspace,
        fake_ollama,
        {"hang": [sys.executable, "-c", HANGING_AFTER_BASELINE, str(fifo)]},
    )
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with Client(params, mode=mode) as client:
            async with anyio.create_task_group() as tg:

                async def run() -> None:
                    seen["result"] = await client.call_tool(
                        "flow_run", {"task": "Create hello.txt"}
                    )

                tg.start_soon(run)
                # The coder wrote hello.txt; the host's check now runs (and would for 600 s).
                seen["pids"] = await anyio.to_thread.run_sync(read_fifo, fifo)
                seen["written"] = (workspace / "hello.txt").read_text()
                if mode == "legacy":
                    with anyio.fail_after(DEADLINE_S):
                        # Client.send_ping warns that 2026-07-28 dropped ping (always, even in
                        # legacy mode); the session's own send_ping is the same request.
                        await client.session.send_ping()  # answered while flow_run is busy
                    seen["alive_after_ping"] = all(alive(p) for p in seen["pids"])
                tg.cancel_scope.cancel()  # the SDK sends notifications/cancelled
            status = await client.call_tool("flow_status", {})  # served after the run stopped
            assert status.is_error is False

    anyio.run(main)
    assert "result" not in seen  # cancelled: the call never completed
    assert seen["written"] == "hello\n"
    assert not (workspace / "hello.txt").exists()  # rolled back
    assert not any(alive(p) for p in seen["pids"])  # the check's process group was killed
    if mode == "legacy":
        assert seen["alive_after_ping"] is True
