"""Flow's own ``git`` runs no program a repository names (``flow_core/_git.py``).

A repository whose configuration a check or the model could have written names a hook, an
fsmonitor, clean/smudge filters, a textconv and an external diff, each of which leaves a
marker file when it runs. Plain ``git`` (the negative control) runs them; ``run_git`` runs
none, for the commands isolation uses and for a diff.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from flow_core._git import git_env, run_git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    marks = tmp_path / "marks"
    marks.mkdir()
    repo = tmp_path / "repo"
    env = git_env()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env, timeout=60)
    (repo / ".gitattributes").write_text("*.txt filter=evil diff=evil\n")
    (repo / "a.txt").write_text("one\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env, timeout=60)
    who = ["-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run([*["git", *who], "commit", "-qm", "x"], cwd=repo, check=True, env=env)
    mark = f"touch {marks}/"
    config = {
        "core.fsmonitor": f"{mark}fsmonitor; false",
        "filter.evil.clean": f"sh -c '{mark}clean; cat'",
        "filter.evil.smudge": f"sh -c '{mark}smudge; cat'",
        "diff.evil.textconv": f"sh -c '{mark}textconv; cat \"$0\"'",
        "diff.external": f"sh -c '{mark}external'",
    }
    for key, value in config.items():
        subprocess.run(["git", "config", key, value], cwd=repo, check=True, env=env)
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\n{mark}hook\n")
    hook.chmod(0o755)
    (repo / "a.txt").write_text("two\n")
    return repo, marks


def _commands(tmp_path: Path, run: Callable[[list[str]], None]) -> None:
    for args in (
        ["status", "--porcelain"],
        ["ls-files", "-m"],
        ["diff"],
        ["worktree", "add", "-q", "--detach", str(tmp_path / "wt"), "HEAD"],
    ):
        run(args)


def test_plain_git_runs_what_the_repository_names(tmp_path: Path) -> None:
    repo, marks = _repo(tmp_path)
    env = {**git_env(), "GIT_CONFIG_NOSYSTEM": "1"}

    def plain(args: list[str]) -> None:
        subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, timeout=60)

    _commands(tmp_path, plain)
    ran = sorted(os.listdir(marks))
    assert {"hook", "smudge", "external"} <= set(ran), ran


def test_flows_git_runs_none_of_it(tmp_path: Path) -> None:
    repo, marks = _repo(tmp_path)

    def hardened(args: list[str]) -> None:
        done = run_git(repo, *args, timeout=60)
        assert done.returncode == 0, done.stderr

    _commands(tmp_path, hardened)
    assert os.listdir(marks) == []
    assert (tmp_path / "wt" / "a.txt").read_text() == "one\n"
