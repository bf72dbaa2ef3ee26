"""End to end with Rose: the official MCP SDK client drives ``python -m flow_mcp --nvim SOCK``.

A real headless Neovim runs flow-rose's ``rose.tools`` test double (shipped under
``packages/flow-rose/tests/fixtures/rtp``); the fake Ollama plays a scripted model whose coder
writes ``hello.txt``. Every write goes through Rose: a loaded clean buffer follows the disk,
an unsaved buffer is never overwritten. Skipped with a reason where Neovim or the ``editor``
extra is missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from flow_mcp_harness import FakeOllama, server_env, write_config
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

pynvim = pytest.importorskip("pynvim", reason="the editor extra (flow-rose, pynvim) is missing")
pytest.importorskip("flow_rose", reason="the editor extra (flow-rose) is missing")

pytestmark = pytest.mark.nvim

RTP = Path(__file__).resolve().parents[2] / "flow-rose" / "tests" / "fixtures" / "rtp"
START_DEADLINE_S = 30.0


@dataclass
class Neovim:
    root: Path
    socket: Path
    workspace: Path
    user: Any  # the test's own pynvim connection: it plays the user


def _close_user(user: Any) -> None:
    # pynvim closes its event loop before the socket close it scheduled has run; give the
    # loop that one turn so the socket is closed now (no ResourceWarning later).
    loop = user._session.loop
    aio = getattr(loop, "_loop", None)
    transport = getattr(loop, "_transport", None)
    if aio is not None and transport is not None and not aio.is_closed():
        transport.close()
        aio.call_soon(aio.stop)
        aio.run_forever()
    with contextlib.suppress(Exception):
        user.close()


@pytest.fixture
def neovim() -> Iterator[Neovim]:
    binary = os.environ.get("NVIM") or shutil.which("nvim")
    if not binary or not shutil.which(binary):
        pytest.skip("no Neovim binary: install neovim or set NVIM")
    if not (RTP / "lua" / "rose" / "tools.lua").is_file():
        pytest.skip(f"the rose.tools test double is not at {RTP}")
    root = Path(tempfile.mkdtemp(prefix="fmrose-"))  # 0700: a private socket directory
    workspace = root / "ws"
    workspace.mkdir()
    sock = root / "nvim.sock"
    proc = subprocess.Popen(
        [binary, "--headless", "--clean", "-n", "--listen", str(sock), "--cmd", f"set rtp+={RTP}"],
        cwd=workspace,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    user = None
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        while user is None:
            assert proc.poll() is None, f"nvim exited early ({proc.returncode})"
            assert time.monotonic() < deadline, "nvim did not start listening"
            if sock.exists():
                with contextlib.suppress(OSError):
                    user = pynvim.attach("socket", path=str(sock))
            if user is None:
                time.sleep(0.02)  # poll interval while waiting for the socket
        yield Neovim(root=root, socket=sock, workspace=workspace, user=user)
    finally:
        if user is not None:
            _close_user(user)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)


def _load(nvim: Neovim, rel: str, text: str) -> int:
    (nvim.workspace / rel).write_text(text, encoding="utf-8")
    bufnr = int(nvim.user.funcs.bufadd(str(nvim.workspace / rel)))
    nvim.user.funcs.bufload(bufnr)
    return bufnr


def _flow_run(tmp_path: Path, nvim: Neovim, ollama: FakeOllama) -> Any:
    config = write_config(tmp_path, nvim.workspace, ollama.base_url)
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
    buf = _load(neovim, "hello.txt", "old\n")
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
    buf = _load(neovim, "hello.txt", "old\n")
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
