"""End to end with Rose: the official MCP SDK client drives ``python -m flow_mcp --nvim SOCK``.

A real headless Neovim runs flow-rose's ``rose.tools`` test double (shipped under
``packages/flow-rose/tests/fixtures/rtp``); the fake Ollama plays a scripted model whose coder
writes ``hello.txt``. Every write goes through Rose: a loaded clean buffer follows the disk,
an unsaved buffer is never overwritten. Skipped with a reason where Neovim or the ``editor``
extra is missing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from flow_mcp_harness import FakeOllama, server_env, write_config
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from flow_testing.nvim import Editor as Neovim, headless_neovim

pytest.importorskip("pynvim", reason="the editor extra (flow-rose, pynvim) is missing")
pytest.importorskip("flow_rose", reason="the editor extra (flow-rose) is missing")

pytestmark = [pytest.mark.nvim, pytest.mark.slow]

RTP = Path(__file__).resolve().parents[2] / "flow-rose" / "tests" / "fixtures" / "rtp"


@pytest.fixture
def neovim() -> Iterator[Neovim]:
    """A real headless Neovim with flow-rose's ``rose.tools`` double (the shared fixture)."""
    with headless_neovim([RTP], prefix="fmrose-") as editor:
        yield editor


def _flow_run(tmp_path: Path, nvim: Neovim, ollama: FakeOllama) -> Any:
    config = write_config(tmp_path, nvim.workspace, ollama.url)
    args = ["-m", "flow_mcp", "--config", str(config), "--trusted", "--nvim", str(nvim.socket)]
    params = StdioServerParameters(command=sys.executable, args=args, env=server_env(tmp_path))
    out: dict[str, Any] = {}

    async def main() -> None:
        with (tmp_path / "sdk-stderr.log").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool("flow_run", {"task": "create hello.txt"})
                await session.validate_tool_result("flow_run", result)
                out["result"] = result

    anyio.run(main)
    return out["result"]


def test_scripted_run_writes_through_rose_into_a_loaded_buffer(
    tmp_path: Path, neovim: Neovim, fake_ollama: FakeOllama
) -> None:
    buf = neovim.load("hello.txt", "old\n")
    result = _flow_run(tmp_path, neovim, fake_ollama)
    report = result.structured_content
    assert isinstance(report, dict)
    assert report["verified"] is True, report
    assert result.is_error is False
    assert report["changed_files"] == ["hello.txt"]
    # Disk and the user's buffer agree, and the buffer is not left modified.
    assert (neovim.workspace / "hello.txt").read_text(encoding="utf-8") == "hello\n"
    assert neovim.user.api.buf_get_lines(buf, 0, -1, True) == ["hello"]
    assert neovim.user.api.buf_get_option(buf, "modified") is False


def test_scripted_run_never_overwrites_an_unsaved_buffer(
    tmp_path: Path, neovim: Neovim, fake_ollama: FakeOllama
) -> None:
    buf = neovim.load("hello.txt", "old\n")
    neovim.user.api.buf_set_lines(buf, 0, -1, True, ["the user is typing"])
    result = _flow_run(tmp_path, neovim, fake_ollama)
    report = result.structured_content
    assert isinstance(report, dict)
    assert report["verified"] is False
    assert result.is_error is True
    writes = [t for t in report["tool_calls"] if t["name"] == "write_file"]
    assert writes
    assert not any(t["ok"] for t in writes)
    assert neovim.user.api.buf_get_lines(buf, 0, -1, True) == ["the user is typing"]
    assert neovim.user.api.buf_get_option(buf, "modified") is True
    assert (neovim.workspace / "hello.txt").read_text(encoding="utf-8") == "old\n"
