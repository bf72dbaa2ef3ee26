"""The check jail's cost, measured side by side in one process; prints one JSON object.

Two checks, each run bare (``[sandbox] mode = "off"``) and jailed (the default ``[sandbox]``:
bubblewrap, clean environment, limits, a ``pids`` cgroup where one can be made), interleaved
round by round through the real ``run_check``; medians in milliseconds:

1. ``true``: the fixed cost of a jail per check;
2. a small real pytest suite (40 tests in 4 files): the cost on a typical test check.

The jailed runs are also repeated without the check's cgroups, to show what that part costs,
and for ``true`` the same bubblewrap command line is run alone (``subprocess.run``): the
floor that bubblewrap itself sets on this machine.

3. the private check tree (``verify/_tree.py``) for workspaces of 100, 1,000 and 10,000 small
   files: what listing, copying and removing it costs (``tree_ms``), next to the jailed
   40-test pytest check on that workspace (``check_ms``, which includes it).

Targets (issue 11): <= +15 ms per check; <= 1.1x on the pytest suite. bubblewrap's own start
with the jail's mounts (``bwrap_alone_ms``) is a floor no jail can go below; the targets line
names it (``floor_ms``), what Flow adds above it (``flow_above_floor_ms``) and what the goal
leaves above it (``goal_above_floor_ms``).

The 1-minute load average before and after (``load_before``, ``load_after``) is printed
with the figures: on a shared machine they are only comparable at a similar load.

Run: ``python bench/bench_sandbox.py`` (or ``nox -s bench``). Without a usable bubblewrap it
prints ``{"skipped": "<why>"}``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from flow_core import FlowConfig
from flow_core.verify import _reaper, _sandbox
from flow_core.verify._cgroup import CheckCgroup
from flow_core.verify._checks import CheckScope, run_check
from flow_core.verify._sandbox import probe_bwrap
from flow_core.verify._tree import build_tree, plan_workspace

TRUE_ROUNDS = 40
PYTEST_ROUNDS = 8
TREE_SIZES = (100, 1_000, 10_000)
TREE_ROUNDS = 3


def _suite(ws: Path) -> None:
    for f in range(4):
        body = "\n".join(
            f"def test_{f}_{i}():\n    assert sum(range({i})) == {i * (i - 1) // 2}\n"
            for i in range(10)
        )
        (ws / f"test_mod{f}.py").write_text(body)


def _config(ws: Path, argv: list[str], mode: str) -> FlowConfig:
    return FlowConfig.model_validate(
        {
            "workspace_dir": str(ws),
            "checks": {"c": {"cmd": argv, "timeout": 120_000}},
            "sandbox": {"mode": mode},
        }
    )


def _once(cfg: FlowConfig) -> float:
    started = time.perf_counter()
    result = run_check(
        "c",
        cfg.checks["c"],
        cwd=cfg.workspace_dir,
        sandbox=cfg.sandbox,
        scope=CheckScope(protected=cfg.protected),
    )
    took = (time.perf_counter() - started) * 1000.0
    if result.status != "passed":
        raise SystemExit(f"bench check failed ({result.sandbox}): {result.output_tail[-500:]}")
    return took


def _bwrap_alone(ws: Path, argv: list[str]) -> list[str]:
    """The jail's bubblewrap command line without Flow's descriptors (info, block, seccomp,
    the generated passwd/group), binding the workspace itself where the jail binds its (by
    then removed) private copy and a tmpfs where it binds folders of the check's own disk."""
    jail = _sandbox.prepare_jail(argv[0], argv, _config(ws, argv, "auto").sandbox, workspace=ws)
    try:
        cmd = list(jail.argv)
    finally:
        jail.close()
        _reaper.settle()  # its copy and tmpfs are gone: binds of them become tmpfs below
    out: list[str] = []
    i = 0
    while i < len(cmd):
        word = cmd[i]
        if word in ("--info-fd", "--block-fd", "--seccomp"):
            i += 2
        elif word == "--ro-bind-data":
            del out[-2:]  # its --perms
            i += 3
        elif word == "--file":  # an /etc file copied in: the same host file, opened again
            out += [word, cmd[i + 2], cmd[i + 2]]
            i += 3
        elif word == "--bind" and cmd[i + 2] == str(ws.resolve()):
            out += ["--bind", str(ws), cmd[i + 2]]
            i += 3
        elif word == "--bind" and not Path(cmd[i + 1]).exists():
            out += ["--perms", "1777", "--tmpfs", cmd[i + 2]]
            i += 3
        else:
            out.append(word)
            i += 1
    return out


def _run_alone(raw: list[str]) -> None:
    """Run the command line of ``_bwrap_alone``, each ``--file`` given a fresh descriptor."""
    cmd, fds = list(raw), []
    try:
        for i, word in enumerate(raw[:-2]):
            if word == "--file":
                fds.append(os.open(raw[i + 1], os.O_RDONLY | os.O_CLOEXEC))
                cmd[i + 1] = str(fds[-1])
        subprocess.run(cmd, check=True, env={"PATH": "/usr/bin:/bin"}, pass_fds=fds)
    finally:
        for fd in fds:
            os.close(fd)


