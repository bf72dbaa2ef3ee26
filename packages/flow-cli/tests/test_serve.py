"""``flow serve``: the MCP stdio server behind the same flags, before or after ``serve``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _exchange(env, args: list[str], messages: list[dict]) -> tuple[int, list[dict], str]:
    stdin = "".join(json.dumps(m) + "\n" for m in messages)
    proc = subprocess.run(
        [sys.executable, "-m", "flow_cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env.vars,
        cwd=env.home,
        timeout=120,
        check=False,
    )
    replies = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, replies, proc.stderr


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "flow-cli-test", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.mark.parametrize("before", [True, False], ids=["flags-before", "flags-after"])
def test_serve_answers_flow_status_with_merged_flags(env, workspace: Path, before) -> None:
    flags = ["--workspace", str(workspace), "--model", "served-model"]
    args = [*flags, "serve"] if before else ["serve", *flags]
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "flow_status", "arguments": {}},
    }
    code, replies, stderr = _exchange(env, args, [INIT, INITIALIZED, call])
    assert code == 0, stderr
    by_id = {r.get("id"): r for r in replies}
    assert by_id[1]["result"]["protocolVersion"] == "2025-11-25"
    report = by_id[2]["result"]["structuredContent"]
    assert report["kind"] == "status"
    assert report["workspace"] == str(workspace)
    assert set(report["models"].values()) == {"served-model"}


def test_serve_rejects_an_editor_timeout_out_of_range(env, workspace: Path) -> None:
    result = env.invoke("serve", "--workspace", str(workspace), "--editor-timeout", "1000")
    assert result.code == 2
    assert "--editor-timeout" in result.stderr
    assert result.stdout == ""


def test_serve_takes_its_editor_timeout_range_from_flow_core() -> None:
    # One range for every front end: the CLI's help and its check both read flow-core's.
    from click.testing import CliRunner

    from flow_cli._cli import cli
    from flow_core import EDITOR_TIMEOUT_DEFAULT, EDITOR_TIMEOUT_MAX, EDITOR_TIMEOUT_MIN

    runner = CliRunner()
    shown = runner.invoke(cli, ["serve", "--help"])
    assert shown.exit_code == 0
    text = " ".join(shown.output.split())
    assert (
        f"({EDITOR_TIMEOUT_MIN:g}-{EDITOR_TIMEOUT_MAX:g}, default {EDITOR_TIMEOUT_DEFAULT:g})"
        in text
    )
    over = runner.invoke(cli, ["serve", "--editor-timeout", f"{EDITOR_TIMEOUT_MAX * 1.01:g}"])
    assert over.exit_code == 2
    assert "is not between" in over.output
    under = runner.invoke(cli, ["serve", "--editor-timeout", f"{EDITOR_TIMEOUT_MIN / 2:g}"])
    assert under.exit_code == 2


def test_serve_result_cap_matches_flow_mcp() -> None:
    # `flow serve --max-result-chars` is flow-mcp's option: the same floor and default.
    import click

    from flow_cli._cli import cli
    from flow_mcp._results import DEFAULT_MAX_RESULT_CHARS, MIN_MAX_RESULT_CHARS

    serve = cli.commands["serve"]  # type: ignore[attr-defined]
    (param,) = [p for p in serve.params if p.name == "max_result_chars"]
    assert isinstance(param.type, click.IntRange)
    assert param.type.min == MIN_MAX_RESULT_CHARS
    assert f"default {DEFAULT_MAX_RESULT_CHARS}" in (param.help or "")
