"""The official MCP Python SDK client drives the real server, unmodified.

``ClientSession`` over ``stdio_client`` initializes, lists the tools and calls each one; the
SDK itself validates every successful result's ``structuredContent`` against the tool's
``outputSchema`` (and the tests ask it to validate the error results too).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from flow_mcp_harness import FakeOllama, server_env, write_config
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import flow_mcp
from flow_core.verify._sandbox import probe_bwrap

#: The official SDK client drives whole runs through the real server.
pytestmark = pytest.mark.slow

Body = Callable[[ClientSession], Awaitable[None]]


def drive(tmp_path: Path, args: list[str], body: Body) -> None:
    """Start ``python -m flow_mcp ARGS`` with the SDK's stdio client and run ``body``."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "flow_mcp", *args], env=server_env(tmp_path)
    )

    async def main() -> None:
        with (tmp_path / "sdk-stderr.log").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                init = await session.initialize()
                assert init.protocol_version == "2025-11-25"
                assert init.server_info.name == "flow"
                assert init.server_info.version == flow_mcp.__version__
                assert init.capabilities.tools is not None
                await body(session)

    anyio.run(main)


def config_args(tmp_path: Path, workspace: Path, ollama: FakeOllama, *extra: str) -> list[str]:
    return ["--config", str(write_config(tmp_path, workspace, ollama.url)), *extra]


def test_sdk_lists_exactly_three_tools(
    tmp_path: Path, workspace: Path, fake_ollama: FakeOllama
) -> None:
    async def body(session: ClientSession) -> None:
        listed = await session.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert sorted(tools) == ["flow_check", "flow_run", "flow_status"]
        for tool in tools.values():
            assert tool.title
            assert tool.description
            assert tool.input_schema["type"] == "object"
            assert tool.input_schema["additionalProperties"] is False
            assert tool.output_schema is not None
            assert tool.output_schema["type"] == "object"
            assert "$defs" in tool.output_schema
            assert tool.annotations is not None
        assert tools["flow_status"].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert tools["flow_status"].annotations.idempotent_hint is True  # type: ignore[union-attr]
        assert tools["flow_run"].annotations.read_only_hint is False  # type: ignore[union-attr]
        assert tools["flow_run"].annotations.destructive_hint is False  # type: ignore[union-attr]
        assert tools["flow_run"].input_schema["required"] == ["task"]
        assert "required" not in tools["flow_check"].input_schema

    drive(tmp_path, config_args(tmp_path, workspace, fake_ollama), body)


def test_sdk_calls_flow_status(tmp_path: Path, workspace: Path, fake_ollama: FakeOllama) -> None:
    async def body(session: ClientSession) -> None:
        result = await session.call_tool("flow_status", {})
        report = result.structured_content
        assert isinstance(report, dict)
        assert report["kind"] == "status"
        assert report["workspace"] == str(workspace)
        assert [c["name"] for c in report["configured_checks"]] == ["ok"]
        assert result.is_error is (not report["ok"])
        assert result.is_error is False

    drive(tmp_path, config_args(tmp_path, workspace, fake_ollama), body)


def test_sdk_calls_flow_check(tmp_path: Path, workspace: Path, fake_ollama: FakeOllama) -> None:
    async def body(session: ClientSession) -> None:
        result = await session.call_tool("flow_check", {"name": "ok"})
        report = result.structured_content
        assert isinstance(report, dict)
        assert result.is_error is False, report
        assert report["status"] == "passed"
        assert [(c["name"], c["status"]) for c in report["checks"]] == [("ok", "passed")]
        # How the check ran reaches the MCP client: jailed by default where bubblewrap works.
        usable = probe_bwrap().usable
        assert report["checks"][0]["sandbox"] == ("bwrap" if usable else "none")
        assert report["sandbox"]["runs_as"] == report["checks"][0]["sandbox"]
        every = await session.call_tool("flow_check", {})
        assert every.is_error is False

    drive(tmp_path, config_args(tmp_path, workspace, fake_ollama, "--trusted"), body)


def test_sdk_validates_error_results_too(
    tmp_path: Path, workspace: Path, fake_ollama: FakeOllama
) -> None:
    async def body(session: ClientSession) -> None:
        untrusted = await session.call_tool("flow_check", {})
        assert untrusted.is_error is True
        await session.validate_tool_result("flow_check", untrusted)
        invalid = await session.call_tool("flow_run", {"task": ""})
        assert invalid.is_error is True
        await session.validate_tool_result("flow_run", invalid)
        assert isinstance(invalid.structured_content, dict)
        assert invalid.structured_content["errors"][0]["code"] == "invalid_arguments"

    drive(tmp_path, config_args(tmp_path, workspace, fake_ollama), body)