def _measure(ws: Path, argv: list[str], rounds: int, alone: bool = False) -> dict[str, Any]:
    bare, jailed = _config(ws, argv, "off"), _config(ws, argv, "auto")
    real_make = _sandbox.make_cgroup
    samples: dict[str, list[float]] = {"bare": [], "jailed": [], "jailed_no_cgroup": []}
    raw = _bwrap_alone(ws, argv) if alone else []
    if alone:
        samples["bwrap_alone"] = []
    _once(bare), _once(jailed)  # warm caches (and the bubblewrap probe)
    for _ in range(rounds):
        if raw:
            started = time.perf_counter()
            _run_alone(raw)
            samples["bwrap_alone"].append((time.perf_counter() - started) * 1000.0)
        samples["bare"].append(_once(bare))
        samples["jailed"].append(_once(jailed))
        _sandbox.make_cgroup = lambda values, **_: CheckCgroup()
        try:
            samples["jailed_no_cgroup"].append(_once(jailed))
        finally:
            _sandbox.make_cgroup = real_make
    med = {k: statistics.median(v) for k, v in samples.items()}
    extra = {"bwrap_alone_ms": round(med["bwrap_alone"], 2)} if alone else {}
    return {
        **extra,
        "bare_ms": round(med["bare"], 2),
        "jailed_ms": round(med["jailed"], 2),
        "jailed_no_cgroup_ms": round(med["jailed_no_cgroup"], 2),
        "overhead_ms": round(med["jailed"] - med["bare"], 2),
        "ratio": round(med["jailed"] / med["bare"], 3),
        "rounds": rounds,
    }


def _tree_cost(pytest_argv: list[str]) -> dict[str, Any]:
    """The private tree's cost per workspace size, next to the jailed check on it."""
    out: dict[str, Any] = {}
    for size in TREE_SIZES:
        ws = Path(tempfile.mkdtemp(prefix="flow-bench-tree-"))
        try:
            _suite(ws)
            for i in range(size - 4):
                folder = ws / "data" / f"d{i // 100}"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"f{i}.txt").write_text("x" * 1024)
            tree_ms: list[float] = []
            for _ in range(TREE_ROUNDS):
                started = time.perf_counter()
                plan = plan_workspace(ws)
                build_tree(ws, plan.files, mount_points=plan.read_only).close()
                tree_ms.append((time.perf_counter() - started) * 1000.0)
            jailed = _config(ws, pytest_argv, "auto")
            check_ms = [_once(jailed) for _ in range(TREE_ROUNDS)]
            out[f"{size}_files"] = {
                "tree_ms": round(statistics.median(tree_ms), 2),
                "check_ms": round(statistics.median(check_ms), 2),
            }
        finally:
            shutil.rmtree(ws, ignore_errors=True)
    return out


def main() -> int:
    probe = probe_bwrap()
    if not probe.usable:
        print(json.dumps({"bench": "sandbox", "skipped": probe.reason}))
        return 0
    ws = Path(tempfile.mkdtemp(prefix="flow-bench-sandbox-"))
    try:
        _suite(ws)
        true = shutil.which("true") or "/bin/true"
        pytest_argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        cfg = _config(ws, [true], "auto")
        probe_result = run_check(
            "c",
            cfg.checks["c"],
            cwd=ws,
            sandbox=cfg.sandbox,
            scope=CheckScope(protected=cfg.protected),
        )
        result: dict[str, Any] = {
            "bench": "sandbox",
            # 1-minute load average before the runs: on a busy machine every figure is slower
            "load_before": round(os.getloadavg()[0], 2),
            "jail": probe_result.sandbox,
            "jail_note": probe_result.sandbox_reason,
            "true": _measure(ws, [true], TRUE_ROUNDS, alone=True),
            "pytest_40_tests": _measure(ws, pytest_argv, PYTEST_ROUNDS),
            "tree": _tree_cost(pytest_argv),
        }
        true_ms = result["true"]
        floor = round(true_ms["bwrap_alone_ms"] - true_ms["bare_ms"], 2)
        result["load_after"] = round(os.getloadavg()[0], 2)
        result["targets"] = {
            "true_overhead_ms<=15": true_ms["overhead_ms"] <= 15,
            # bubblewrap alone, with the jail's own mounts, costs this much over a bare
            # start: no jail made by bubblewrap can be cheaper here
            "floor_ms": floor,
            # what Flow adds above that floor (copy, cgroup, disk, seccomp, limits)
            "flow_above_floor_ms": round(true_ms["jailed_ms"] - true_ms["bwrap_alone_ms"], 2),
            # what the goal leaves for Flow above the floor (negative: the goal is below it)
            "goal_above_floor_ms": round(15 - floor, 2),
            "pytest_ratio<=1.1": result["pytest_40_tests"]["ratio"] <= 1.1,
        }
        print(json.dumps(result))
    finally:
        shutil.rmtree(ws, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
