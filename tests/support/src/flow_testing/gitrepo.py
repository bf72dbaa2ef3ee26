"""Real git in tests: one command with a fixed identity, asserted to succeed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["git"]


def git(cwd: Path, *args: str) -> str:
    """Run ``git ARGS`` in ``cwd`` as author and committer ``t``; assert exit 0; return stdout.

    Raises:
        AssertionError: git exited non-zero (its stderr is the message).
    """
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    argv = ["git", *args]
    out = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout
