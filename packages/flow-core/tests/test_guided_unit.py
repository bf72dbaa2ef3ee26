"""Guided replies: the schema's choices and how a reply comes back (``run/_guided.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flow_core import ChatResponse
from flow_core.run._guided import MAX_GUIDED_FILES, guided_format, probe_passed, unwrap
from flow_core.tools._schemas import TOOL_SCHEMAS
from flow_safeio import Workspace


def _paths(tmp_path: Path, count: int) -> dict[str, object]:
    for i in range(count):
        (tmp_path / f"f{i:04d}.py").write_text("x = 1\n")
    with Workspace(tmp_path) as ws:
        schema = guided_format(list(TOOL_SCHEMAS.values()), ws)
    out: dict[str, object] = {}
    for choice in schema["anyOf"]:
        props = choice["properties"]
        if "tool" in props:
            out[props["tool"]["const"]] = props["arguments"]["properties"].get("path")
    return out


def test_existing_file_paths_are_enumerated_up_to_the_cap(tmp_path: Path) -> None:
    paths = _paths(tmp_path, 3)
    assert paths["read_file"] == {"type": "string", "enum": ["f0000.py", "f0001.py", "f0002.py"]}
    assert paths["edit_file"] == paths["outline"] == paths["read_file"]
    assert paths["write_file"] == {"type": "string", "description": "relative path"}


def test_over_the_cap_a_path_is_any_string(tmp_path: Path) -> None:
    paths = _paths(tmp_path, MAX_GUIDED_FILES + 1)
    assert paths["read_file"] == {"type": "string", "description": "relative path"}


@pytest.mark.parametrize(
    "content",
    [
        "plain text",
        "[1, 2]",
        json.dumps({"tool": "read_file"}),
        json.dumps({"tool": "read_file", "arguments": "a.py"}),
        json.dumps({"answer": 3}),
        json.dumps({"answer": "x", "tool": "read_file"}),
    ],
)
def test_a_reply_that_is_not_a_guided_object_is_left_for_the_parser(content: str) -> None:
    reply = ChatResponse(content)
    assert unwrap(reply) is reply


def test_a_guided_call_and_answer_come_back_structured() -> None:
    call = unwrap(ChatResponse(json.dumps({"tool": "read_file", "arguments": {"path": "a"}})))
    assert call.content == ""
    assert [(c.name, c.arguments) for c in call.tool_calls] == [("read_file", {"path": "a"})]
    answer = unwrap(ChatResponse(json.dumps({"answer": "done"}), prompt_tokens=7))
    assert (answer.content, answer.tool_calls, answer.prompt_tokens) == ("done", (), 7)


def test_the_probe_passes_only_on_the_exact_object() -> None:
    assert probe_passed(ChatResponse('{"probe": "flow-guided-probe-4f1c"}'))
    assert not probe_passed(ChatResponse('{"probe": "yes"}'))
    assert not probe_passed(ChatResponse("flow-guided-probe-4f1c"))
