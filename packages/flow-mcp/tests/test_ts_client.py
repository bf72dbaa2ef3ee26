"""A long ``flow_run`` survives a TypeScript-SDK client (flow-mcp README, "Client timeouts").

The official TypeScript SDK (npm ``@modelcontextprotocol/sdk``, pinned with its lockfile in
``ts_client/``) times a request out after its ``timeout`` unless progress resets the clock
(``resetTimeoutOnProgress``). The client script here calls ``flow_run`` with a 30 s timeout;
the loopback model takes 70 s over the planner's reply, during which no runtime event
happens, so only flow-mcp's progress heartbeats keep the request alive. The run must finish
``verified`` and the client must have seen heartbeats.

The npm packages are installed with ``npm ci`` from the lockfile into pytest's cache folder
(reused while the lockfile is unchanged). Without node 18+ and npm, or when the registry
cannot be reached, the test skips and says why.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flow_mcp_harness import FakeOllama, hello_script, server_env

from flow_testing.model_server import FakeModelServer

HERE = Path(__file__).parent / "ts_client"
#: How long the model takes over the planner's reply, in seconds (the run's length).
MODEL_S = 70.0
#: The client's request timeout, in milliseconds: far shorter than the run.
CLIENT_TIMEOUT_MS = 30_000


def _slow_planner(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    tools = {t.get("function", {}).get("name") for t in body.get("tools", [])}
    if body.get("format") is None and "write_file" not in tools:
        threading.Event().wait(MODEL_S)  # a slow model: the run's length, not a synchronisation
    return hello_script(body)


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    with FakeModelServer(_slow_planner, models=["fake-model"]) as server:
        yield server


def _node_client(cache: Path) -> Path:
    """``client.mjs`` beside its installed packages, or a skip naming what is missing."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed for the TypeScript-SDK client (not installed)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    major = version.stdout.strip().lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) < 18:
        pytest.skip(f"the TypeScript SDK needs node 18 or later, found {version.stdout.strip()}")
    lock = (HERE / "package-lock.json").read_bytes()
    stamp = hashlib.sha256(lock + (HERE / "package.json").read_bytes()).hexdigest()
    for name in ("package.json", "package-lock.json", "client.mjs"):
        shutil.copyfile(HERE / name, cache / name)
    marker = cache / "installed.sha256"
    if not (marker.exists() and marker.read_text() == stamp and (cache / "node_modules").is_dir()):
        try:
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
                cwd=cache,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.skip("npm ci did not finish within 600 s (registry unreachable?)")
        if done.returncode != 0:
            pytest.skip(f"npm ci failed (registry unreachable?): {done.stderr.strip()[-500:]}")
        marker.write_text(stamp)
    return cache / "client.mjs"


def _config(tmp_path: Path, workspace: Path, url: str) -> Path:
    check = json.dumps([sys.executable, "-c", "print('ok')"])
    path = tmp_path / "operator.toml"
    path.write_text(
        f"workspace_dir = {json.dumps(str(workspace))}\n"
        f'[ollama]\nbase_url = {json.dumps(url)}\nmodel = "fake-model"\ntimeout = 300\n'
        "[agent]\nmax_iterations = 4\nmax_cycles = 1\n"
        f'[checks.ok]\ncmd = {check}\nrequired = true\nkind = "lint"\nfiletypes = ["*"]\n'
    )
    return path


def test_a_70_second_flow_run_completes_for_a_typescript_sdk_client(
    request: pytest.FixtureRequest, tmp_path: Path, workspace: Path, fake_ollama: FakeOllama
) -> None:
    cache = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    folder = cache.mkdir("flow-mcp-ts-client") if cache is not None else tmp_path / "npm"
    folder.mkdir(exist_ok=True)
    client = _node_client(folder)
    server = [sys.executable, "-m", "flow_mcp", "--trusted"]
    server += ["--config", str(_config(tmp_path, workspace, fake_ollama.url))]
    argv = ["node", str(client), str(CLIENT_TIMEOUT_MS), "create hello.txt", "--", *server]
    with (tmp_path / "client-stderr.log").open("w") as stderr:
        done = subprocess.run(
            argv,
            cwd=client.parent,
            env=server_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            timeout=MODEL_S + 240,
            check=False,
        )
    log = (tmp_path / "client-stderr.log").read_text()
    assert done.returncode == 0, log
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in out, f"{out.get('error')}\n{log}"
    report = out["result"]["structuredContent"]
    assert report["status"] == "verified", report["errors"]
    assert (workspace / "hello.txt").read_text() == "hello\n"
    messages = [p.get("message", "") for p in out["progress"]]
    assert any("(still running," in m for m in messages), messages
    values = [p["progress"] for p in out["progress"]]
    assert values == sorted(set(values))  # strictly increasing
