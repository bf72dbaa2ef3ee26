"""The evidence run's cost against today's check run, side by side; prints one JSON object.

A project of 40 pytest tests in 4 files, padded with plain files to 100, 1,000 and 10,000
files, is checked with the real ``run_check``, interleaved round by round; medians in
milliseconds:

* ``workspace_ms``: today's check run on the workspace as it is;
* ``evidence_ms``: the evidence run: the same check on the tree of a ``TreeSpec`` (the plan
  taken at the baseline plus one changed file; ``verify/_tree.py``).

Both are measured unjailed (``mode = "off"``: the evidence run's copy is its whole extra
cost) and, where bubblewrap works, jailed (``mode = "bwrap"``: the jail copies the workspace
for every check already, so the evidence run only changes what the copy is made from).
``plan_ms`` is the one scan of the workspace at the baseline, once per run.

Run: ``python bench/bench_evidence.py`` (or ``nox -s bench``).
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from flow_core import FlowConfig
from flow_core.run._evidence import prepare
from flow_core.verify._checks import CheckScope, run_check
from flow_core.verify._sandbox import probe_bwrap
from flow_core.verify._tree import TreeSpec, plan_workspace

ROUNDS = 3
SIZES = (100, 1_000, 10_000)


def _project(ws: Path, files: int) -> None:
    for f in range(4):
        body = "\n".join(
            f"def test_{f}_{i}():\n    assert sum(range({i})) == {i * (i - 1) // 2}\n"
            for i in range(10)
        )
        (ws / f"test_mod{f}.py").write_text(body)
    (ws / "data").mkdir()
    for i in range(files - 4):
        (ws / "data" / f"f{i:05d}.txt").write_text(f"line {i}\n" * 20)


def _config(ws: Path, mode: str) -> FlowConfig:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    return FlowConfig.model_validate(
        {
            "workspace_dir": str(ws),
            "checks": {"tests": {"cmd": argv, "timeout": 300_000, "kind": "test"}},
            "sandbox": {"mode": mode},
        }
    )


def _run(cfg: FlowConfig, tree: TreeSpec | None) -> float:
    started = time.perf_counter()
    prepared = prepare(cfg.checks["tests"], cfg.workspace_dir)
    folder = () if prepared.folder is None else (prepared.folder,)
    result = run_check(
        "tests",
        prepared.check,
        cwd=cfg.workspace_dir,
        sandbox=cfg.sandbox,
        scope=CheckScope(writable=folder, tree=tree),
    )
    took = (time.perf_counter() - started) * 1000.0
    shutil.rmtree(str(prepared.folder), ignore_errors=True)
    if result.status != "passed":
        raise SystemExit(f"bench check failed: {result.output_tail[-500:]}")
    return took


def _measure(files: int, mode: str) -> dict[str, Any]:
    ws = Path(tempfile.mkdtemp(prefix="flow-bench-evidence-"))
    ws.chmod(0o755)
    try:
        _project(ws, files)
        cfg = _config(ws, mode)
        started = time.perf_counter()
        plan = plan_workspace(ws)
        plan_ms = (time.perf_counter() - started) * 1000.0
        spec = TreeSpec(plan, {"data/f00000.txt": b"changed\n"})
        samples: dict[str, list[float]] = {"workspace": [], "evidence": []}
        _run(cfg, None), _run(cfg, spec)  # warm caches
        for _ in range(ROUNDS):
            samples["workspace"].append(_run(cfg, None))
            samples["evidence"].append(_run(cfg, spec))
        med = {k: statistics.median(v) for k, v in samples.items()}
        return {
            "files": files,
            "mode": mode,
            "plan_ms": round(plan_ms, 2),
            "workspace_ms": round(med["workspace"], 2),
            "evidence_ms": round(med["evidence"], 2),
            "overhead_ms": round(med["evidence"] - med["workspace"], 2),
            "ratio": round(med["evidence"] / med["workspace"], 3),
            "rounds": ROUNDS,
        }
    finally:
        shutil.rmtree(ws, ignore_errors=True)


def main() -> int:
    modes = ["off", *(["bwrap"] if probe_bwrap().usable else [])]
    rows = [_measure(n, mode) for mode in modes for n in SIZES]
    print(json.dumps({"bench": "evidence", "pytest_40_tests": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
