"""The run store's cost, measured side by side in one process; prints one JSON object.

A trusted coder run against an instant scripted backend: ``EDITS`` turns, each an
``edit_file`` on one of ten small files (so every turn writes a transcript request, a reply, a
tool call and, after the write, the files' hashes; the first write of each file also keeps its
pre-image), then the checks and the reviewer. The same run is made with no store and with a
store in a temporary ``XDG_STATE_HOME``, interleaved, ``REPEATS`` times; the figures are the
medians of Flow's own time per turn (``report.timings.flow_ms / turns``: everything that was
neither the backend nor the checks) and their ratio, plus the record's size on disk.

Run: ``python bench/bench_store.py`` (or ``nox -s bench``).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from flow_core import ChatResponse, FlowConfig, Runtime, ScriptedBackend, ToolCall
from flow_core.store import RunStore

EDITS = 100
FILES = 10
REPEATS = 5


def _replies() -> list[ChatResponse]:
    out = [ChatResponse("Plan: bump every counter.")]
    for i in range(EDITS):
        n = i // FILES
        call = ToolCall(
            f"c{i}",
            "edit_file",
            {"path": f"m{i % FILES}.py", "old_text": f"x = {n}\n", "new_text": f"x = {n + 1}\n"},
        )
        out.append(ChatResponse("", tool_calls=(call,)))
    out.append(ChatResponse("done"))
    out.append(ChatResponse(json.dumps({"approved": True, "summary": "ok", "findings": []})))
    return out


def one_run(root: Path, store: RunStore | None) -> float:
    ws = root / "ws"
    ws.mkdir(exist_ok=True)
    for f in range(FILES):
        (ws / f"m{f}.py").write_text("x = 0\n" + "# padding line\n" * 200)
    ok = [sys.executable, "-c", "pass"]
    config = FlowConfig.model_validate(
        {
            "workspace_dir": str(ws),
            "agent": {
                "max_iterations": EDITS + 2,
                "max_tool_calls": EDITS + 5,
                "max_cycles": 1,
                "max_context_chars": 50_000_000,
            },
            "checks": {
                "unit": {"cmd": ok, "kind": "test"},
                "lint": {"cmd": ok, "kind": "lint", "filetypes": ["python"]},
            },
        }
    )
    with Runtime(config, trusted=True, backend=ScriptedBackend(_replies()), store=store) as rt:
        report = rt.run("benchmark")
    assert report.status == "verified", (report.status, report.errors)
    turns = sum(r.turns for r in report.roles.values())
    return report.timings.flow_ms / turns


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> dict[str, Any]:
    plain: list[float] = []
    recorded: list[float] = []
    record_bytes = 0
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for i in range(REPEATS):
            for with_store in (i % 2 == 0, i % 2 == 1):
                root = base / f"r{i}-{int(with_store)}"
                root.mkdir()
                if with_store:
                    store = RunStore(root / "state" / "flow" / "runs")
                    recorded.append(one_run(root, store))
                    (record,) = os.listdir(store.root)
                    record_bytes = _size(store.root / record)
                else:
                    plain.append(one_run(root, None))
    no_store = statistics.median(plain)
    with_store = statistics.median(recorded)
    return {
        "bench": "run_store",
        "turns_per_run": EDITS + 3,
        "repeats": REPEATS,
        "flow_ms_per_turn_no_store": round(no_store, 4),
        "flow_ms_per_turn_with_store": round(with_store, 4),
        "ratio_with_to_without": round(with_store / no_store, 3),
        "record_bytes": record_bytes,
    }


if __name__ == "__main__":
    print(json.dumps(main()))
