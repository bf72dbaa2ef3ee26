"""Fixtures for flow-cli's tests: isolated environments, real projects, a fake Ollama.

The fake Ollama is the suites' shared ``flow_testing.model_server``.

Every command runs as a real subprocess (``python -m flow_cli``) with ``HOME`` and
``XDG_CONFIG_HOME`` pointed at temporary directories, so no real user config is read.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# The suites' shared helpers (evidence_harness.py) live beside this file.
sys.path.insert(0, str(Path(__file__).parent))

from flow_testing.model_server import FakeModelServer, coder_script, model_servers

TIMEOUT_S = 120


@dataclass
class Result:
    """A finished ``flow`` process."""

    code: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        """Stdout parsed as exactly one JSON value (the whole stdout), which must be an object."""
        value = json.loads(self.stdout)
        assert isinstance(value, dict), self.stdout
        return value


@dataclass
class Env:
    """An isolated environment for running ``flow``."""

    home: Path
    xdg: Path
    vars: dict[str, str]

    def flow(
        self, *args: str, stdin: str | None = None, cwd: Path | None = None, timeout: float = 120
    ) -> Result:
        proc = subprocess.run(
            [sys.executable, "-m", "flow_cli", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.vars,
            cwd=cwd or self.home,
            timeout=timeout,
            check=False,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def invoke(self, *args: str, stdin: str | None = None, cwd: Path | None = None) -> Result:
        """``flow ARGS`` in this process: ``flow_cli.main`` (argv answered before click, then
        click) inside click's ``CliRunner`` isolation, with this environment's variables (all
        others unset), ``stdin`` as standard input and standard output and error captured.

        For commands that print plain text and leave the process alone (``explain``, ``runs``,
        ``show``, ``undo``, ``apply``, ``--help``). ``status``, ``check`` and ``run`` take over
        descriptor 1 and install signal handlers, and exit codes as the OS sees them, signals,
        terminals and stdout purity are properties of the process: those tests use
        :meth:`flow`.
        """
        from click.testing import CliRunner

        from flow_cli import main

        variables = {name: None for name in os.environ if name not in self.vars}
        variables.update(self.vars)
        runner = CliRunner()
        with (
            contextlib.chdir(cwd or self.home),
            runner.isolation(input=stdin, env=variables) as (out, err, _),
        ):
            try:
                code = main(list(args))
            finally:
                sys.stdout.flush()  # the runner's text wrappers over its byte buffers
                sys.stderr.flush()
        return Result(code, out.getvalue().decode(), err.getvalue().decode())

    def popen(self, *args: str, **kwargs: Any) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "flow_cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.vars,
            cwd=self.home,
            **kwargs,
        )

    def user_config(self, text: str) -> Path:
        path = self.xdg / "flow" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path


@pytest.fixture
def env(tmp_path: Path) -> Env:
    home = tmp_path / "home"
    xdg = tmp_path / "xdg"
    home.mkdir()
    xdg.mkdir()
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "SYSTEMROOT")}
    keep.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(xdg),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        NO_COLOR="1",
        TERM="dumb",
        COLUMNS="120",
    )
    return Env(home=home, xdg=xdg, vars=keep)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a: int, b: int) -> int:\n    return a + b\n")
    return ws


def toml_list(items: list[str]) -> str:
    """A TOML array of basic strings."""
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def check_table(
    name: str,
    argv: list[str],
    *,
    kind: str = "test",
    required: bool = True,
    timeout_ms: int = 60_000,
    filetypes: list[str] | None = None,
) -> str:
    """One ``[checks.NAME]`` table."""
    return (
        f"\n[checks.{name}]\ncmd = {toml_list(argv)}\ntimeout = {timeout_ms}\n"
        f"required = {'true' if required else 'false'}\nkind = {json.dumps(kind)}\n"
        f"filetypes = {toml_list(filetypes or ['python'])}\n"
    )


def operator_config(
    path: Path,
    workspace: Path,
    *,
    base_url: str = "http://127.0.0.1:9",
    model: str = "fake-coder",
    checks: str = "",
    extra: str = "",
    model_timeout: float = 30,
) -> Path:
    """Write an operator config (root keys first, then tables) and return its path;
    ``model_timeout``: ``[ollama] timeout`` (seconds)."""
    path.write_text(
        f"workspace_dir = {json.dumps(str(workspace))}\n{extra}\n"
        f'[ollama]\nbase_url = "{base_url}"\nmodel = "{model}"\ntimeout = {model_timeout:g}\n'
        "\n[agent]\nmax_iterations = 4\nmax_cycles = 1\nmax_tool_calls = 16\n"
        f"max_context_chars = 100000\n{checks}"
    )
    return path


# -- the shared loopback model server (flow_testing.model_server), scripted ---------------------


@pytest.fixture
def fake_ollama() -> Iterator[Callable[..., FakeModelServer]]:
    """``fake_ollama(script)``: a scripted Ollama stand-in on 127.0.0.1 (see flow_testing)."""
    with model_servers() as start:
        yield start


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` with a fixed identity; assert it succeeded; return its stdout."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def calc_config(
    tmp_path: Path, workspace: Path, url: str, extra: str = "", model_timeout: float = 30
) -> Path:
    """An operator config whose required checks import ``calc`` and compile ``calc.py``."""
    unit = [sys.executable, "-c", "import calc; assert calc.add(2, 3) == 5"]
    lint = [sys.executable, "-m", "py_compile", "calc.py"]
    checks = check_table("unit", unit) + check_table("compile", lint, kind="lint")
    checks = checks.replace('filetypes = ["python"]', 'filetypes = ["python", "docs"]')
    return operator_config(
        tmp_path / "op.toml",
        workspace,
        base_url=url,
        checks=checks,
        extra=extra,
        model_timeout=model_timeout,
    )


@pytest.fixture
def state(env: Env, tmp_path: Path) -> Path:
    """A private run store: ``XDG_STATE_HOME`` for every ``flow`` this test runs."""
    path = tmp_path / "state"
    env.vars["XDG_STATE_HOME"] = str(path)
    return path


@pytest.fixture
def repo(workspace: Path) -> Path:
    """``workspace`` as a git repository with one commit (``__pycache__/`` ignored)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git(workspace, "init", "-q")
    (workspace / ".gitignore").write_text("__pycache__/\n")  # the checks import calc
    git(workspace, "add", ".")
    git(workspace, "commit", "-q", "-m", "init")
    return workspace


