"""Cold start of ``flow status --workspace DIR`` against ``python -c pass``, in the same run.

Both are started as fresh processes, interleaved (so load on the machine hits both alike), and
compared by their medians. Prints one JSON object with the ratio and the target (<= 3x).

A third row, ``python -c "import pydantic"``, shows the floor that validating the operator
config with pydantic (a project rule: a well-kept library over our own validator) puts under
any ``flow status``: the ratio that pydantic's import alone costs.

Usage: ``python bench/bench_cli.py [--runs N]`` (``nox -s bench`` runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

TARGET_RATIO = 3.0


def _time(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="measured runs of each (default 21)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="flow-bench-") as tmp:
        workspace = os.path.join(tmp, "project")
        os.mkdir(workspace)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": tmp,
            "XDG_CONFIG_HOME": os.path.join(tmp, "xdg"),
        }
        baseline = [sys.executable, "-c", "pass"]
        flow = [sys.executable, "-m", "flow_cli", "status", "--workspace", workspace]
        floor = [sys.executable, "-c", "import pydantic; from pydantic import BaseModel"]
        # Warm the OS file cache and write bytecode once, so every measured run is comparable.
        for _ in range(2):
            _time(baseline, env)
            _time(flow, env)
            _time(floor, env)
        base_ms: list[float] = []
        flow_ms: list[float] = []
        floor_ms: list[float] = []
        for _ in range(args.runs):
            base_ms.append(_time(baseline, env))
            flow_ms.append(_time(flow, env))
            floor_ms.append(_time(floor, env))
    base = statistics.median(base_ms)
    status = statistics.median(flow_ms)
    pydantic_ms = statistics.median(floor_ms)
    ratio = status / base
    print(
        json.dumps(
            {
                "bench": "flow status cold start",
                "command": "python -m flow_cli status --workspace DIR",
                "runs": args.runs,
                "python_pass_median_ms": round(base, 1),
                "flow_status_median_ms": round(status, 1),
                "import_pydantic_median_ms": round(pydantic_ms, 1),
                "ratio": round(ratio, 2),
                "pydantic_floor_ratio": round(pydantic_ms / base, 2),
                "target_ratio": TARGET_RATIO,
                "meets_target": ratio <= TARGET_RATIO,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
