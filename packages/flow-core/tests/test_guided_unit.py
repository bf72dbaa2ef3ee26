"""Guided replies: the schema's choices and how a reply comes back (``run/_guided.py``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from flow_core import ChatResponse, ToolCall
from flow_core.run._guided import (
    ANSWER_OVERHEAD,
    MAX_ANSWER_CHARS,
    MAX_GUIDED_FILES,
    MAX_GUIDED_LINES,
    MAX_LINE_FILES,
    MIN_OLD_CHARS,
    NEW_PATH,
    answer_limit,
    guided_format,
    new_path,
    probe_passed,
    unwrap,
)
from flow_core.run._stall import StallWatch
from flow_core.tools._schemas import TOOL_SCHEMAS
from flow_safeio import Workspace


def _choices(
    tmp_path: Path,
    files: dict[str, str],
    done: tuple[ToolCall, ...] = (),
    *,
    task: str = "",
    first: tuple[str, ...] | list[str] = (),
    fixed: Any = None,
) -> dict[str, list[dict[str, Any]]]:
    """The guided schema's argument schemas by tool name, for a workspace holding ``files``
    (each tool's ``required`` list under the key ``"required"``)."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    with Workspace(tmp_path) as ws:
        schema = guided_format(
            list(TOOL_SCHEMAS.values()), ws, done, task=task, first=first, fixed=fixed
        )
    out: dict[str, list[dict[str, Any]]] = {}
    for choice in schema["anyOf"]:
        props = choice["properties"]
        if "tool" in props:
            args = props["arguments"]
            entry = {**args["properties"], "required": args.get("required", [])}
            out.setdefault(props["tool"]["const"], []).append(entry)
    return out


def test_a_small_file_bounds_read_lines_and_edit_old_text_to_its_own_lines(tmp_path: Path) -> None:
    text = "def f():\n    return 1\n\n\ndef g():\n    return 1\n    return 12\n"
    choices = _choices(tmp_path, {"pkg/m.py": text, "notes.md": "# N\n"})
    reads = {c["path"]["const"]: c for c in choices["read_file"]}
    assert set(reads) == {"notes.md", "pkg/m.py"}
    assert reads["pkg/m.py"]["start_line"]["enum"] == list(range(1, 8))
    assert reads["pkg/m.py"]["end_line"]["enum"] == list(range(1, 8))
    assert reads["notes.md"]["start_line"]["enum"] == [1]
    edits = {c["path"]["const"]: c for c in choices["edit_file"]}
    # Without indentation; blank lines, a line that repeats and a line that is part of another
    # are left out.
    assert edits["pkg/m.py"]["old_text"]["enum"] == ["def f():", "def g():", "return 12"]
    assert edits["pkg/m.py"]["new_text"] == {"type": "string"}
    assert [c["path"] for c in choices["outline"]] == [
        {"type": "string", "enum": ["notes.md", "pkg/m.py"]}
    ]
    assert [c["path"] for c in choices["list_files"]] == [{"type": "string", "enum": ["", "pkg"]}]
    # write_file: an existing file, or a new relative path.
    (write,) = choices["write_file"]
    assert write["path"] == {
        "anyOf": [
            {"type": "string", "enum": ["notes.md", "pkg/m.py"]},
            {"type": "string", "pattern": NEW_PATH[:-1] + "[.](md|py)$"},
        ]
    }
    assert write["content"] == {"type": "string", "minLength": 1}
    # No task: nothing to search for.
    assert "search_text" not in choices


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("new.py", True),
        ("pkg/new_mod.py", True),
        ("_x", True),
        ("/tmp/x.py", False),
        ("../x.py", False),
        (".hidden", False),
        ("a b.py", False),
        ("", False),
        ("x" * 64, True),
        ("x" * 65, False),  # a small model ran a path on to the reply cap
    ],
)
def test_a_new_path_is_relative(path: str, ok: bool) -> None:
    assert bool(re.fullmatch(NEW_PATH[1:-1], path)) is ok


