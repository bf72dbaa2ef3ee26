"""flow-safeio against plain Python file I/O, measured side by side in one run.

Workload: 1,000 files of 4 KiB in nested folders (10 x 10 directories, 10 files each).
Reads: ``Workspace.read_bytes`` against ``open(path, "rb").read()``.
Writes: ``Workspace.write_bytes`` (temp file, fsync, renameat, directory fsync) against a plain
``write`` + ``fsync`` + ``os.replace``.
Repetitions alternate which side goes first; each side's time is the median over repetitions.
Prints one JSON object; exit status 0 whether or not the targets are met (the JSON says).

Usage: python bench/bench_safeio.py [--reps N] [--write-reps N]
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
from collections.abc import Callable
from pathlib import Path

from flow_safeio import Workspace, openat2_available

FILES = 1000
SIZE = 4096
TARGET = 1.5


def rel_paths() -> list[str]:
    return [f"d{i // 100}/e{(i // 10) % 10}/f{i % 10}.bin" for i in range(FILES)]


def populate(root: Path, rels: list[str], data: bytes) -> None:
    for rel in rels:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def timed(fn: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def side_by_side(plain: Callable[[], None], safe: Callable[[], None], reps: int) -> dict[str, float]:
    plain_t: list[float] = []
    safe_t: list[float] = []
    plain()  # warm caches and code paths for both before measuring
    safe()
    for rep in range(reps):
        order = ((plain, plain_t), (safe, safe_t))
        for fn, sink in order if rep % 2 == 0 else reversed(order):
            sink.append(timed(fn))
    p, s = statistics.median(plain_t), statistics.median(safe_t)
    return {
        "plain_s": round(p, 4),
        "safeio_s": round(s, 4),
        "ratio": round(s / p, 3),
        "plain_us_per_file": round(p / FILES * 1e6, 1),
        "safeio_us_per_file": round(s / FILES * 1e6, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15, help="read repetitions per side")
    ap.add_argument("--write-reps", type=int, default=5, help="write repetitions per side")
    ap.add_argument("--resolver", default="auto", choices=("auto", "openat2", "walk"))
    args = ap.parse_args()

    rels = rel_paths()
    data = os.urandom(SIZE)
    base = Path(tempfile.mkdtemp(prefix="flow-bench-safeio-"))
    try:
        plain_root, safe_root = base / "plain", base / "safe"
        plain_root.mkdir()
        safe_root.mkdir()
        populate(plain_root, rels, data)
        populate(safe_root, rels, data)
        plain_abs = [str(plain_root / r) for r in rels]

        with Workspace(safe_root, resolver=args.resolver) as ws:

            def plain_read() -> None:
                for p in plain_abs:
                    with open(p, "rb") as f:
                        if len(f.read()) != SIZE:
                            raise AssertionError(p)

            def safe_read() -> None:
                read = ws.read_bytes
                for r in rels:
                    if len(read(r)) != SIZE:
                        raise AssertionError(r)

            def plain_write() -> None:
                for p in plain_abs:
                    tmp = p + ".tmp"
                    with open(tmp, "wb") as f:
                        f.write(data)
                        f.flush()
                        os.fsync(f.fileno())
                    os.replace(tmp, p)

            def safe_write() -> None:
                write = ws.write_bytes
                for r in rels:
                    write(r, data)

            reads = side_by_side(plain_read, safe_read, args.reps)
            writes = side_by_side(plain_write, safe_write, args.write_reps)
            resolver = ws.resolver
    finally:
        shutil.rmtree(base, ignore_errors=True)

    result = {
        "benchmark": "flow-safeio vs plain Python I/O",
        "workload": {"files": FILES, "bytes_per_file": SIZE, "layout": "10x10 dirs x 10 files"},
        "resolver": resolver,
        "openat2_available": openat2_available(),
        "python": platform.python_version(),
        "reps": {"read": args.reps, "write": args.write_reps},
        "read": reads,
        "write": writes,
        "targets": {"read_ratio_max": TARGET, "write_ratio_max": TARGET},
        "met": {"read": reads["ratio"] <= TARGET, "write": writes["ratio"] <= TARGET},
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
