"""Whether tool definitions reach the model, and the project map a role gets without them.

The OpenAI-compatible fake counts prompt tokens the way a chat template renders a request:
one renders the ``tools`` field into the prompt (llama-cpp-python's
``chatml-function-calling``), one drops it (plain ``chatml``). The Ollama fake answers
``/api/show`` with or without the ``tools`` capability.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from flow_core import load_prompt
from flow_core.models import HTTPSettings
from flow_core.models.ollama import OllamaBackend
from flow_core.models.openai import OpenAIBackend
from flow_core.tools._map import project_map, task_words
from flow_safeio import Workspace

BASE = "http://127.0.0.1:8080/v1"


class ToolsTemplate:
    """An OpenAI-compatible server whose template renders or drops the request's tools."""

    def __init__(self, *, renders_tools: bool, counts: bool = True) -> None:
        self.renders_tools = renders_tools
        self.counts = counts
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        tokens = sum(3 + len(str(m.get("content") or "").split()) for m in body["messages"])
        if self.renders_tools:
            tokens += sum(len(json.dumps(t).split()) for t in body.get("tools", []))
        reply: dict[str, Any] = {
            "choices": [{"message": {"role": "assistant", "content": "ok"}}],
        }
        if self.counts:
            reply["usage"] = {"prompt_tokens": tokens, "completion_tokens": 1}
        return httpx.Response(200, json=reply)


@pytest.mark.parametrize("renders_tools", [True, False])
def test_openai_probes_once_whether_tools_reach_the_prompt(renders_tools: bool) -> None:
    server = ToolsTemplate(renders_tools=renders_tools)
    be = OpenAIBackend(HTTPSettings(BASE, timeout=5), transport=httpx.MockTransport(server))
    assert be.tool_definitions_reach("m") is renders_tools
    assert be.tool_definitions_reach("m") is renders_tools
    # Two one-token probes, the same question with and without one tool; never again.
    assert len(server.bodies) == 2
    assert all(b["max_tokens"] == 1 for b in server.bodies)
    assert [len(b.get("tools", [])) for b in server.bodies] == [1, 0]


def test_openai_a_count_that_grew_at_all_means_tools_reach() -> None:
    # llama-cpp-python's chatml-function-calling renders the tools but, for a reply that is
    # a message, reports only part of the prompt: 12 tokens without the tool, 15 with it.
    def handler(request: httpx.Request) -> httpx.Response:
        tools = json.loads(request.content).get("tools")
        usage = {"prompt_tokens": 15 if tools else 12, "completion_tokens": 1}
        message = {"role": "assistant", "content": ""}
        return httpx.Response(200, json={"choices": [{"message": message}], "usage": usage})

    be = OpenAIBackend(HTTPSettings(BASE, timeout=5), transport=httpx.MockTransport(handler))
    assert be.tool_definitions_reach("m") is True


def test_openai_without_counts_or_reachable_server_assumes_tools_reach() -> None:
    server = ToolsTemplate(renders_tools=False, counts=False)
    be = OpenAIBackend(HTTPSettings(BASE, timeout=5), transport=httpx.MockTransport(server))
    assert be.tool_definitions_reach("m") is True

    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    gone = OpenAIBackend(HTTPSettings(BASE, timeout=5), transport=httpx.MockTransport(down))
    assert gone.tool_definitions_reach("m") is True


@pytest.mark.parametrize(
    ("show", "reach"),
    [
        ({"capabilities": ["completion", "tools"]}, True),
        ({"capabilities": ["completion"]}, False),
        ({"template": "{{ .Prompt }}"}, False),
        ({"template": "{{ if .Tools }}{{ .Tools }}{{ end }}"}, True),
        ({}, True),
    ],
)
def test_ollama_reads_the_models_capabilities(show: dict[str, Any], reach: bool) -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(200, json=show)

    be = OllamaBackend(
        HTTPSettings("http://127.0.0.1:11434", timeout=5), transport=httpx.MockTransport(handler)
    )
    assert be.tool_definitions_reach("m") is reach
    assert be.tool_definitions_reach("m") is reach
    assert asked == ["/api/show"]


def test_prompts_without_tools_promise_none() -> None:
    for role in ("planner", "reviewer"):
        text = load_prompt(role, tools=False)
        assert text.startswith(f"# Role: {role}")
        assert "You have no tools" in text
        assert "read_file" not in text
        assert "read-only tools" not in text
    with pytest.raises(KeyError):
        load_prompt("coder", tools=False)


def test_a_guided_coder_is_told_what_a_reply_is_and_where_the_lines_are() -> None:
    text = load_prompt("coder", guided=True)
    assert text.startswith("# Role: coder")
    assert text != load_prompt("coder")
    for part in ('{"tool": NAME, "arguments": {...}}', '{"answer":', "numbered lines", "edit_file"):
        assert part in text
    # Roles without a guided variant keep their prompt; a role without tools is never guided.
    assert load_prompt("planner", guided=True) == load_prompt("planner")
    assert load_prompt("planner", tools=False, guided=True) == load_prompt("planner", tools=False)


def _workspace(tmp_path: Path, files: dict[str, str | bytes]) -> Workspace:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
    return Workspace(tmp_path)


def test_the_map_ranks_definitions_of_the_tasks_identifiers(tmp_path: Path) -> None:
    ws = _workspace(
        tmp_path,
        {
            "a.py": "def chunked(x):\n    return x\n\n\ndef strict_mode():\n    pass\n",
            "b.py": "def chunked(x):\n    return x\n",
            "c.py": "# mentions chunked and strict_mode only in a comment\nX = 1\n",
            "blob.bin": b"\0chunked\0",
            "bad.py": b"def chunked(\xff",
        },
    )
    text = project_map(ws, "chunked ignores strict_mode")
    assert text.index("Outline of a.py") < text.index("Outline of b.py")
    assert "Outline of c.py" not in text
    assert "Outline of blob.bin" not in text
    assert "Outline of bad.py" not in text
    assert "blob.bin" in text  # listed, never outlined


def test_the_map_keeps_to_its_budget(tmp_path: Path) -> None:
    defs = "".join(f"def chunked_{i}(a, b, c):\n    return a\n\n" for i in range(400))
    ws = _workspace(tmp_path, {f"m{i:03d}.py": defs for i in range(30)})
    for budget in (300, 1_000, 4_000):
        text = project_map(ws, "fix m007.py and chunked_3", budget=budget)
        assert len(text) <= budget
        assert text.startswith("Project map (30 files):")
    text = project_map(ws, "fix m007.py", budget=4_000)
    assert "Outline of m007.py (1200 lines):" in text
    assert "[outline cut to fit the map]" in text


def test_task_words_leave_common_words_out() -> None:
    assert task_words("Fix the chunked() function in more_itertools.more") == {
        "chunked",
        "more_itertools",
        "more",
    }