def test_search_queries_are_the_tasks_identifiers_found_in_the_files(tmp_path: Path) -> None:
    files = {"calc.py": "def inclusive_sum(start, stop):\n    return stop\n", "n.md": "# N\n"}
    task = "Fix inclusive_sum in calc.py: the stop value and the missing_name"
    choices = _choices(tmp_path, files, task=task)
    (search,) = choices["search_text"]
    # Longest first; common words and identifiers in no file are left out; nothing else free.
    assert search == {
        "query": {"type": "string", "enum": ["inclusive_sum", "stop"]},
        "required": ["query"],
    }
    asked = (ToolCall("1", "search_text", {"query": "inclusive_sum"}),)
    (search,) = _choices(tmp_path, files, asked, task=task)["search_text"]
    assert search["query"]["enum"] == ["stop"]
    asked += (ToolCall("2", "search_text", {"query": "stop"}),)
    assert "search_text" not in _choices(tmp_path, files, asked, task=task)


def test_the_task_files_come_first_and_get_their_own_line_choices(tmp_path: Path) -> None:
    files = {f"a{i:02d}.py": f"x = {i}\n" for i in range(MAX_LINE_FILES)}
    files["z/target.py"] = "def target():\n    return 1\n"
    choices = _choices(tmp_path, files, first=["z/target.py"])
    assert [c["path"]["const"] for c in choices["read_file"][:1]] == ["z/target.py"]
    assert choices["edit_file"][0]["path"] == {"type": "string", "const": "z/target.py"}
    assert choices["outline"][0]["path"]["enum"][0] == "z/target.py"
    # Without it, the file is past the cap of line-bound files: it shares the free choice.
    plain = _choices(tmp_path, files)
    assert "z/target.py" not in [c["path"].get("const") for c in plain["edit_file"]]


