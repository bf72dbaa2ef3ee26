"""Shared pieces of Flow's end-to-end tests, demo and benchmark.

Nothing here knows what the model will say: it writes operator configs, copies the sample
project, snapshots directories, re-runs checks independently and scans for leftover processes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

E2E_DIR = Path(__file__).resolve().parent
SAMPLE_PROJECT = E2E_DIR / "sample_project"

#: Timings of every Flow run in a test session (written to ``FLOW_E2E_TIMINGS`` when set).
RUN_TIMINGS: list[dict[str, Any]] = []

#: The task every run gets: it describes the sample project's real bug.
TASK = (
    "calc.inclusive_sum(start, stop) must add every integer from start to stop with both ends "
    "included, but inclusive_sum(1, 3) returns 3 instead of 6, so test_calc.py fails. Fix the "
    "off-by-one error in calc.py; do not change the tests."
)


def tests_argv() -> list[str]:
    """The operator's test check: this interpreter's pytest, no cache or bytecode written."""
    return [sys.executable, "-B", "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def lint_argv() -> list[str]:
    """The operator's lint check: ruff from this environment.

    Raises:
        RuntimeError: ruff is not installed next to this interpreter.
    """
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff", "check", "--no-cache", "."]
    scripts = Path(sysconfig.get_path("scripts"))
    candidate = scripts / "ruff"
    if candidate.is_file():
        return [str(candidate), "check", "--no-cache", "."]
    found = shutil.which("ruff")
    if found:
        return [found, "check", "--no-cache", "."]
    raise RuntimeError(
        "ruff is not installed in this environment; the e2e/demo sessions must install it "
        "(the lint check is part of the operator config)"
    )


def check_prerequisites() -> list[str]:
    """What the operator's checks need but this environment lacks (empty when all is there)."""
    problems = []
    if importlib.util.find_spec("pytest") is None:
        problems.append(f"pytest is not installed for {sys.executable} (the test check runs it)")
    try:
        lint_argv()
    except RuntimeError as err:
        problems.append(str(err))
    return problems


@dataclass(frozen=True)
class Backend:
    """Which server a config points Flow at, and the model name for each role."""

    kind: str  # "openai" or "ollama"
    base_url: str
    planner: str
    coder: str
    reviewer: str
    timeout_s: float = 900.0


@dataclass(frozen=True)
class Budgets:
    """Small agent budgets keep a run on a 135M model to well under a minute."""

    max_iterations: int = 3
    max_cycles: int = 1
    max_tool_calls: int = 8
    max_context_chars: int = 12_000


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _toml_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(_toml_str(v) for v in values) + "]"


def operator_config(
    workspace: Path,
    backend: Backend,
    *,
    budgets: Budgets | None = None,
    check_timeout_ms: int = 60_000,
) -> str:
    """The text of an operator config (TOML) with real pytest and ruff checks."""
    b = budgets or Budgets()
    table = backend.kind
    return "\n".join(
        [
            f"workspace_dir = {_toml_str(str(workspace))}",
            f"backend = {_toml_str(backend.kind)}",
            "",
            f"[{table}]",
            f"base_url = {_toml_str(backend.base_url)}",
            f"model = {_toml_str(backend.coder)}",
            f"timeout = {backend.timeout_s}  # seconds",
            "",
            "[models]",
            f"planner = {_toml_str(backend.planner)}",
            f"coder = {_toml_str(backend.coder)}",
            f"reviewer = {_toml_str(backend.reviewer)}",
            "",
            "[agent]",
            f"max_iterations = {b.max_iterations}",
            f"max_cycles = {b.max_cycles}",
            f"max_tool_calls = {b.max_tool_calls}",
            f"max_context_chars = {b.max_context_chars}",
            "",
            "[checks.tests]",
            f"cmd = {_toml_list([*tests_argv(), '--junitxml={junit_xml}'])}",
            f"timeout = {check_timeout_ms}  # milliseconds",
            "required = true",
            'kind = "test"',
            "# pytest writes JUnit XML where Flow says; a pass needs those results (the baseline's",
            "# tests all present and passing), not just exit status 0",
            'results = "junit"',
            'filetypes = ["python"]',
            "",
            "[checks.lint]",
            f"cmd = {_toml_list(lint_argv())}",
            f"timeout = {check_timeout_ms}",
            "required = true",
            'kind = "lint"',
            'filetypes = ["python"]',
            "",
        ]
    )


def copy_sample(dest: Path) -> Path:
    """Copy the sample project (sources only) to ``dest``; returns ``dest``."""
    shutil.copytree(
        SAMPLE_PROJECT, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache")
    )
    return dest


