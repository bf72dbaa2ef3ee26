"""File tools, role sets, ids/records, the editor route: real files under tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_core import (
    EDITOR_TOOL_NAMES,
    FILE_TOOL_NAMES,
    READ_ONLY_TOOL_NAMES,
    CheckResult,
)
from flow_core.tools import MAX_TOOL_OUTPUT_CHARS, ToolBox, ToolHost, ToolLedger
from flow_safeio import Workspace
from flow_testing.editors import RecordingEditor, tool_schema


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    root = tmp_path / "ws"
    root.mkdir()
    with Workspace(str(root), protected=("flow.toml",)) as w:
        yield w


def box(
    ws: Workspace,
    role: str = "coder",
    *,
    trusted: bool = True,
    ledger: ToolLedger | None = None,
    cycle: int | None = None,
    **host: Any,
) -> ToolBox:
    return ToolBox(
        role=role,  # type: ignore[arg-type]
        workspace=ws,
        trusted=trusted,
        ledger=ledger or ToolLedger(limit=100),
        host=ToolHost(**host),
        cycle=cycle,
    )


def test_role_sets() -> None:
    assert set(READ_ONLY_TOOL_NAMES) < set(FILE_TOOL_NAMES)
    assert "delete_file" not in FILE_TOOL_NAMES


def test_planner_and_reviewer_are_read_only(ws: Workspace) -> None:
    for role in ("planner", "reviewer"):
        b = box(ws, role, check_names=["tests"], run_check=lambda n: None)  # type: ignore[arg-type,return-value]
        assert b.names == set(READ_ONLY_TOOL_NAMES)
        assert {s["function"]["name"] for s in b.schemas} == b.names


def test_coder_adds_writes_and_run_check(ws: Workspace) -> None:
    b = box(ws, check_names=["tests"], run_check=lambda n: None)  # type: ignore[arg-type,return-value]
    assert b.names == {*FILE_TOOL_NAMES, "run_check"}
    (schema,) = [s for s in b.schemas if s["function"]["name"] == "run_check"]
    assert schema["function"]["parameters"]["properties"]["name"]["enum"] == ["tests"]


def test_untrusted_coder_gets_no_write_tool(ws: Workspace) -> None:
    assert box(ws, trusted=False).names == set(READ_ONLY_TOOL_NAMES)


def test_ids_and_records(ws: Workspace) -> None:
    ledger = ToolLedger(limit=10)
    b = box(ws, ledger=ledger, cycle=2)
    first = b.call("write_file", {"path": "a.txt", "content": "hi"})
    second = b.call("read_file", {"path": "missing.txt"})
    third = b.call("delete_file", {"path": "a.txt"})
    assert (first.id, second.id, third.id) == ("tc-0001", "tc-0002", "tc-0003")
    assert [(r.id, r.name, r.ok, r.error, r.cycle) for r in ledger.records] == [
        ("tc-0001", "write_file", True, None, 2),
        ("tc-0002", "read_file", False, "not_found", 2),
        ("tc-0003", "delete_file", False, "tool_unknown", 2),
    ]
    assert "error (not_found)" in second.content


def test_read_write_round_trip_and_listing(ws: Workspace) -> None:
    b = box(ws)
    assert b.call("write_file", {"path": "src/m.py", "content": "x = 1\n"}).ok
    assert b.call("read_file", {"path": "src/m.py"}).content == "src/m.py: lines 1-1 of 1\n1\tx = 1"
    assert b.call("list_files", {}).content == "src/m.py"
    assert b.call("list_files", {"path": "src"}).content == "src/m.py"


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../x", "path_escape"),
        ("/etc/passwd", "path_escape"),
        (".git/config", "git_path"),
        ("a\\b", "invalid_path"),
        ("flow.toml", "protected"),
    ],
)
def test_bad_paths_are_refused(ws: Workspace, path: str, code: str) -> None:
    out = box(ws).call("write_file", {"path": path, "content": "x"})
    assert not out.ok
    assert out.error is not None
    assert code.split("_", maxsplit=1)[0] in out.error


def test_symlink_is_refused(ws: Workspace, tmp_path: Path) -> None:
    (tmp_path / "outside").write_text("secret")
    Path(ws.root, "link").symlink_to(tmp_path / "outside")
    out = box(ws).call("read_file", {"path": "link"})
    assert not out.ok
    assert "secret" not in out.content


def test_edit_requires_exactly_one_exact_match(ws: Workspace) -> None:
    b = box(ws)
    b.call("write_file", {"path": "f.py", "content": "a = 1\na = 1\nb = 2\n"})
    none = b.call("edit_file", {"path": "f.py", "old_text": "c = 3", "new_text": "c = 4"})
    assert (none.ok, none.error) == (False, "edit_no_match")
    assert "0 matches" in none.content
    two = b.call("edit_file", {"path": "f.py", "old_text": "a = 1", "new_text": "a = 2"})
    assert (two.ok, two.error) == (False, "edit_ambiguous")
    assert "2 times" in two.content
    fuzzy = b.call("edit_file", {"path": "f.py", "old_text": "b=2", "new_text": "b = 3"})
    assert fuzzy.error == "edit_no_match"
    one = b.call("edit_file", {"path": "f.py", "old_text": "b = 2", "new_text": "b = 3"})
    assert one.ok
    assert Path(ws.root, "f.py").read_text() == "a = 1\na = 1\nb = 3\n"


def test_edit_preserves_crlf_and_non_ascii_exactly(ws: Workspace) -> None:
    original = "ünïcode = '日本'\r\nkeep = 1\r\nlast\n".encode()
    Path(ws.root, "w.py").write_bytes(original)
    b = box(ws)
    out = b.call(
        "edit_file", {"path": "w.py", "old_text": "keep = 1\r\n", "new_text": "keep = 2\r\n"}
    )
    assert out.ok, out.content
    assert Path(ws.root, "w.py").read_bytes() == original.replace(b"keep = 1", b"keep = 2")
    # A LF-only search does not match CRLF content: no newline translation, no fuzzy fallback.
    lf = b.call("edit_file", {"path": "w.py", "old_text": "keep = 2\nlast", "new_text": "x"})
    assert lf.error == "edit_no_match"
    shown = b.call("read_file", {"path": "w.py"}).content.splitlines()
    assert (
        shown[0]
        == "w.py: lines 1-3 of 3 (CRLF line endings: each shown line ends with \\r\\n in the file)"
    )
    assert shown[1] == "1\tünïcode = '日本'"
    assert "CRLF" in lf.content  # the no-match error says why


def test_search_is_literal_bounded_and_prefixed(ws: Workspace) -> None:
    b = box(ws)
    b.call("write_file", {"path": "a/x.py", "content": "foo.bar\nfooXbar\n"})
    b.call("write_file", {"path": "b/y.py", "content": "foo.bar\n"})
    out = b.call("search_text", {"query": "foo.bar"}).content
    assert out.splitlines() == ["a/x.py:1:1: foo.bar", "b/y.py:1:1: foo.bar"]
    assert b.call("search_text", {"query": "foo.bar", "path": "b"}).content == "b/y.py:1:1: foo.bar"
    capped = b.call("search_text", {"query": "foo", "max_matches": 1}).content
    assert capped.splitlines()[0] == "a/x.py:1:1: foo.bar"
    assert "stopped at 1" in capped


def test_tool_output_is_capped(ws: Workspace) -> None:
    Path(ws.root, "big.txt").write_text("line\n" * 20_000)
    out = box(ws).call("read_file", {"path": "big.txt"})
    assert out.ok
    assert len(out.content) < MAX_TOOL_OUTPUT_CHARS + 200
    assert "start_line=101" in out.content
    more = box(ws).call("read_file", {"path": "big.txt", "start_line": 19_999})
    assert more.content == "big.txt: lines 19999-20000 of 20000\n19999\tline\n20000\tline"


def test_write_over_size_limit_is_refused(ws: Workspace) -> None:
    out = box(ws).call("write_file", {"path": "x.txt", "content": "x" * (ws.max_bytes + 1)})
    assert (out.ok, out.error) == (False, "too_large")
    assert not Path(ws.root, "x.txt").exists()


def test_invalid_arguments(ws: Workspace) -> None:
    out = box(ws).call("read_file", {"path": 3})
    assert out.error == "tool_invalid_arguments"


def test_run_check_only_configured_names(ws: Workspace) -> None:
    ran: list[str] = []

    def runner(name: str) -> CheckResult:
        ran.append(name)
        return CheckResult(
            name=name, kind="test", required=True, argv=["x"], status="failed", exit_code=1
        )

    b = box(ws, check_names=["tests"], run_check=runner)
    bad = b.call("run_check", {"name": "rm -rf /"})
    assert bad.error == "check_unknown"
    assert ran == []
    res = b.call("run_check", {"name": "tests"})
    assert ran == ["tests"]
    assert res.check is not None
    assert not res.ok
    assert "check tests: failed" in res.content


def test_before_write_sees_every_path_first(ws: Workspace) -> None:
    seen: list[str] = []
    b = box(ws, before_write=seen.append)
    b.call("write_file", {"path": "a.txt", "content": "1"})
    b.call("edit_file", {"path": "a.txt", "old_text": "1", "new_text": "2"})
    assert seen == ["a.txt", "a.txt"]


def _editor(*, fail: bool = False) -> RecordingEditor:
    """An editor holding ``e.py`` in memory that offers every editor tool and one more."""
    schemas = [
        tool_schema(n, read_only=n not in ("editor_lint", "editor_check"))
        for n in (*EDITOR_TOOL_NAMES, "editor_exec")
    ]
    return RecordingEditor(files={"e.py": "x = 1\r\n"}, schemas=schemas, fail=fail)


def test_editor_tools_by_role(ws: Workspace) -> None:
    ed = _editor()
    schemas = ed.tool_schemas()
    planner = box(ws, "planner", editor=ed, editor_schemas=schemas)
    coder = box(ws, "coder", editor=ed, editor_schemas=schemas)
    assert "editor_lint" not in planner.names
    assert "editor_check" not in planner.names
    assert "editor_context" in planner.names
    assert {"editor_lint", "editor_check"} <= coder.names
    assert "editor_exec" not in coder.names  # not on the allowlist


def test_file_io_goes_through_the_editor_and_never_falls_back(ws: Workspace) -> None:
    Path(ws.root, "e.py").write_text("on disk\n")
    ed = _editor()
    b = box(ws, editor=ed, editor_schemas=ed.tool_schemas())
    assert b.call("read_file", {"path": "e.py"}).content.splitlines()[1] == "1\tx = 1"
    assert b.call("edit_file", {"path": "e.py", "old_text": "1", "new_text": "2"}).ok
    assert ed.files["e.py"] == "x = 2\r\n"
    assert Path(ws.root, "e.py").read_text() == "on disk\n"  # the bridge owns the write
    # Flow's own validation runs before the editor is asked.
    ed.calls.clear()
    assert b.call("write_file", {"path": "../x", "content": "y"}).error == "path_outside"
    assert b.call("write_file", {"path": "flow.toml", "content": "y"}).error == "protected"
    # flow-safeio's rule, case folding included (a case-insensitive disk is the same file)
    assert b.call("write_file", {"path": "FLOW.toml", "content": "y"}).error == "protected"
    assert ed.calls == []
    broken = _editor(fail=True)
    b2 = box(ws, editor=broken, editor_schemas=broken.tool_schemas())
    out = b2.call("write_file", {"path": "e.py", "content": "new"})
    assert (out.ok, out.error) == (False, "editor_error")
    assert Path(ws.root, "e.py").read_text() == "on disk\n"
    assert b2.call("read_file", {"path": "e.py"}).error == "editor_error"


@pytest.mark.parametrize(
    "path",
    [
        ".venv/lib/python3.11/site-packages/sitecustomize.py",
        "node_modules/.bin/jest",
        "pkg/__pycache__/x.pyc",
        "BUILD/out.txt",
    ],
)
def test_generated_and_environment_folders_are_never_written(ws: Workspace, path: str) -> None:
    b = box(ws)
    out = b.call("write_file", {"path": path, "content": "import os; os._exit(0)\n"})
    assert (out.ok, out.error) == (False, "generated_path")
    assert not Path(ws.root, path.split("/", maxsplit=1)[0]).exists()


def test_a_generated_folder_is_neither_listed_nor_written_in_any_spelling(ws: Workspace) -> None:
    # The listing the model sees and the write refusal come from one flow-safeio rule.
    root = Path(ws.root)
    for rel in ("Node_Modules/a.js", "myenv/lib/site.py", "src/ok.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("before\n")
    (root / "myenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    b = box(ws)
    listed = b.call("list_files", {}).content.splitlines()
    assert "src/ok.py" in listed
    assert not [p for p in listed if p.startswith(("Node_Modules", "myenv"))]
    for rel in ("Node_Modules/a.js", "myenv/lib/site.py"):
        out = b.call("write_file", {"path": rel, "content": "after\n"})
        assert (out.ok, out.error) == (False, "generated_path")
        assert (root / rel).read_text() == "before\n"
    assert b.call("write_file", {"path": "src/ok.py", "content": "after\n"}).ok