def test_the_answer_alone_or_calls_alone(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    tools = list(TOOL_SCHEMAS.values())
    with Workspace(tmp_path) as ws:
        last = guided_format(tools, ws, calls=False)
        acting = guided_format(tools, ws, answer=False)
        nothing = guided_format([], ws, answer=False)
    assert last == {
        "anyOf": [
            {
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"],
                "additionalProperties": False,
            }
        ]
    }
    assert all("tool" in c["properties"] for c in acting["anyOf"])
    # No call to offer: the answer stays, so a reply is always possible.
    assert nothing == last


def test_lines_and_paths_with_a_quote_or_backslash_are_never_allowed_values(tmp_path: Path) -> None:
    # llama-cpp-python 0.3.36 turns such a value into a grammar that does not parse.
    text = 'def f():\n    """Doc."""\n    return "a"\n    s = 1  # \\n\n    return 2\n'
    choices = _choices(tmp_path, {"m.py": text, 'q"x.py': "x = 1\n", "b\\x.py": "y = 1\n"})
    (edit,) = choices["edit_file"]
    assert edit["old_text"]["enum"] == ["def f():", "return 2"]
    assert [c["path"]["const"] for c in choices["read_file"]] == ["m.py"]
    assert choices["outline"][0]["path"]["enum"] == ["m.py"]


def test_a_call_already_made_since_the_last_write_is_not_offered_again(tmp_path: Path) -> None:
    files = {"m.py": "x = 1\n", "pkg/n.py": "y = 2\n"}
    done = (
        ToolCall("1", "list_files", {}),
        ToolCall("2", "outline", {"path": "m.py"}),
        ToolCall("3", "read_file", {"path": "m.py"}),
        ToolCall("4", "read_file", {"path": "pkg/n.py", "start_line": 1}),
    )
    choices = _choices(tmp_path, files, done)
    assert [c["path"] for c in choices["list_files"]] == [{"type": "string", "enum": ["pkg"]}]
    assert choices["outline"][0]["path"]["enum"] == ["pkg/n.py"]
    # m.py was shown whole: no read of it is offered; pkg/n.py was read from a line.
    reads = {c["path"]["const"]: c["required"] for c in choices["read_file"]}
    assert reads == {"pkg/n.py": ["path"]}
    # Nothing left to list: the choice goes.
    more = (*done, ToolCall("5", "list_files", {"path": "pkg/"}))
    assert "list_files" not in _choices(tmp_path, files, more)


def test_files_past_the_line_caps_share_one_choice_with_free_arguments(tmp_path: Path) -> None:
    files = {f"f{i:02d}.py": f"x = {i}\n" for i in range(MAX_LINE_FILES)}
    files["big.py"] = "a = 1\n" * (MAX_GUIDED_LINES + 1)
    files["f00.py"] = "x = 1\nx = 1\n"  # no line occurs once: not bound for edits
    files["zz.py"] = "z = 1\n"
    choices = _choices(tmp_path, files)
    assert len(choices["read_file"]) == MAX_LINE_FILES + 1
    assert len(choices["edit_file"]) == MAX_LINE_FILES
    shared = choices["edit_file"][-1]
    assert shared["path"] == {"type": "string", "enum": ["big.py", "f00.py", "zz.py"]}
    assert shared["old_text"] == {"type": "string", "minLength": 1}


def test_existing_file_paths_are_enumerated_up_to_the_cap(tmp_path: Path) -> None:
    choices = _choices(tmp_path, {f"f{i:04d}.py": "" for i in range(MAX_GUIDED_FILES)})
    assert choices["outline"][0]["path"]["enum"][:2] == ["f0000.py", "f0001.py"]
    assert len(choices["outline"][0]["path"]["enum"]) == MAX_GUIDED_FILES


def test_over_the_cap_a_path_is_any_string(tmp_path: Path) -> None:
    choices = _choices(tmp_path, {f"f{i:04d}.py": "x = 1\n" for i in range(MAX_GUIDED_FILES + 1)})
    for name in ("read_file", "edit_file", "outline", "list_files"):
        assert [c["path"] for c in choices[name]] == [
            TOOL_SCHEMAS[name]["function"]["parameters"]["properties"]["path"]
        ]


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


def test_a_check_already_run_is_not_offered_again_until_a_write(tmp_path: Path) -> None:
    watch = StallWatch(list(TOOL_SCHEMAS.values()), max_repeated_calls=2, max_idle_turns=3)
    failed = ToolCall("1", "run_check", {"name": "tests"})
    watch.after_turn([(failed, False)])  # a failing check: its answer is in the context
    assert watch.done() == (failed,)
    name = {"type": "string", "enum": ["tests", "lint"]}
    params = {"type": "object", "properties": {"name": name}, "required": ["name"]}
    check = {"type": "function", "function": {"name": "run_check", "parameters": params}}
    (tmp_path / "m.py").write_text("x = 1\n")

    def offered(done: tuple[ToolCall, ...]) -> list[list[str]]:
        with Workspace(tmp_path) as ws:
            schema = guided_format([check], ws, done)
        calls = [c["properties"] for c in schema["anyOf"] if "tool" in c["properties"]]
        return [c["arguments"]["properties"]["name"]["enum"] for c in calls]

    assert offered(watch.done()) == [["lint"]]
    watch.after_turn([(ToolCall("2", "edit_file", {}), True)])  # a write: each may differ now
    assert watch.wrote
    assert offered(watch.done()) == [["tests", "lint"]]


def test_lines_too_short_to_aim_at_are_not_old_texts(tmp_path: Path) -> None:
    text = "def f():\n    x = [\n        6,\n    ]\n    return x\n"
    (edit,) = _choices(tmp_path, {"m.py": text})["edit_file"]
    assert edit["old_text"]["enum"] == ["def f():", "x = [", "return x"]
    assert MIN_OLD_CHARS == 3


def test_the_answer_ends_within_the_reply_cap(tmp_path: Path) -> None:
    assert answer_limit(256, 50_000) == 256 - ANSWER_OVERHEAD
    assert answer_limit(128, 60) == 60  # the reply's character budget
    assert answer_limit(100_000, 10**6) == MAX_ANSWER_CHARS
    assert answer_limit(4, 10) == 1
    with Workspace(tmp_path) as ws:
        (only,) = guided_format([], ws, calls=False, answer_chars=240)["anyOf"]
    assert only["properties"]["answer"] == {"type": "string", "maxLength": 240}


def test_a_file_read_whole_is_neither_searched_nor_outlined(tmp_path: Path) -> None:
    files = {"calc.py": "def inclusive_sum(a):\n    return a\n", "lib.py": "import calc\n"}
    task = "fix inclusive_sum in calc.py"
    read = (ToolCall("1", "read_file", {"path": "calc.py"}),)
    choices = _choices(tmp_path, files, read, task=task)
    # "calc" still occurs in lib.py; inclusive_sum only in the file already read.
    assert choices["search_text"][0]["query"]["enum"] == ["calc"]
    assert choices["outline"][0]["path"]["enum"] == ["lib.py"]
    # A read of a range leaves both offered.
    part = (ToolCall("1", "read_file", {"path": "calc.py", "start_line": 1}),)
    choices = _choices(tmp_path, files, part, task=task)
    assert choices["search_text"][0]["query"]["enum"] == ["inclusive_sum", "calc"]
    assert choices["outline"][0]["path"]["enum"] == ["calc.py", "lib.py"]


def test_a_file_longer_than_one_read_is_read_on_from_a_line(tmp_path: Path) -> None:
    files = {"long.py": "".join(f"x{i} = {i}\n" for i in range(150)), "m.py": "x = 1\n"}
    read = (
        ToolCall("1", "read_file", {"path": "long.py"}),
        ToolCall("2", "read_file", {"path": "m.py"}),
    )
    reads = {
        c["path"]["const"]: c["required"] for c in _choices(tmp_path, files, read)["read_file"]
    }
    assert reads == {"long.py": ["path", "start_line"]}


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("new.py", True),
        ("pkg/n.md", True),
        ("write_file", False),
        ("a.pyc", False),
        ("a.py.txt", False),
        ("/x.py", False),
    ],
)
def test_a_new_file_is_of_a_kind_the_project_has(path: str, ok: bool) -> None:
    pattern = new_path(["calc.py", "docs/a.md", "Makefile", "odd.ta-r", ".hidden"])
    assert pattern == NEW_PATH[:-1] + "[.](md|py)$"
    assert bool(re.fullmatch(pattern[1:-1], path)) is ok
    assert new_path(["Makefile"]) == NEW_PATH