def test_sdk_calls_flow_run_with_progress(
    tmp_path: Path, workspace: Path, fake_ollama: FakeOllama
) -> None:
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def body(session: ClientSession) -> None:
        result = await session.call_tool(
            "flow_run", {"task": "Create hello.txt saying hello"}, progress_callback=on_progress
        )
        report = result.structured_content
        assert isinstance(report, dict)
        assert report["kind"] == "run"
        assert report["task"] == "Create hello.txt saying hello"
        assert result.is_error is (not report["ok"])
        await session.validate_tool_result("flow_run", result)
        assert report["changed_files"] == ["hello.txt"], report
        assert report["verified"] is True, report
        # Recorded in the run store (XDG_STATE_HOME of the harness), like a CLI run.
        assert report["run_dir"] == str(tmp_path / "state" / "flow" / "runs" / report["run_id"])
        assert (Path(report["run_dir"]) / "transcript.jsonl").stat().st_size > 0

    drive(tmp_path, config_args(tmp_path, workspace, fake_ollama, "--trusted"), body)
    assert (workspace / "hello.txt").read_text() == "hello\n"
    assert fake_ollama.requests, "the run never reached the loopback model"
    values = [v for v, _ in progress]
    assert values, "no notifications/progress for a request with a progressToken"
    assert values == sorted(set(values))
    words = [m for _, m in progress if m is not None and "(still running," not in m]
    assert [m for m in words if m.startswith("run finished")] == ["run finished: verified"]
    assert words[-1] == "run finished: verified", words
    assert any(m.startswith("coder: model replied in ") for m in words), words


def test_sdk_sees_unknown_tool_as_an_error(
    tmp_path: Path, workspace: Path, fake_ollama: FakeOllama
) -> None:
    from mcp.shared.exceptions import MCPError

    seen: list[Any] = []

    async def body(session: ClientSession) -> None:
        try:
            await session.call_tool("flow_delete", {})
        except MCPError as err:
            seen.append(err)
        assert await session.send_ping() is not None

    drive(tmp_path, config_args(tmp_path, workspace, fake_ollama), body)
    assert len(seen) == 1
    assert "flow_delete" in str(seen[0])


def test_readme_mcp_json_works_as_written(
    tmp_path: Path, workspace: Path, fake_ollama: FakeOllama
) -> None:
    """The README's client entry (user scope, ``~/.claude.json``), filled in, serves.

    The ``claude mcp add --scope user`` command shown beside it launches the same argv.
    """
    import json
    import re
    import shlex

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    block = re.search(r"```json\n(.*?)```", readme, re.S)
    assert block is not None, "README has no json block"
    entry = json.loads(block.group(1))["mcpServers"]["flow"]
    assert entry["type"] == "stdio"
    add = re.search(r"```sh\n(claude mcp add .*?)```", readme, re.S)
    assert add is not None, "README has no claude mcp add command"
    words = shlex.split(add.group(1).replace("\\\n", " "))
    assert words[:5] == ["claude", "mcp", "add", "--scope", "user"]
    assert words[5:7] == ["flow", "--"]
    assert words[7:] == [entry["command"], *entry["args"]]
    config = write_config(tmp_path, workspace, fake_ollama.url)
    script = Path(sys.executable).parent / "flow-mcp"
    assert script.exists()
    fill = {
        "/absolute/path/to/.venv/bin/flow-mcp": str(script),
        "/absolute/path/to/project": str(workspace),
        "/absolute/path/to/flow-operator.toml": str(config),
    }
    command = fill[entry["command"]]
    args = [fill.get(a, a) for a in entry["args"]]
    params = StdioServerParameters(command=command, args=args, env=server_env(tmp_path))

    async def main() -> None:
        with (tmp_path / "readme-stderr.log").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool("flow_check", {"name": "ok"})
                assert result.is_error is False
                status = await session.call_tool("flow_status", {})
                assert isinstance(status.structured_content, dict)
                assert status.structured_content["trusted"] is True
                assert status.structured_content["workspace"] == str(workspace)

    anyio.run(main)
