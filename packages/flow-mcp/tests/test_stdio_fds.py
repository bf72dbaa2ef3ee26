"""The server started with one of its standard descriptors closed (real subprocesses).

``sh -c 'exec python -m flow_mcp ... N<&-'`` starts the server with descriptor N closed, as
a careless launcher or a daemon manager may. Before the takeover moved its copies above
descriptor 2, a server started with stdin closed took descriptor 0 for its stdout copy,
then pointed descriptor 0 at /dev/null, and every frame write failed with EBADF.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from flow_mcp_harness import DEADLINE_S, INIT_PARAMS, FakeOllama, server_env, write_config

LAUNCH = 'exec "$0" -m flow_mcp "$@" {redirect}'


def _serve(
    tmp_path: Path, workspace: Path, base_url: str, redirect: str, stdin: bytes | None
) -> subprocess.CompletedProcess[bytes]:
    cfg = write_config(tmp_path, workspace, base_url)
    return subprocess.run(
        ["sh", "-c", LAUNCH.format(redirect=redirect), sys.executable, "--config", str(cfg)],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        env=server_env(tmp_path),
        timeout=DEADLINE_S,
        check=False,
    )


def _session() -> bytes:
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "flow_status"}},
    ]
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def test_stdin_closed_reads_end_of_file_and_exits_zero(
    tmp_path: Path, workspace: Path, fake_ollama: FakeOllama
) -> None:
    proc = _serve(tmp_path, workspace, fake_ollama.url, "0<&-", None)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    assert b"Traceback" not in proc.stderr
    assert b"Bad file descriptor" not in proc.stderr


def test_stdout_closed_serves_nothing_and_says_why(
    tmp_path: Path, workspace: Path, fake_ollama: FakeOllama
) -> None:
    proc = subprocess.run(
        [
            "sh",
            "-c",
            LAUNCH.format(redirect="1>&-"),
            sys.executable,
            "--config",
            str(write_config(tmp_path, workspace, fake_ollama.url)),
        ],
        input=_session(),
        stdout=None,
        stderr=subprocess.PIPE,
        env=server_env(tmp_path),
        timeout=DEADLINE_S,
        check=False,
    )
    assert proc.returncode == 2
    assert b"stdout is closed" in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_stderr_closed_still_serves_pure_frames(
    tmp_path: Path, workspace: Path, fake_ollama: FakeOllama
) -> None:
    proc = _serve(tmp_path, workspace, fake_ollama.url, "2>&-", _session())
    assert proc.returncode == 0
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[1]["result"]["structuredContent"]["kind"] == "status"
