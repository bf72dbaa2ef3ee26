"""``flow --help`` and friends answered before click loads, with click's own bytes.

Source: ``flow_cli/_fasthelp.py`` and ``bench/bench_cli.py`` (the cold-start target).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import flow_cli
from flow_cli._fasthelp import answer, render_all
from flow_cli._help_texts import TEXTS


def test_the_stored_texts_are_what_click_renders_now() -> None:
    # Drift guard: a changed docstring or option fails here; regenerate with
    # ``python -m flow_cli._fasthelp``.
    assert render_all() == TEXTS


def test_every_subcommand_has_its_text() -> None:
    from flow_cli._cli import cli

    assert set(TEXTS) == {"", *cli.commands}


@pytest.mark.parametrize(
    "args", [["--help"], ["-h"], ["status", "--help"], ["run", "-h"], ["serve", "--help"]]
)
def test_the_real_program_prints_clicks_text_without_loading_click(env, args: list[str]) -> None:
    code = (
        "import sys, flow_cli\n"
        f"rc = flow_cli.main({args!r})\n"
        "assert 'click' not in sys.modules, 'click was imported'\n"
        "assert 'flow_core' not in sys.modules, 'flow_core was imported'\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**env.vars, "COLUMNS": "120"},
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == TEXTS["" if len(args) == 1 else args[0]]
    assert proc.stderr == ""


def test_without_a_terminal_or_columns_the_text_is_the_80_column_one(env) -> None:
    result = env.flow("--help")  # stdout is a pipe and COLUMNS unset: click assumes 80
    assert result.code == 0
    assert result.stdout == TEXTS[""]


def test_version_is_clicks_line(env, capsys: pytest.CaptureFixture[str]) -> None:
    from flow_cli._cli import run_cli

    assert run_cli(["--version"]) == 0
    assert (
        capsys.readouterr().out
        == answer(["--version"])
        == f"flow, version {flow_cli.__version__}\n"
    )
    assert env.flow("--version").stdout == f"flow, version {flow_cli.__version__}\n"


def test_a_narrow_terminal_is_left_to_click(env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    assert answer(["--help"]) is None
    proc = subprocess.run(
        [sys.executable, "-m", "flow_cli", "--help"],
        capture_output=True,
        text=True,
        env={**env.vars, "COLUMNS": "60"},
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0
    assert proc.stdout != TEXTS[""]
    assert max(len(line) for line in proc.stdout.splitlines()) <= 60


@pytest.mark.parametrize(
    "args",
    [["--help", "status"], ["--trusted", "--help"], ["status", "--version"], ["nope", "--help"]],
)
def test_anything_else_goes_to_click(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert answer(args) is None


def test_shell_completion_goes_to_click(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_FLOW_COMPLETE", "bash_source")
    assert answer(["--help"]) is None
