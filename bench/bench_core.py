"""flow-core overheads, measured side by side in one process; prints one JSON object.

1. Runtime overhead per model turn: a 200-turn planner run against an instant scripted backend
   (each turn but the last reads a small file). ``flow_ms / turns`` is everything the runtime
   spent that was not the backend (context bookkeeping, reply parsing, tool execution, events).
   Scaling: the gap between the end of one backend call and the start of the next, averaged
   around history 50 and around history 200; a ratio near 1 means per-turn cost does not grow
   with history, so context building is linear in history size overall.
2. The named-check runner against bare ``subprocess.run(["true"])``: median of interleaved
   runs; the runner adds a new session, a captured pipe, group cleanup and reaping.

Targets (issue 3): < 1 ms per turn; check runner <= 1.2x bare subprocess.

Run: ``python bench/bench_core.py`` (or ``nox -s bench``).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flow_core import (
    ChatMessage,
    ChatResponse,
    CheckConfig,
    FlowConfig,
    Runtime,
    ScriptedBackend,
    ToolCall,
    run_check,
)

TURNS = 200
CHECK_RUNS = 300


REPEATS = 7


def bench_turns(root: Path) -> dict[str, Any]:
    """Median over ``REPEATS`` runs of the per-turn figures of one 200-turn run."""
    runs = [one_run(root) for _ in range(REPEATS)]
    out: dict[str, Any] = {"turns": TURNS, "repeats": REPEATS}
    for key in ("flow_ms_per_turn", "gap_ms_at_history_50", "gap_ms_at_history_200"):
        out[key] = round(statistics.median(r[key] for r in runs), 4)
    out["history_scaling_ratio"] = round(
        out["gap_ms_at_history_200"] / out["gap_ms_at_history_50"], 3
    )
    out["target_ms_per_turn"] = 1.0
    out["turn_target_met"] = out["flow_ms_per_turn"] < 1.0
    return out


def one_run(root: Path) -> dict[str, float]:
    (root / "small.py").write_text("x = 1\n" * 20)
    stamps: list[tuple[float, float]] = []  # (enter, leave) of each backend call

    def step(i: int) -> Any:
        def reply(messages: list[ChatMessage], tools: Sequence[Mapping[str, Any]]) -> ChatResponse:
            enter = time.perf_counter()
            if i == TURNS - 1:
                out = ChatResponse("Plan: nothing to do.")
            else:
                out = ChatResponse(
                    "", tool_calls=(ToolCall(f"c{i}", "read_file", {"path": "small.py"}),)
                )
            stamps.append((enter, time.perf_counter()))
            return out

        return reply

    config = FlowConfig.model_validate(
        {
            "workspace_dir": str(root),
            "agent": {
                "max_iterations": TURNS,
                "max_tool_calls": TURNS,
                "max_context_chars": 50_000_000,
            },
        }
    )
    runtime = Runtime(config, backend=ScriptedBackend([step(i) for i in range(TURNS)]))
    report = runtime.run("benchmark")
    runtime.close()
    assert report.status == "read_only", report.status
    assert report.roles["planner"].turns == TURNS
    gaps = [stamps[i][0] - stamps[i - 1][1] for i in range(1, len(stamps))]

    def around(n: int) -> float:
        window = gaps[max(0, n - 10) : n + 10]
        return statistics.median(window) * 1000.0

    return {
        "flow_ms_per_turn": report.timings.flow_ms / TURNS,
        "gap_ms_at_history_50": around(50),
        "gap_ms_at_history_200": around(len(gaps) - 10),
    }


def bench_checks(root: Path) -> dict[str, Any]:
    true = shutil.which("true")
    assert true is not None
    check = CheckConfig(cmd=("true",), timeout=10_000, kind="check", executable=true)
    ours: list[float] = []
    bare: list[float] = []
    for _ in range(10):  # warm-up
        run_check("true", check, cwd=root)
        subprocess.run(["true"], check=False)
    for i in range(CHECK_RUNS):
        # Alternate which goes first so that neither always runs on a warmer cache.
        for first in (i % 2 == 0, i % 2 == 1):
            t0 = time.perf_counter()
            if first:
                result = run_check("true", check, cwd=root)
                assert result.status == "passed"
                ours.append(time.perf_counter() - t0)
            else:
                subprocess.run(["true"], check=False)
                bare.append(time.perf_counter() - t0)
    ours_ms = statistics.median(ours) * 1000.0
    bare_ms = statistics.median(bare) * 1000.0
    ratio = ours_ms / bare_ms
    return {
        "check_runner_ms": round(ours_ms, 4),
        "bare_subprocess_ms": round(bare_ms, 4),
        "check_runner_ratio": round(ratio, 3),
        "target_check_ratio": 1.2,
        "check_target_met": ratio <= 1.2,
    }


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="flow-bench-") as tmp:
        root = Path(tmp)
        result = {"bench": "flow-core", "python": sys.version.split()[0]}
        result |= bench_turns(root)
        result |= bench_checks(root)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