def snapshot(root: Path) -> dict[str, tuple[str, int, int]]:
    """``relative path → (sha256, mode, size)`` of every file and directory under ``root``.

    Also works on a single file. Symlinks are recorded by target, never followed.
    """
    out: dict[str, tuple[str, int, int]] = {}
    if root.is_file():
        data = root.read_bytes()
        st = root.stat()
        return {".": (hashlib.sha256(data).hexdigest(), st.st_mode, st.st_size)}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in [*dirnames, *sorted(filenames)]:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                digest = "link:" + os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                digest = "dir"
            out[rel] = (digest, st.st_mode, st.st_size if stat.S_ISREG(st.st_mode) else 0)
    return out


def flow_env(home: Path) -> dict[str, str]:
    """The environment for ``flow``: HOME and XDG_CONFIG_HOME in a temp dir, no bytecode."""
    env = dict(os.environ)
    env.update(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "NO_COLOR": "1",
        }
    )
    (home / ".config").mkdir(parents=True, exist_ok=True)
    return env


def scripts_dir() -> Path:
    """Where this interpreter's console scripts (``flow``, ``flow-mcp``) are."""
    return Path(sysconfig.get_path("scripts"))


def flow_script() -> str:
    path = scripts_dir() / "flow"
    if not path.is_file():
        found = shutil.which("flow")
        if not found:
            raise RuntimeError("the `flow` script is not installed (pip install -e packages/...)")
        return found
    return str(path)


def timed_flow_run(
    config: Path, task: str, home: Path, *, timeout_s: float
) -> tuple[subprocess.CompletedProcess[str], float]:
    """``flow run --config CONFIG --trusted TASK`` with ``home`` as HOME; its process and its
    wall time in seconds (start to exit: the time to the verdict)."""
    argv = [flow_script(), "run", "--config", str(config), "--trusted", task]
    started = time.monotonic()
    proc = subprocess.run(
        argv, env=flow_env(home), capture_output=True, text=True, timeout=timeout_s, check=False
    )
    return proc, time.monotonic() - started


def one_json_object(stdout: str) -> dict[str, Any]:
    """Parse ``stdout`` as exactly one JSON object (surrounding whitespace allowed).

    Raises:
        AssertionError: anything else is on stdout.
    """
    text = stdout.strip()
    decoder = json.JSONDecoder()
    value, end = decoder.raw_decode(text)
    assert text[end:].strip() == "", f"more than one JSON value on stdout: {text[end:][:200]!r}"
    assert isinstance(value, dict), f"stdout holds a {type(value).__name__}, not an object"
    return value


@dataclass(frozen=True)
class Rerun:
    """An independent run of one configured check (same argv, cwd = workspace)."""

    name: str
    required: bool
    exit_code: int | None
    output: str

    @property
    def passed(self) -> bool:
        return self.exit_code == 0


def rerun_checks(report: Mapping[str, Any], workspace: Path, env: Mapping[str, str]) -> list[Rerun]:
    """Run every check the report lists as configured, exactly as configured, once more."""
    results: list[Rerun] = []
    for spec in report.get("configured_checks", []):
        try:
            proc = subprocess.run(
                spec["argv"],
                cwd=workspace,
                env=dict(env),
                capture_output=True,
                text=True,
                timeout=spec["timeout_ms"] / 1000.0,
                check=False,
                start_new_session=True,
            )
            code: int | None = proc.returncode
            output = (proc.stdout + proc.stderr)[-2000:]
        except (OSError, subprocess.TimeoutExpired) as err:
            code, output = None, f"{type(err).__name__}: {err}"
        results.append(Rerun(spec["name"], bool(spec["required"]), code, output))
    return results


def descendants(pid: int) -> list[int]:
    """Every live process whose parent chain reaches ``pid`` (read from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        state, ppid = fields[0], int(fields[1])
        if state != "Z":  # zombies are already dead; their parent reaps them
            parents[int(entry.name)] = ppid
    found: list[int] = []
    frontier = [pid]
    while frontier:
        current = frontier.pop()
        children = [p for p, pp in parents.items() if pp == current]
        found.extend(children)
        frontier.extend(children)
    return found


def processes_in(directory: Path) -> list[tuple[int, str]]:
    """Live processes whose working directory is ``directory`` or below (leftover checks)."""
    target = str(directory.resolve())
    hits: list[tuple[int, str]] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if cwd == target or cwd.startswith(target + os.sep):
            hits.append((int(entry.name), cmdline.strip()))
    return hits


def flow_share(report: Mapping[str, Any]) -> dict[str, float]:
    """Flow's own share of a run's wall time (``timings.flow_ms / timings.total_ms``)."""
    t = report.get("timings") or {}
    total = float(t.get("total_ms") or 0.0)
    flow = float(t.get("flow_ms") or 0.0)
    return {
        "total_ms": round(total, 1),
        "model_ms": round(float(t.get("model_ms") or 0.0), 1),
        "checks_ms": round(float(t.get("checks_ms") or 0.0), 1),
        "flow_ms": round(flow, 1),
        "flow_share": (flow / total) if total > 0 else 0.0,
    }
