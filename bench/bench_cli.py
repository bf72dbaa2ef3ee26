"""Cold start of the ``flow`` command, two ratios measured side by side in one run.

- ``flow --help`` against ``python -c pass`` (target <= 3x): what parsing argv costs on top
  of the interpreter itself; nothing beyond click should load.
- ``flow status --workspace DIR`` against ``python -c "from pydantic import BaseModel"``
  (target <= 1.5x): validating the operator config with pydantic (a project rule: a well-kept
  library over our own validator) puts pydantic's import under any ``flow status``, so that
  import is the floor the command is measured against.

Two informative rows (``floors``, no target) show what the libraries cost on their own, the
part of each ratio that Flow's code cannot remove: ``python -c "import click"`` against
``python -c pass`` (click parses argv and prints the help), and one pydantic model defined and
validated, with click imported, against the pydantic import (the first validator loads
pydantic's plugin machinery and ``importlib.metadata``; any ``flow status`` pays it).

Every command is started as a fresh process, the four interleaved in each round (so load on
the machine hits all alike), and compared by their medians: ``ratio`` by wall time (what a
user waits) and ``cpu_ratio`` by the process's own CPU time (user + system), which a machine
busy with other work disturbs less. Prints one JSON object.

Usage: ``python bench/bench_cli.py [--runs N]`` (``nox -s bench`` runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HELP_TARGET = 3.0
STATUS_TARGET = 1.5


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) milliseconds of one run of ``argv``; CPU is the child's user + system."""
    cpu = _children_cpu_s()
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = (time.perf_counter() - start) * 1000.0
    return wall, (_children_cpu_s() - cpu) * 1000.0


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
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "flow --help": [sys.executable, "-m", "flow_cli", "--help"],
            "python -c 'import click'": [sys.executable, "-c", "import click"],
            "python -c 'from pydantic import BaseModel'": [
                sys.executable,
                "-c",
                "from pydantic import BaseModel",
            ],
            "python -c 'import click; <one pydantic model validated>'": [
                sys.executable,
                "-c",
                "import click\nfrom pydantic import BaseModel, Field\n"
                "class M(BaseModel):\n    x: int = Field(ge=0)\nM(x=1)",
            ],
            "flow status --workspace DIR": [
                sys.executable,
                "-m",
                "flow_cli",
                "status",
                "--workspace",
                workspace,
            ],
        }
        # Warm the OS file cache and write bytecode once, so every measured run is comparable.
        for _ in range(2):
            for argv in commands.values():
                _time(argv, env)
        wall: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                wall_ms, cpu_ms = _time(argv, env)
                wall[name].append(wall_ms)
                cpu[name].append(cpu_ms)
    median = {name: statistics.median(ms) for name, ms in wall.items()}
    cpu_median = {name: statistics.median(ms) for name, ms in cpu.items()}
    names = list(commands)
    pass_, help_, click_, pydantic_, model_, status = names

    def ratio(name: str, base: str, target: float) -> dict[str, object]:
        wall_ratio = median[name] / median[base]
        cpu_ratio = cpu_median[name] / cpu_median[base]
        return {
            "command": name,
            "median_ms": round(median[name], 1),
            "cpu_median_ms": round(cpu_median[name], 1),
            "baseline": base,
            "baseline_median_ms": round(median[base], 1),
            "baseline_cpu_median_ms": round(cpu_median[base], 1),
            "ratio": round(wall_ratio, 2),
            "cpu_ratio": round(cpu_ratio, 2),
            "target_ratio": target,
            "meets_target": wall_ratio <= target,
        }

    rows = [ratio(help_, pass_, HELP_TARGET), ratio(status, pydantic_, STATUS_TARGET)]
    floors = [ratio(click_, pass_, HELP_TARGET), ratio(model_, pydantic_, STATUS_TARGET)]
    for floor in floors:
        del floor["target_ratio"], floor["meets_target"]
    print(
        json.dumps(
            {
                "bench": "flow cold start",
                "runs": args.runs,
                "ratios": rows,
                "floors": floors,
                "meets_targets": all(r["meets_target"] for r in rows),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
