"""The run record is transparent: ``flow run`` with the store (as users run it) reports what
the same run without a store reports, for any text a model or a user can produce.

Each scenario runs twice against the same fake Ollama: once as ``flow run`` (a subprocess,
recording to the run store under ``$XDG_STATE_HOME``), once in this process through
``flow_core.Runtime`` with no store, from the same config and the same workspace bytes. The two
reports must be equal apart from the record's id and folder and the wall-clock timings
(``docs/architecture.md``, "The backend seam"). The record must keep the text losslessly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flow_testing.model_server import tool_names
from flow_testing.reports import comparable

#: Each test drives whole `flow run`s against the fake model server.
pytestmark = pytest.mark.slow

FIXED = "def add(a: int, b: int) -> int:\n    return a + b  # checked\n"
#: One line longer than the record's per-string cap (64 KiB), so the record cuts it with a marker.
LONG = "x" * 70_000


def _script(plan: str) -> Any:
    """planner: ``plan`` (then a plain plan when asked again, after a reply that cost the
    turn); coder: list, then write calc.py, then finish; reviewer: approve."""

    def script(request: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        if request.get("format"):
            return json.dumps({"approved": True, "summary": "fine", "findings": []}), []
        if "write_file" in tool_names(request):
            answered = sum(m["role"] == "tool" for m in request["messages"])
            if answered == 0:
                return "", [{"name": "list_files", "arguments": {}}]
            if answered == 1:
                write = {"path": "calc.py", "content": FIXED}
                return "", [{"name": "write_file", "arguments": write}]
            return "Edited calc.py.", []
        first = len(request["messages"]) <= 2
        return (plan if first else "Plan: nothing to change."), []

    return script


def _without_store(env: Any, config: Path, task: str, *, trusted: bool) -> dict[str, Any]:
    from flow_core import Runtime, load_config

    loaded = load_config(config_file=config, environ=env.vars)
    with Runtime(loaded, trusted=trusted) as rt:
        return rt.run(task).to_dict()


def _flow_run(env: Any, config: Path, task: str, *, trusted: bool) -> dict[str, Any]:
    """``flow run`` as a user runs it; ``task`` goes to argv as bytes (``os.fsencode``)."""
    argv = [sys.executable, "-m", "flow_cli", "run", "--config", str(config), os.fsencode(task)]
    if trusted:
        argv.insert(4, "--trusted")
    proc = subprocess.run(
        argv, capture_output=True, env=env.vars, cwd=env.home, timeout=120, check=False
    )
    assert proc.returncode in (0, 1), proc.stderr.decode("utf-8", "replace")
    report: dict[str, Any] = json.loads(proc.stdout)
    assert "internal_error" not in [e["code"] for e in report["errors"]], report["errors"]
    return report


def _twice(
    env: Any, h: Any, tmp_path: Path, workspace: Path, url: str, task: str, *, trusted: bool
) -> dict[str, Any]:
    """Run ``task`` with and without the store on the same workspace bytes; return the
    store's report after asserting it equals the other one (see the module docstring)."""
    checks = h.check_table("unit", [sys.executable, "-c", "import calc"]) + h.check_table(
        "compile", [sys.executable, "-m", "py_compile", "calc.py"], kind="lint"
    )
    config = tmp_path / "op.toml"
    config.write_text(
        f"workspace_dir = {json.dumps(str(workspace))}\n"
        f'[ollama]\nbase_url = "{url}"\nmodel = "fake-coder"\ntimeout = 30\n'
        f"\n[agent]\nmax_iterations = 4\nmax_cycles = 1\nmax_tool_calls = 16\n{checks}"
    )
    pristine = tmp_path / "pristine"
    shutil.copytree(workspace, pristine)
    plain = _without_store(env, config, task, trusted=trusted)
    shutil.rmtree(workspace)
    shutil.copytree(pristine, workspace)
    recorded = _flow_run(env, config, task, trusted=trusted)
    assert recorded["run_id"]
    assert plain["run_id"] is None
    assert comparable(recorded) == comparable(plain)
    return recorded


def _record(env: Any, report: dict[str, Any]) -> Path:
    """The run's record folder, which lies in the user's state folder (under ``HOME``)."""
    run_dir = Path(report["run_dir"])
    assert run_dir.is_relative_to(env.home)
    return run_dir