def test_a_newline_inside_a_guided_string_still_makes_a_call() -> None:
    # llama-cpp-python 0.3.36's grammar let a raw newline into a string (not strict JSON).
    raw = '{"tool": "write_file", "arguments": {"path": "a.py", "content": "x = 1\n"}}'
    assert "\n" in raw
    (call,) = unwrap(ChatResponse(raw)).tool_calls
    assert (call.name, call.arguments) == ("write_file", {"path": "a.py", "content": "x = 1\n"})


def test_a_fixed_file_is_read_but_never_offered_to_an_edit_or_a_write(tmp_path: Path) -> None:
    files = {"calc.py": "x = 1\n", "test_calc.py": "assert x == 1\n", "big/data.txt": "d" * 70_000}
    choices = _choices(tmp_path, files, fixed=lambda p: p.startswith("test_"))
    edits = [c["path"].get("const") or c["path"].get("enum") for c in choices["edit_file"]]
    assert edits == ["calc.py", ["big/data.txt"]]
    assert sorted(choices["write_file"][0]["path"]["anyOf"][0]["enum"]) == [
        "big/data.txt",
        "calc.py",
    ]
    reads = [c["path"].get("const") or c["path"].get("enum") for c in choices["read_file"]]
    assert "test_calc.py" in reads
    # Nothing the role may change: no edit at all, and a write only makes a new file.
    everything = _choices(tmp_path, {}, fixed=lambda p: True)
    assert "edit_file" not in everything
    assert set(everything["write_file"][0]["path"]) == {"type", "pattern"}


def test_a_one_line_edit_closes_within_the_reply_cap(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("x = 1\n")
    (tmp_path / "big.txt").write_text("d" * 70_000)
    with Workspace(tmp_path) as ws:
        schema = guided_format([TOOL_SCHEMAS["edit_file"]], ws, answer_chars=240)
    edits = {
        json.dumps(c["properties"]["arguments"]["properties"]["path"]): c["properties"][
            "arguments"
        ]["properties"]
        for c in schema["anyOf"]
        if "tool" in c["properties"]
    }
    one_line = edits[json.dumps({"type": "string", "const": "calc.py"})]
    assert one_line["new_text"]["maxLength"] == 120  # half the answer's bound
    # An edit of a file not bound to its lines may replace many lines: no bound.
    (free,) = [e for e in edits.values() if "enum" in e["path"]]
    assert "maxLength" not in free["new_text"]
