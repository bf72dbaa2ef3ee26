"""A real public library as test input: tabulate 0.9.0 (MIT, vendored under fixtures/vendored
with its LICENSE and upstream tests), one line broken in its 95 KB module.

The scripted model goes from a name to the fix the way a small model with a small window must:
search -> outline -> a line-range read -> edit, never reading the whole file. The checks are
real: upstream pytest tests and ruff, run as subprocesses on a temporary copy.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from flow_core import ChatMessage, ChatResponse, FlowConfig, Runtime, ScriptedBackend, ToolCall

#: Whole runs over a real library's source and its own tests.
pytestmark = pytest.mark.slow

LIBRARY = Path(__file__).parent / "fixtures" / "vendored" / "tabulate-0.9.0"
MODULE = "tabulate/__init__.py"
PY = sys.executable
RUFF = shutil.which("ruff", path=str(Path(PY).parent)) or shutil.which("ruff")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(LIBRARY, root)
    return root


def last_tool_output(messages: Sequence[ChatMessage]) -> str:
    """The last tool result, without the data fence planner and reviewer see (run/_fence.py)."""
    text = next(m.content for m in reversed(messages) if m.role == "tool")
    if text.startswith("<<<WORKSPACE DATA "):
        text = text.split("\n", 1)[1].rsplit("\n", 1)[0]
    return text


def call(name: str, **args: Any) -> ChatResponse:
    return ChatResponse("", tool_calls=(ToolCall(f"c-{name}-{len(args)}", name, args),))


def step(make: Callable[[str], ChatResponse]) -> Callable[..., ChatResponse]:
    """A scripted reply computed from the last tool result the model saw."""
    return lambda messages, _tools: make(last_tool_output(messages))


def plan_from_search(found: str) -> ChatResponse:
    path, line = re.match(r"([^:\n]+):(\d+):\d+: def _multiline_width", found).groups()  # type: ignore[union-attr]
    return ChatResponse(
        f"Plan: _multiline_width in {path} (line {line}) must return the widest line."
    )


def read_from_outline(outline: str) -> ChatResponse:
    first, last = re.search(r"(\d+)-(\d+) +def _multiline_width\(", outline).groups()  # type: ignore[union-attr]
    return call("read_file", path=MODULE, start_line=int(first), end_line=int(last))


def edit_from_read(shown: str) -> ChatResponse:
    line = next(r.split("\t", 1)[1] for r in shown.split("\n") if "return min(" in r)
    return call("edit_file", path=MODULE, old_text=line, new_text=line.replace("min(", "max(", 1))


def test_coder_reaches_the_function_without_reading_whole_files(
    workspace: Path, flow_config: Callable[..., FlowConfig]
) -> None:
    assert RUFF is not None
    size = (workspace / MODULE).stat().st_size
    assert size > 90_000
    tests = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test/test_internal.py"]
    # Negative control: the broken line really breaks the upstream tests.
    before = subprocess.run(tests, cwd=workspace, capture_output=True, text=True, check=False)
    assert before.returncode == 1
    assert "test_multiline_width" in before.stdout

    config = flow_config(
        {
            "tests": {"cmd": tests, "kind": "test", "timeout": 120_000},
            "ruff": {
                "cmd": [RUFF, "check", "--isolated", "--select", "E9,F63,F7,F82", "tabulate"],
                "kind": "lint",
                "filetypes": ["python"],
            },
        },
        workspace_dir=str(workspace),
    )
    approve = ChatResponse(
        json.dumps({"approved": True, "summary": "max restored", "findings": []})
    )
    backend = ScriptedBackend(
        [
            call("search_text", query="def _multiline_width"),
            step(plan_from_search),
            call("outline", path=MODULE),
            step(read_from_outline),
            step(edit_from_read),
            ChatResponse("Done: _multiline_width returns the widest line again."),
            call("read_file", path=MODULE, start_line=1029, end_line=1031),
            approve,
        ]
    )
    report = Runtime(config, trusted=True, backend=backend).run(
        "tabulate's _multiline_width returns the narrowest line's width; it must be the widest"
    )
    assert report.verified, [e.message for e in report.errors]
    assert [(r.role, r.name, r.ok) for r in report.tool_calls] == [
        ("planner", "search_text", True),
        ("coder", "outline", True),
        ("coder", "read_file", True),
        ("coder", "edit_file", True),
        ("reviewer", "read_file", True),
    ]
    reads = [r.arguments for r in report.tool_calls if r.name == "read_file"]
    assert all(a["end_line"] - a["start_line"] < 20 for a in reads)
    assert reads[0] == {"path": MODULE, "start_line": 1029, "end_line": 1031}

    # What the tools sent back, over the whole run: a few KB of a 95 KB module.
    outputs = {
        m.tool_call_id: m.content
        for req in backend.requests
        for m in req.messages
        if m.role == "tool"
    }
    returned = sum(len(c.encode()) for c in outputs.values())
    assert returned < 8_000
    assert returned < size // 10
    assert all(len(c) < 6_000 for c in outputs.values())

    # The fix is on disk, the diff numbers the line as grep -n does, and the upstream tests pass.
    grep = subprocess.run(
        ["grep", "-n", "return max(map(line_width_fn", MODULE],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=True,
    )
    assert grep.stdout.startswith("1031:")
    assert "@@ -1028,7 +1028,7 @@" in report.diff
    assert report.changed_files == [MODULE]
    assert {c.name: c.status for c in report.checks} == {"tests": "passed", "ruff": "passed"}
