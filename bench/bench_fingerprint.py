"""The whole-tree fingerprint against a plain ``os.walk`` + ``stat`` of the same tree.

Workload: 10,000 files of 2 KiB in 100 folders (plus a ``.venv`` with 1,000 files that both
sides skip). Three sides, measured in one run, alternating which goes first:

* ``walk_stat``: ``os.walk`` with every file ``os.lstat``-ed, nothing read (the floor);
* ``fingerprint_first``: a fingerprint with no earlier one (every file read and hashed);
* ``fingerprint_again``: a fingerprint given the earlier one (stat only: the cost Flow pays
  after review, when little changed), with 10 files rewritten in between.

Prints one JSON object with the median seconds of each side and the ratios against
``walk_stat``; exit status 0 whatever the numbers are.

Usage: python bench/bench_fingerprint.py [--reps N] [--files N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from flow_core.verify._fingerprint import take_fingerprint
from flow_safeio import is_generated_name


def populate(root: Path, files: int) -> None:
    data = b"x" * 2048
    for i in range(files):
        d = root / f"pkg{i % 100:02d}"
        d.mkdir(exist_ok=True)
        (d / f"mod{i}.py").write_bytes(data)
    venv = root / ".venv" / "lib"
    venv.mkdir(parents=True)
    for i in range(1000):
        (venv / f"dep{i}.py").write_bytes(data)


def walk_stat(root: Path) -> int:
    count = 0
    for here, dirs, names in os.walk(root):
        # The same rule the fingerprint applies: a generated name, or a pyvenv.cfg inside.
        dirs[:] = [
            d
            for d in dirs
            if not is_generated_name(d) and not os.path.lexists(os.path.join(here, d, "pyvenv.cfg"))
        ]
        for name in names:
            os.lstat(os.path.join(here, name))
            count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="flow-bench-fp-"))
    try:
        populate(tmp, args.files)
        base = take_fingerprint(tmp)
        # As in a run, the earlier fingerprint was taken well after the tree was last written:
        # nothing counts as racy against it.
        base.started_ns = max(f.ctime_ns for f in base.files.values()) + 10**9
        assert len(base.files) == args.files == walk_stat(tmp)
        times: dict[str, list[float]] = {"walk_stat": [], "first": [], "again": []}
        hashed_again: list[int] = []

        def run(side: str) -> None:
            t0 = time.perf_counter()
            if side == "walk_stat":
                walk_stat(tmp)
            elif side == "first":
                take_fingerprint(tmp)
            else:
                fp = take_fingerprint(tmp, previous=base)
                hashed_again.append(fp.hashed_files)
            times[side].append(time.perf_counter() - t0)

        for rep in range(args.reps):
            for i in range(10):
                (tmp / f"pkg{i:02d}" / f"mod{i}.py").write_bytes(b"y" * (2048 + rep))
            order = ["walk_stat", "first", "again"]
            if rep % 2:
                order.reverse()
            for side in order:
                run(side)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(
            json.dumps(
                {
                    "bench": "fingerprint",
                    "files": args.files,
                    "reps": args.reps,
                    "python": platform.python_version(),
                    "walk_stat_s": round(med["walk_stat"], 4),
                    "fingerprint_first_s": round(med["first"], 4),
                    "fingerprint_again_s": round(med["again"], 4),
                    "files_hashed_again": max(hashed_again),
                    "ratio_first_vs_walk_stat": round(med["first"] / med["walk_stat"], 2),
                    "ratio_again_vs_walk_stat": round(med["again"] / med["walk_stat"], 2),
                },
                indent=2,
            )
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
