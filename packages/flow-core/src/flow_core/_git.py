"""Every ``git`` Flow runs on the host, hardened: no repository-supplied program runs.

A repository's own configuration (``.git/config`` and what it includes) and attributes are
content a check or the model could have written, and Flow's own ``git`` runs outside the
jail. So each command gets, on its command line (``docs/architecture.md``, "Sandbox"):

- ``core.hooksPath=/dev/null`` (no hook), ``core.fsmonitor=false`` (no fsmonitor program),
  ``core.untrackedCache=false``;
- every ``filter.<driver>.clean/smudge/process`` and ``diff.<driver>.textconv/command`` the
  repository's configuration defines, set empty (git then runs no filter or converter), and
  every ``filter.<driver>.required`` set false (``git lfs install`` sets it true: git would
  then refuse to check a file out without its blanked smudge filter, and the file is written
  as stored, an LFS pointer);
- for the diff family (``diff``, ``log``, ``show``, ``diff-*``): ``--no-ext-diff
  --no-textconv``;
- an environment without ``GIT_*`` variables, with ``GIT_CONFIG_NOSYSTEM=1``,
  ``GIT_CONFIG_GLOBAL=/dev/null`` and ``GIT_ATTR_NOSYSTEM=1`` (no system or global
  configuration or attributes), ``GIT_TERMINAL_PROMPT=0`` and ``LC_ALL=C``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

__all__ = ["git_env", "run_git"]

_FIXED = ("core.hooksPath=/dev/null", "core.fsmonitor=false", "core.untrackedCache=false")
_PROGRAM_KEYS = (".clean", ".smudge", ".process", ".textconv", ".command", ".required")
_DIFF_FAMILY = frozenset({"diff", "log", "show", "diff-files", "diff-index", "diff-tree"})


def git_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment hardened ``git`` runs with (see the module docstring)."""
    src = os.environ if environ is None else environ
    env = {k: v for k, v in src.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_ATTR_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
    )
    return env


def _overrides(cwd: str | Path, env: dict[str, str], timeout: float) -> list[str]:
    """``-c KEY=`` for each program-running filter or diff driver the repository defines (an
    empty ``required`` is false)."""
    argv = ["git", *(w for kv in _FIXED for w in ("-c", kv))]
    listed = subprocess.run(
        [*argv, "config", "--includes", "--name-only", "-z", "--get-regexp", r"^(filter|diff)\."],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    keys = [os.fsdecode(k) for k in listed.stdout.split(b"\0") if k]
    return [w for k in keys if k.lower().endswith(_PROGRAM_KEYS) for w in ("-c", f"{k}=")]


def run_git(cwd: str | Path, *args: str, timeout: float) -> subprocess.CompletedProcess[bytes]:
    """Run ``git ARGS`` in ``cwd`` with no hook, filter, fsmonitor or converter; capture output.

    Args:
        cwd: where git runs (it finds the repository from there).
        args: the subcommand and its arguments.
        timeout: seconds each of the (at most two) git processes may take.

    Raises:
        OSError: git cannot be started; subprocess.TimeoutExpired: it ran past ``timeout``.
    """
    env = git_env()
    argv = ["git", *(w for kv in _FIXED for w in ("-c", kv)), *_overrides(cwd, env, timeout)]
    rest = list(args)
    if rest and rest[0] in _DIFF_FAMILY:
        rest[1:1] = ["--no-ext-diff", "--no-textconv"]
    return subprocess.run(
        [*argv, *rest], cwd=cwd, env=env, capture_output=True, timeout=timeout, check=False
    )
