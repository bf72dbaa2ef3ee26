"""A planner that sees: a model that cannot receive tool definitions gets Flow's project map.

The fake Ollama server reports capabilities without ``tools`` (a model whose template drops
tool definitions). What the planner was sent is read from the far side: the requests the
server received. With ``tools`` in the capabilities, nothing changes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from flow_testing.model_server import chat_lines

#: Each test drives whole `flow run`s against the fake model server.
pytestmark = pytest.mark.slow

CHUNKS = '''"""Chunking helpers."""


def chunked(iterable, n, strict=False):
    """Yield lists of n items."""
    return _take(iterable, n)


def _take(iterable, n):
    return list(iterable)[:n]


class Window:
    def slide(self, size):
        return size
'''
FIXED = "def add(a: int, b: int) -> int:\n    return a + b  # checked\n"
NO_TOOLS = ("completion",)


def _role(request: dict[str, Any]) -> str:
    system = request["messages"][0]["content"]
    return system.split("\n", 1)[0].removeprefix("# Role: ")


def script(request: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    role = _role(request)
    if role == "reviewer":
        return json.dumps({"approved": True, "summary": "fine", "findings": []}), []
    if role == "coder":
        if len(request["messages"]) > 2:  # its call was answered (a tool or user message)
            return "Edited calc.py.", []
        return "", [{"name": "write_file", "arguments": {"path": "calc.py", "content": FIXED}}]
    return "Plan: edit calc.py.", []


def _project(workspace: Path) -> None:
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "chunks.py").write_text(CHUNKS)
    (workspace / "pkg" / "unrelated.py").write_text("def helper():\n    return 1\n")
    (workspace / "pkg" / "notes.md").write_text("# Notes\n\n## Usage\n")
    venv = workspace / ".venv" / "lib"
    venv.mkdir(parents=True)
    (venv / "chunked.py").write_text("def chunked(x):\n    return x\n")


def _config(h, tmp_path: Path, workspace: Path, url: str) -> Path:
    ok = [sys.executable, "-c", "import calc; assert calc.add(2, 3) == 5"]
    lint = [sys.executable, "-m", "py_compile", "calc.py"]
    checks = h.check_table("unit", ok) + h.check_table("compile", lint, kind="lint")
    return h.operator_config(tmp_path / "op.toml", workspace, base_url=url, checks=checks)


def _requests_of(fake, role: str) -> list[dict[str, Any]]:
    return [r for r in fake.requests if _role(r) == role]


def _blind_planner_sees(env, h, tmp_path: Path, workspace: Path, fake_ollama, task: str) -> str:
    """The planner's user message in a read-only run on a model without tools."""
    fake = fake_ollama(script, capabilities=NO_TOOLS)
    cfg = _config(h, tmp_path, workspace, fake.url)
    result = env.flow("run", task, "--config", str(cfg))
    assert result.code == 1, result.stderr
    (planner,) = _requests_of(fake, "planner")
    return str(planner["messages"][1]["content"])


