"""Cold start of the ``flow`` command, its ratios measured side by side in one run.

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

Each ``flow status`` row names its floor (the model row: ``floor_ratio``,
``floor_cpu_ratio``), says whether the target lies below that floor (``target_below_floor``:
then no Flow code can meet it, and what to judge is the distance to the floor), and gives the
distance in CPU milliseconds (``over_floor_cpu_ms``). ``load_average`` is the machine's load
when the runs ended (``os.getloadavg``): wall ratios move with it, CPU ratios less.

``flow status`` remembers a usable bubblewrap probe for ten minutes
(``$XDG_CACHE_HOME/flow/bwrap-probe.json``, ``verify/_probe_cache.py``), so after the warm-up
the timed row uses it. The row ``flow status --workspace DIR (cold cache)`` gives every run a
new, empty ``XDG_CACHE_HOME``: it is what a fresh machine's first ``flow status`` costs,
bubblewrap probe included (its CPU counts too: a child's CPU includes the children it
waited for).

Every command is started as a fresh process, all interleaved in each round (so load on the
machine hits all alike), and compared by their medians: ``ratio`` by wall time (what a user
waits) and ``cpu_ratio`` by the process's own CPU time (user + system), which a machine busy
with other work disturbs less. Prints one JSON object.

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
    """(wall, CPU) milliseconds of one run of ``argv``; CPU is the child's user + system (and
    that of the processes it waited for)."""
    cpu = _children_cpu_s()
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = (time.perf_counter() - start) * 1000.0
    return wall, (_children_cpu_s() - cpu) * 1000.0


def _commands(workspace: str) -> dict[str, list[str]]:
    """Each timed command by the name the JSON gives it (the baselines and floors first)."""
    status = [sys.executable, "-m", "flow_cli", "status", "--workspace", workspace]
    return {
        PASS: [sys.executable, "-c", "pass"],
        HELP: [sys.executable, "-m", "flow_cli", "--help"],
        CLICK: [sys.executable, "-c", "import click"],
        PYDANTIC: [sys.executable, "-c", "from pydantic import BaseModel"],
        MODEL: [
            sys.executable,
            "-c",
            "import click\nfrom pydantic import BaseModel, Field\n"
            "class M(BaseModel):\n    x: int = Field(ge=0)\nM(x=1)",
        ],
        STATUS: status,
        STATUS_COLD: status,
    }


PASS = "python -c pass"
HELP = "flow --help"
CLICK = "python -c 'import click'"
PYDANTIC = "python -c 'from pydantic import BaseModel'"
MODEL = "python -c 'import click; <one pydantic model validated>'"
STATUS = "flow status --workspace DIR"
STATUS_COLD = "flow status --workspace DIR (cold cache)"


def _measure(runs: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU milliseconds of every command, ``runs`` interleaved rounds after two
    warm-up rounds (OS file cache and bytecode written once, so every round is comparable)."""
    with tempfile.TemporaryDirectory(prefix="flow-bench-") as tmp:
        workspace = os.path.join(tmp, "project")
        os.mkdir(workspace)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": tmp,
            "XDG_CONFIG_HOME": os.path.join(tmp, "xdg"),
        }
        commands = _commands(workspace)
        wall: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for round_ in range(runs + 2):
            for name, argv in commands.items():
                run_env = env
                if name == STATUS_COLD:  # nothing remembered: a fresh machine's first status
                    run_env = {**env, "XDG_CACHE_HOME": tempfile.mkdtemp(dir=tmp)}
                wall_ms, cpu_ms = _time(argv, run_env)
                if round_ >= 2:
                    wall[name].append(wall_ms)
                    cpu[name].append(cpu_ms)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="measured runs of each (default 21)")
    args = parser.parse_args()
    wall, cpu = _measure(args.runs)
    median = {name: statistics.median(ms) for name, ms in wall.items()}
    cpu_median = {name: statistics.median(ms) for name, ms in cpu.items()}

    def ratio(name: str, base: str) -> dict[str, object]:
        return {
            "command": name,
            "median_ms": round(median[name], 1),
            "cpu_median_ms": round(cpu_median[name], 1),
            "baseline": base,
            "baseline_median_ms": round(median[base], 1),
            "baseline_cpu_median_ms": round(cpu_median[base], 1),
            "ratio": round(median[name] / median[base], 2),
            "cpu_ratio": round(cpu_median[name] / cpu_median[base], 2),
        }

    def target(name: str, base: str, goal: float, floor: str | None) -> dict[str, object]:
        row = {**ratio(name, base), "target_ratio": goal}
        row["meets_target"] = median[name] / median[base] <= goal
        if floor is None:
            return row
        floor_ratio = median[floor] / median[base]
        return {
            **row,
            "floor": floor,
            "floor_ratio": round(floor_ratio, 2),
            "floor_cpu_ratio": round(cpu_median[floor] / cpu_median[base], 2),
            "target_below_floor": floor_ratio > goal,
            "over_floor_cpu_ms": round(cpu_median[name] - cpu_median[floor], 1),
        }

    rows = [
        target(HELP, PASS, HELP_TARGET, None),
        target(STATUS, PYDANTIC, STATUS_TARGET, MODEL),
        target(STATUS_COLD, PYDANTIC, STATUS_TARGET, MODEL),
    ]
    report = {
        "bench": "flow cold start",
        "runs": args.runs,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "ratios": rows,
        "floors": [ratio(CLICK, PASS), ratio(MODEL, PYDANTIC)],
        "meets_targets": all(r["meets_target"] for r in rows),
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