def test_a_verified_run_reports_the_same_with_and_without_the_store(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    fake = fake_ollama(_script("Plan: add a comment to calc.py."))
    report = _twice(env, h, tmp_path, workspace, fake.url, "add a comment", trusted=True)
    assert report["status"] == "verified"
    # What the wrapper used to hide: the delivery in use and the window-derived budget.
    assert report["roles"]["coder"]["tool_results"] == "native"
    assert report["roles"]["coder"]["context_window"] == 32768
    lines = (_record(env, report) / "transcript.jsonl").read_text().splitlines()
    assert any(json.loads(line)["type"] == "model_reply" for line in lines)


@pytest.mark.parametrize(
    "task",
    [
        "plan this \udcff byte",  # a non-UTF-8 byte in argv (Python keeps it as a surrogate)
        "plan é then \udcff",  # valid UTF-8 next to an invalid byte
        "plan " + "y" * 20_000,  # a very long line
    ],
    ids=["non-utf8-byte", "mixed", "long-line"],
)
def test_any_task_from_argv_is_recorded_losslessly(
    env, h, tmp_path, workspace, fake_ollama, task: str
) -> None:
    fake = fake_ollama(_script("Plan: nothing to change."))
    report = _twice(env, h, tmp_path, workspace, fake.url, task, trusted=False)
    assert report["status"] == "read_only"
    meta = json.loads((_record(env, report) / "meta.json").read_bytes())
    # argv's bytes, decoded as Python decodes argv: the same string, byte for byte.
    assert os.fsencode(meta["task"]) == os.fsencode(task)
    transcript = (_record(env, report) / "transcript.jsonl").read_bytes()
    transcript.decode("utf-8")  # the record itself is valid UTF-8
    started = next(json.loads(x) for x in transcript.splitlines())
    assert started["type"] == "run_started"
    assert started["task"] == task


def test_a_reply_with_a_lone_surrogate_nul_and_a_long_line_is_recorded(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    plan = "Plan: keep \ud83d as it is,\x00 then " + LONG
    fake = fake_ollama(_script(plan))
    report = _twice(env, h, tmp_path, workspace, fake.url, "plan it", trusted=False)
    assert report["status"] == "read_only"
    # The reply costs the planner a turn (too large for the reply cap), never the run.
    codes = [e["code"] for e in report["errors"]]
    assert codes == ["reply_too_large", "invalid_unicode", "not_trusted"]
    lines = [
        json.loads(x) for x in (_record(env, report) / "transcript.jsonl").read_bytes().splitlines()
    ]
    reply = next(x for x in lines if x["type"] == "model_reply")
    # The reply as received, up to the record's per-string cap, then a marker of the cut.
    kept = reply["content"]
    assert kept.startswith("Plan: keep \ud83d as it is,\x00 then xxx")
    assert kept.endswith("more characters cut]")
    assert (_record(env, report) / "report.json").is_file()


def test_piped_tui_input_with_a_non_utf8_byte_is_recorded(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    fake = fake_ollama(_script("Plan: nothing to change."))
    config = h.operator_config(tmp_path / "op.toml", workspace, base_url=fake.url)
    proc = subprocess.run(
        [sys.executable, "-m", "flow_cli", "tui", "--config", str(config)],
        input=b"plan \xff now\n/quit\n",
        capture_output=True,
        env=env.vars,
        cwd=env.home,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert b"internal_error" not in proc.stdout + proc.stderr
    state = Path(env.vars.get("XDG_STATE_HOME", env.home / ".local" / "state"))
    (meta_file,) = (state / "flow" / "runs").glob("*/meta.json")
    meta = json.loads(meta_file.read_bytes())
    assert meta["status"] == "read_only"
    assert os.fsencode(meta["task"]) == b"plan \xff now"


def _status_rows(out: str) -> dict[str, str]:
    """The /status table's rows as ``{label: value}`` (a value's lines joined by spaces)."""
    rows: dict[str, str] = {}
    label = ""
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) != 2:
            continue
        label = cells[0] or label
        rows[label] = f"{rows.get(label, '')} {cells[1]}".strip()
    return rows


def test_the_report_and_tui_status_show_the_enforced_limits(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    fake = fake_ollama(_script("Plan: add a comment to calc.py."))
    report = _twice(env, h, tmp_path, workspace, fake.url, "add a comment", trusted=True)
    # The fake Ollama reports num_ctx 32768; 1024 tokens are kept for the reply; 2 chars a token.
    enforced = (32768 - 1024) * 2
    assert report["budgets"]["context_chars"]["limit"] == enforced
    assert report["budgets"]["context_chars"]["used"] <= enforced
    for role in ("planner", "coder", "reviewer"):
        usage = report["roles"][role]
        assert (usage["context_window"], usage["context_chars_limit"]) == (32768, enforced)
        assert usage["reply_chars_limit"] == enforced // 2
    result = env.flow("tui", "--config", str(tmp_path / "op.toml"), stdin="/status\n")
    assert result.code == 0, result.stderr
    rows = _status_rows(result.stdout)
    assert rows["context window"] == "32768 tokens for planner, coder, reviewer"
    assert rows["max context chars"] == (
        f"{enforced} (window less the reply's reserve) for planner, coder, reviewer"
    )
    assert rows["max reply chars"] == f"{enforced // 2} for planner, coder, reviewer"