def test_a_planner_without_tools_gets_the_map_and_no_promise(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    _project(workspace)
    fake = fake_ollama(script, capabilities=NO_TOOLS)
    cfg = _config(h, tmp_path, workspace, fake.url)
    task = "chunked() drops the last partial chunk when strict is false; fix it"
    result = env.flow("run", task, "--config", str(cfg))
    assert result.code == 1, result.stderr
    report = result.json()
    assert report["status"] == "read_only"
    assert report["roles"]["planner"]["tools_sent"] is False
    (planner,) = _requests_of(fake, "planner")
    assert "tools" not in planner
    system, user = (m["content"] for m in planner["messages"][:2])
    # Its instructions promise no tool it does not have.
    assert "You have no tools" in system
    for name in ("list_files", "read_file", "search_text", "tools you are given", "tool call"):
        assert name not in system
    # The map: the file list (generated folders left out) and the matching file's outline.
    assert "Project map (4 files):" in user
    for rel in ("calc.py", "pkg/chunks.py", "pkg/unrelated.py", "pkg/notes.md"):
        assert rel in user
    assert ".venv" not in user
    assert "Outline of pkg/chunks.py (15 lines):" in user
    assert "def chunked(iterable, n, strict=False)" in user
    assert "Outline of pkg/unrelated.py" not in user
    # It reaches the planner as data, after the task.
    assert user.index("Task:") < user.index("Project map")
    assert "project map" in user.split("Project map")[0].lower()


def test_a_file_the_task_names_is_outlined_first(env, h, tmp_path, workspace, fake_ollama) -> None:
    _project(workspace)
    user = _blind_planner_sees(
        env, h, tmp_path, workspace, fake_ollama, "make helper in pkg/unrelated.py return 2"
    )
    assert "Outline of pkg/unrelated.py (2 lines):" in user
    assert "def helper()" in user


def test_a_large_project_stays_within_the_map_budget(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    many = workspace / "many"
    many.mkdir()
    for i in range(1_500):
        (many / f"module_{i:04d}.py").write_text(f"def f{i}():\n    return {i}\n")
    user = _blind_planner_sees(
        env, h, tmp_path, workspace, fake_ollama, "change f7 in many/module_0007.py"
    )
    assert "Project map (1501 files):" in user
    assert "more files not listed]" in user
    assert "Outline of many/module_0007.py" in user
    task_part = user.split("Project map")[0]
    assert len(user) - len(task_part) <= 6_000 + 200  # the map's budget, and its fence


def test_a_trusted_run_without_tools_gives_the_reviewer_none(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    fake = fake_ollama(script, capabilities=NO_TOOLS)
    cfg = _config(h, tmp_path, workspace, fake.url)
    result = env.flow("run", "add a comment to add in calc.py", "--config", str(cfg), "--trusted")
    assert result.code == 0, result.stderr
    roles = result.json()["roles"]
    assert {r: roles[r]["tools_sent"] for r in roles} == {
        "planner": False,
        "coder": True,
        "reviewer": False,
    }
    (reviewer,) = _requests_of(fake, "reviewer")
    assert "tools" not in reviewer
    assert "You have no tools" in reviewer["messages"][0]["content"]
    assert all("tools" in r for r in _requests_of(fake, "coder"))


def test_a_model_with_tools_gets_them_and_no_map(env, h, tmp_path, workspace, fake_ollama) -> None:
    _project(workspace)
    fake = fake_ollama(script)
    cfg = _config(h, tmp_path, workspace, fake.url)
    result = env.flow("run", "chunked() drops the last chunk", "--config", str(cfg))
    assert result.code == 1, result.stderr
    assert result.json()["roles"]["planner"]["tools_sent"] is True
    (planner,) = _requests_of(fake, "planner")
    assert {t["function"]["name"] for t in planner["tools"]} >= {"list_files", "read_file"}
    assert "Project map" not in planner["messages"][1]["content"]
    assert "list_files" in planner["messages"][0]["content"]


def test_a_plan_cut_by_the_reply_cap_is_kept_and_the_coder_starts(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    fake = fake_ollama(script, capabilities=NO_TOOLS)
    # The planner's one reply stops at its length limit, mid-sentence.
    cut = chat_lines(["Plan: edit calc.py and add a"], done_reason="length")
    fake.queue_stream("/api/chat", cut)
    cfg = _config(h, tmp_path, workspace, fake.url)
    result = env.flow("run", "add a comment to add in calc.py", "--config", str(cfg), "--trusted")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["status"] == "verified"
    assert report["roles"]["planner"]["stopped"] == "answer"
    assert report["plan"].startswith("Plan: edit calc.py and add a")
    assert "cut short" in report["plan"]
    assert [e["code"] for e in report["errors"]] == ["reply_cap"]
    assert len(_requests_of(fake, "planner")) == 1
    # The coder is handed the cut plan, marked as cut.
    coder = _requests_of(fake, "coder")[0]["messages"][1]["content"]
    assert "Plan: edit calc.py and add a" in coder
    assert "cut short" in coder
