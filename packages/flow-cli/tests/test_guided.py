"""Guided tool calls through ``flow run``: each reply constrained to a call or an answer.

The fake Ollama server plays a server with constrained decoding: when a request carries a
``format`` schema, the script answers with an object that schema allows. What Flow sent is
read from the requests the server received.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

#: Each test drives whole `flow run`s against the fake model server.
pytestmark = pytest.mark.slow

FIXED = "def add(a: int, b: int) -> int:\n    return a + b  # checked\n"
PROBE = "flow-guided-probe-4f1c"


def _role(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"]).split("\n", 1)[0].removeprefix("# Role: ")


def _choices(request: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The guided schema's argument schemas by tool name ("" for the answer)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for choice in request["format"]["anyOf"]:
        props = choice["properties"]
        name = props["tool"]["const"] if "tool" in props else ""
        out.setdefault(name, []).append(props.get("arguments", props).get("properties", props))
    return out


def _old_texts(request: dict[str, Any], path: str) -> list[str]:
    """The old texts the request's schema allows an edit of ``path``."""
    edits = _choices(request)["edit_file"]
    return next(e["old_text"]["enum"] for e in edits if e["path"].get("const") == path)


def constrained(honours: bool = True, tools_win: bool = False):
    """A server that writes what the request's format allows (or ignores it; or, with
    ``tools_win``, answers with a call whenever tools are sent, as a function-call grammar
    does)."""

    def script(request: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        fmt = request.get("format") or {}
        if "probe" in fmt.get("properties", {}):
            if tools_win and request.get("tools"):
                return "", [{"name": "list_files", "arguments": {}}]
            return (json.dumps({"probe": PROBE}) if honours else "Sure! Here is JSON."), []
        role = _role(request)
        if role == "reviewer":
            return json.dumps({"approved": True, "summary": "fine", "findings": []}), []
        guided = "anyOf" in fmt
        if role == "planner":
            plan = "Plan: edit calc.py."
            return (json.dumps({"answer": plan}) if guided else plan), []
        if len(request["messages"]) > 2:
            done = "Edited calc.py."
            return (json.dumps({"answer": done}) if guided else done), []
        if not guided:
            return "", [{"name": "write_file", "arguments": {"path": "calc.py", "content": FIXED}}]
        (old,) = [t for t in _old_texts(request, "calc.py") if "a + b" in t]
        args = {"path": "calc.py", "old_text": old, "new_text": old + "  # checked"}
        return json.dumps({"tool": "edit_file", "arguments": args}), []

    return script


def _config(h, tmp_path: Path, workspace: Path, url: str, guided: str) -> Path:
    ok = [sys.executable, "-c", "import calc; assert calc.add(2, 3) == 5"]
    lint = [sys.executable, "-m", "py_compile", "calc.py"]
    checks = h.check_table("unit", ok) + h.check_table("compile", lint, kind="lint")
    extra = f'\n[ollama.options]\nguided = "{guided}"\n'
    return h.operator_config(tmp_path / "op.toml", workspace, base_url=url, checks=checks + extra)


def _run(env, h, tmp_path, workspace, fake, guided: str):
    cfg = _config(h, tmp_path, workspace, fake.url, guided)
    return env.flow("run", "add a comment to add in calc.py", "--config", str(cfg), "--trusted")


def _modes(result) -> tuple[str, str, str]:
    """The verified run's guided mode of the planner, the coder and the reviewer."""
    assert result.code == 0, result.stderr
    roles = result.json()["roles"]
    return tuple(roles[r]["guided"] for r in ("planner", "coder", "reviewer"))


def test_guided_on_constrains_each_reply_to_a_call_or_an_answer(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    (workspace / "notes.md").write_text("# Notes\n")
    fake = fake_ollama(constrained())
    result = _run(env, h, tmp_path, workspace, fake, "on")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["status"] == "verified"
    assert (workspace / "calc.py").read_text() == FIXED
    guided = {r: u["guided"] for r, u in report["roles"].items()}
    assert guided == {"planner": "on", "coder": "on", "reviewer": "off"}
    assert {r: u["stopped"] for r, u in report["roles"].items()} == dict.fromkeys(
        ("planner", "coder", "reviewer"), "answer"
    )
    first_coder, second_coder = [r for r in fake.requests if _role(r) == "coder"]
    choices = _choices(first_coder)
    # No answer before the coder's first write; no search (no task identifier is in a file);
    # no check: the first message holds the baseline's results of both.
    assert set(choices) == {"list_files", "read_file", "outline", "write_file", "edit_file"}
    assert "" in _choices(second_coder)
    # After the write the checks may run again.
    assert _choices(second_coder)["run_check"][0]["name"]["enum"] == ["unit", "compile"]
    # The guided coder's instructions; the file the task names, numbered as read_file shows
    # it, is in the first prompt.
    assert "numbered lines" in first_coder["messages"][0]["content"]
    user = first_coder["messages"][1]["content"]
    assert (
        "calc.py: lines 1-2 of 2\n1\tdef add(a: int, b: int) -> int:\n2\t    return a + b" in user
    )
    # An existing file is one of the workspace's files, read within its lines, edited at one
    # of its lines; a new file's path is any string. Each request's schema is built anew.
    reads = {c["path"]["const"]: c["start_line"]["enum"] for c in choices["read_file"]}
    assert reads == {"notes.md": [1]}
    assert not [c for c in choices["read_file"] if "start_col" in c]
    # calc.py was shown whole in the first message: no read of it is offered.
    required = {
        c["properties"]["arguments"]["properties"]["path"]["const"]: c["properties"]["arguments"][
            "required"
        ]
        for c in first_coder["format"]["anyOf"]
        if c["properties"].get("tool", {}).get("const") == "read_file"
    }
    assert required == {"notes.md": ["path"]}
    assert _old_texts(first_coder, "calc.py") == [
        "def add(a: int, b: int) -> int:",
        "return a + b",  # without indentation: the edit keeps it
    ]
    assert _old_texts(second_coder, "calc.py")[1] == "return a + b  # checked"
    assert choices["list_files"] == [{"path": {"type": "string", "enum": [""]}}]
    assert choices["write_file"][0]["path"]["anyOf"][0] == {
        "type": "string",
        "enum": ["calc.py", "notes.md"],
    }
    assert "The checks as the host ran them before any change" in user
    assert "check unit: passed\nexit code: 0" in user
    assert "check compile: passed\nexit code: 0" in user
    # The planner's read-only choices; no probe was sent under "on".
    (planner,) = [r for r in fake.requests if _role(r) == "planner"]
    assert "write_file" not in _choices(planner)
    assert not [
        r for r in fake.requests if "probe" in (r.get("format") or {}).get("properties", {})
    ]


def test_guided_auto_probes_once_and_uses_it_where_the_server_honours_it(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    fake = fake_ollama(constrained())
    assert _modes(_run(env, h, tmp_path, workspace, fake, "auto")) == ("on", "on", "off")
    probes = [r for r in fake.requests if "probe" in (r.get("format") or {}).get("properties", {})]
    assert len(probes) == 1
    assert probes[0]["options"]["num_predict"] == 32


@pytest.mark.parametrize(
    "server", [{"honours": False}, {"tools_win": True}], ids=["ignores", "tools-win"]
)
def test_guided_auto_stays_off_where_the_server_ignores_the_schema(
    env, h, tmp_path, workspace, fake_ollama, server
) -> None:
    fake = fake_ollama(constrained(**server))
    assert _modes(_run(env, h, tmp_path, workspace, fake, "auto")) == ("off", "off", "off")
    for request in fake.requests:
        assert "anyOf" not in (request.get("format") or {})


def _reader(request: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """A server that, as the coder, reads a new line of calc.py while a call is allowed, and
    answers when only the answer is."""
    role = _role(request)
    if role == "reviewer":
        return json.dumps({"approved": True, "summary": "fine", "findings": []}), []
    choices = _choices(request)
    if role == "planner" or set(choices) == {""}:
        return json.dumps({"answer": "Looked at calc.py."}), []
    turn = sum(1 for m in request["messages"] if m["role"] == "tool") + 1
    args = {"path": "calc.py", "start_line": 1, "end_line": turn}
    return json.dumps({"tool": "read_file", "arguments": args}), []


def test_a_guided_role_can_only_answer_on_its_last_turn(
    env, h, tmp_path, workspace, fake_ollama
) -> None:
    fake = fake_ollama(_reader)
    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\n# end\n")
    result = _run(env, h, tmp_path, workspace, fake, "on")
    report = result.json()
    assert report["roles"]["coder"]["stopped"] == "answer", result.stderr
    coder = [r for r in fake.requests if _role(r) == "coder"]
    assert len(coder) == 4  # max_iterations
    # Before any write no answer is offered; on the last turn nothing else is.
    assert ["" in _choices(r) for r in coder] == [False, False, False, True]
    assert set(_choices(coder[-1])) == {""}
    # An answer that ends within the reply cap (Ollama's default cap here: 1,000 characters).
    (answer,) = coder[-1]["format"]["anyOf"]
    assert answer["properties"]["answer"]["maxLength"] == 1_000
    assert [(c["name"], c["ok"]) for c in report["tool_calls"]] == [("read_file", True)] * 3


def _test_editor(request: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """A server that, as the coder, edits the first file it may edit, then answers."""
    role = _role(request)
    if role == "reviewer":
        return json.dumps({"approved": True, "summary": "fine", "findings": []}), []
    choices = _choices(request)
    if role == "planner" or "edit_file" not in choices:
        return json.dumps({"answer": "Done."}), []
    edit = choices["edit_file"][0]
    old = edit["old_text"]["enum"][0]
    args = {"path": edit["path"]["const"], "old_text": old, "new_text": old + "  # seen"}
    return json.dumps({"tool": "edit_file", "arguments": args}), []


@pytest.mark.parametrize("allowed", [False, True], ids=["tests-fixed", "test-edits-allowed"])
def test_a_guided_coder_may_change_test_files_only_where_test_edits_count(
    env, h, tmp_path, workspace, fake_ollama, allowed
) -> None:
    """With a pytest check, the evidence run puts the test files back: without
    ``--allow-test-edits`` they are shown and readable but offered to no edit or write."""
    pytest.importorskip("pytest")
    (workspace / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add() -> None:\n    assert add(2, 3) == 6\n"
    )
    fake = fake_ollama(_test_editor)
    tests = h.check_table("tests", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"])
    extra = '\n[ollama.options]\nguided = "on"\n'
    cfg = h.operator_config(
        tmp_path / "op.toml", workspace, base_url=fake.url, checks=tests + extra
    )
    args = ["--allow-test-edits"] if allowed else []
    task = "add(2, 3) must be 6 so that test_calc.py passes; fix calc.py"
    result = env.flow("run", task, "--config", str(cfg), "--trusted", *args)
    assert result.code in (0, 1), result.stderr
    first = next(r for r in fake.requests if _role(r) == "coder")
    choices = _choices(first)
    edited = {c["path"]["const"] for c in choices["edit_file"] if "const" in c["path"]}
    written = choices["write_file"][0]["path"]["anyOf"][0]["enum"]
    if allowed:
        assert edited == {"calc.py", "test_calc.py"}
        assert set(written) == {"calc.py", "test_calc.py"}
    else:
        assert edited == {"calc.py"}
        assert written == ["calc.py"]
    # Both shown whole in the first message (nothing left to read), with the baseline's
    # failing test output (no check left to run before a change).
    assert "read_file" not in choices
    user = first["messages"][1]["content"]
    assert "test_calc.py: lines 1-5 of 5" in user
    assert "check tests: failed" in user
    assert "assert 5 == 6" in user
    assert "run_check" not in choices
