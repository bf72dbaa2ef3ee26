"""Help text and shell completion: the texts in process (``env.invoke``), the completion
script run by a real bash against the real ``flow`` program."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS = ["status", "check", "run", "tui", "serve", "completion"]


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_renders_without_markup_residue(env, command: str) -> None:
    args = [command, "--help"] if command else ["--help"]
    result = env.invoke(*args)
    assert result.code == 0, result.stderr
    assert "``" not in result.stdout  # reStructuredText literals are not for a terminal
    assert "Usage: flow" in result.stdout


def test_help_lists_completion(env) -> None:
    assert "completion" in env.invoke("--help").stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_a_script_for_each_shell(env, shell: str) -> None:
    result = env.invoke("completion", shell)
    assert result.code == 0, result.stderr
    assert "_FLOW_COMPLETE" in result.stdout
    assert result.stderr == ""


def test_completion_rejects_an_unknown_shell(env) -> None:
    result = env.invoke("completion", "tcsh")
    assert result.code == 2
    assert "tcsh" in result.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completes_subcommands_with_the_printed_script(env, tmp_path: Path) -> None:
    """Source the printed script in a real bash and ask it to complete ``flow st``."""
    launcher = tmp_path / "bin" / "flow"
    launcher.parent.mkdir()
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} -m flow_cli "$@"\n')
    launcher.chmod(0o755)
    script = env.flow("completion", "bash").stdout
    program = (
        f"{script}\nCOMP_WORDS=(flow st); COMP_CWORD=1; _flow_completion flow; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    vars_ = {**env.vars, "PATH": f"{launcher.parent}{os.pathsep}{env.vars.get('PATH', '')}"}
    out = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        capture_output=True,
        text=True,
        env=vars_,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["status"]
