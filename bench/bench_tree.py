"""Large trees: the whole-tree watch, the preflight count and the isolated tree next to git.

Workload: a git repository of N committed files of 512 bytes in folders of 100 (default N =
10,000; ``--files 10000,150000`` for the large case), with 10 files changed, 1 staged new
file and 1 untracked file. Measured once per size, in this order:

* ``git_status``: ``git status --porcelain`` (the floor a git user knows);
* ``preflight_count``: the preflight's file count against ``[runs] watch_max_files``;
* ``watch_first``: the whole-tree fingerprint with no earlier one, as a run's first one: git's
  index vouches for the tracked files whose stat it recorded, the rest is read
  (``vouched_by_index`` says how many were not read);
* ``watch_first_reading_all``: the same without git's index (every file hashed: a workspace
  that is not a repository);
* ``watch_again``: given the earlier fingerprint (stat only), as the later ones;
* ``isolated_tree``: ``prepare_tree`` (git worktree plus the user's uncommitted state) and
  ``remove_tree``.

Prints one JSON object per size, as soon as it is measured, with seconds per side and ratios
against ``git_status`` (an isolated tree that could not be made is named under
``isolated_tree_failed``); exit status 0 whatever the numbers are.

Usage: python bench/bench_tree.py [--files N[,N...]]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flow_core.run._preflight import _tree_size
from flow_core.store import StoreError, prepare_tree, remove_tree
from flow_core.verify._fingerprint import FingerprintScope, take_fingerprint


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid"}
    env.update(GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@example.invalid")
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def populate(root: Path, files: int) -> None:
    data = b"x" * 512
    for i in range(files):
        d = root / f"pkg{i // 100:04d}"
        if i % 100 == 0:
            d.mkdir()
        (d / f"mod{i}.py").write_bytes(data)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "bench")
    for i in range(10):
        (root / f"pkg{i:04d}" / f"mod{i * 100}.py").write_bytes(b"changed\n")
    (root / "staged_new.py").write_text("s = 1\n")
    _git(root, "add", "staged_new.py")
    (root / "untracked.py").write_text("u = 1\n")


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(files: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="flow-bench-tree-") as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        populate(root, files)
        git = timed(
            lambda: subprocess.run(
                ["git", "status", "--porcelain"], cwd=root, check=True, capture_output=True
            )
        )
        count = timed(lambda: _tree_size(str(root), files * 2))
        scope = FingerprintScope(max_files=files * 2)
        first = take_fingerprint(root, scope=scope)
        watch_first = timed(lambda: take_fingerprint(root, scope=scope))
        reading_all = timed(lambda: take_fingerprint(root, scope=scope, git_index=False))
        watch_again = timed(lambda: take_fingerprint(root, scope=scope, previous=first))

        def isolate() -> None:
            tree = prepare_tree(root, Path(tmp) / "runs" / "r" / "tree")
            remove_tree(tree)

        try:
            isolated = timed(isolate)
        except StoreError as err:  # reported, not fatal: the other sides still count
            isolated, failure = None, str(err)
        else:
            failure = None
    sides = {
        "git_status": git,
        "preflight_count": count,
        "watch_first": watch_first,
        "watch_first_reading_all": reading_all,
        "watch_again": watch_again,
    }
    if isolated is not None:
        sides["isolated_tree"] = isolated
    return {
        "isolated_tree_failed": failure,
        "files": files,
        "vouched_by_index": first.from_index,
        "seconds": {k: round(v, 4) for k, v in sides.items()},
        "ratio_to_git_status": {k: round(v / git, 2) for k, v in sides.items() if git > 0},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="10000", help="comma-separated sizes")
    args, _ = parser.parse_known_args()
    if shutil.which("git") is None:
        print(json.dumps({"skipped": "git is not installed"}))
        return 0
    sizes = [int(n) for n in args.files.split(",") if n.strip()]
    head = {
        "bench": "tree",
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }
    for n in sizes:  # one object per size, printed as soon as it is measured
        print(json.dumps({**head, "result": measure(n)}, indent=2), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
