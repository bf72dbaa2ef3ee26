"""The console script, ``--help`` and ``--version`` of every command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import flow_cli


def test_console_script_is_installed_next_to_the_interpreter(env, workspace) -> None:
    script = Path(sys.executable).with_name("flow")
    if not script.exists():
        pytest.skip(f"no console script at {script} (package not installed in this venv)")
    proc = subprocess.run(
        [str(script), "status", "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        env=env.vars,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"kind":"status"' in proc.stdout


def test_version(env) -> None:
    result = env.flow("--version")
    assert result.code == 0
    assert flow_cli.__version__ in result.stdout


@pytest.mark.parametrize("command", ["status", "check", "run", "tui", "serve"])
def test_help_of_every_command(env, command: str) -> None:
    result = env.invoke(command, "--help")
    assert result.code == 0, result.stderr
    for flag in ("--workspace", "--config", "--trusted", "--model"):
        assert flag in result.stdout
    if command == "serve":
        assert "--nvim" in result.stdout
        assert "--editor-timeout" in result.stdout


def test_main_returns_exit_codes_in_process(capsys) -> None:
    assert flow_cli.main(["--version"]) == 0
    assert flow_cli.__version__ in capsys.readouterr().out
    assert flow_cli.main(["no-such-command"]) == 2
    assert "no-such-command" in capsys.readouterr().err


def test_the_console_entry_freezes_what_is_left_and_flow_cli_main_does_not() -> None:
    """``flow`` (``flow_cli.__main__:main``) exits right after the command, so it freezes the
    objects left (``gc.freeze``: the interpreter's exit skips the cycle search); an
    in-process caller of ``flow_cli.main`` keeps its collector untouched."""
    code = (
        "import gc, flow_cli, flow_cli.__main__ as entry\n"
        "assert flow_cli.main(['--version']) == 0 and gc.get_freeze_count() == 0\n"
        "assert entry.main(['--version']) == 0 and gc.get_freeze_count() > 0\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_click_level_exit_codes_are_flow_cores() -> None:
    import flow_cli._cli
    from flow_core import EXIT_CODES

    assert EXIT_CODES["usage"] == flow_cli._cli.EXIT_USAGE
    assert EXIT_CODES["interrupted"] == flow_cli._cli.EXIT_INTERRUPTED