def calc_script(
    content: str, hooks: dict[str, Callable[[], None]] | None = None
) -> Callable[[dict[str, Any]], tuple[str, list[dict[str, Any]]]]:
    """A scripted model for ``calc_config``: the planner plans, the coder writes ``calc.py``
    (``content``) and ``notes.md``, then finishes, and the reviewer approves.

    ``hooks`` as :func:`flow_testing.model_server.coder_script` takes them: ``"plan"``,
    ``"code"`` (after both writes) or ``"review"``, each run once before that reply.
    """
    writes = [("write_file", {"path": "calc.py", "content": content})]
    writes.append(("write_file", {"path": "notes.md", "content": "n\n"}))
    return coder_script(writes, plan="Plan: change calc.py and add notes.md.", hooks=hooks)


@dataclass(frozen=True)
class Helpers:
    """Plain helper functions, handed to tests as a fixture (importlib mode: no conftest import)."""

    check_table: Callable[..., str] = check_table
    operator_config: Callable[..., Path] = operator_config
    toml_list: Callable[[list[str]], str] = toml_list
    git: Callable[..., str] = git
    calc_config: Callable[..., Path] = calc_config
    calc_script: Callable[..., Callable[[dict[str, Any]], Any]] = calc_script


@pytest.fixture
def h() -> Helpers:
    return Helpers()
