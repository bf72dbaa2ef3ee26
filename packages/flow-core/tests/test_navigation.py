"""read_file windows, search_text, outline and edit errors on real files; numbering as grep -n."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from flow_core.tools._lines import line_starts, split_lines, split_lines_keepends
from flow_core.tools._outline import outline
from flow_core.tools._read import READ_LINE_CAP, READ_MAX_CHARS, read_window
from flow_core.tools._search import Query, SearchError, search
from flow_core.tools._toolbox import ToolBox, ToolLedger
from flow_safeio import Workspace

# Characters str.splitlines treats as line breaks but grep, compilers and linters do not.
ODD_BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r"]


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    root = tmp_path / "ws"
    root.mkdir()
    with Workspace(str(root)) as w:
        yield w


def box(ws: Workspace, role: str = "coder") -> ToolBox:
    return ToolBox(role=role, workspace=ws, ledger=ToolLedger(limit=1000), trusted=True)  # type: ignore[arg-type]


def rows(content: str) -> dict[int, str]:
    """Line number -> text from a read_file reply (pieces of one line joined)."""
    out: dict[int, str] = {}
    for row in content.split("\n")[1:]:
        m = re.match(r" *(\d+)\t(.*)", row, re.DOTALL)
        if m:
            out[int(m.group(1))] = out.get(int(m.group(1)), "") + m.group(2)
    return out


# --- line numbers --------------------------------------------------------------------------


def test_odd_break_characters_do_not_shift_numbers_grep_agrees(ws: Workspace) -> None:
    grep = shutil.which("grep")
    assert grep is not None
    text = "".join(f"# a{c}b line {i}\n" for i, c in enumerate(ODD_BREAKS)) + "TARGET = 1\n"
    Path(ws.root, "odd.py").write_bytes(text.encode())
    assert len(text.splitlines()) > 10  # the trap: splitlines sees more lines than there are
    got = subprocess.run(
        [grep, "-n", "TARGET", "odd.py"], cwd=ws.root, capture_output=True, check=True
    ).stdout.decode()
    grep_line = int(got.split(":", 1)[0])
    assert grep_line == len(ODD_BREAKS) + 1
    b = box(ws)
    assert b.call("search_text", {"query": "TARGET"}).content == f"odd.py:{grep_line}:1: TARGET = 1"
    read = b.call("read_file", {"path": "odd.py", "start_line": grep_line, "end_line": grep_line})
    assert rows(read.content) == {grep_line: "TARGET = 1"}
    assert f"of {grep_line} " in read.content.splitlines()[0] + " "
    out = b.call("outline", {"path": "odd.py"}).content
    assert re.search(rf"^{grep_line}-{grep_line} +var TARGET$", out, re.M), out
    two = b.call("edit_file", {"path": "odd.py", "old_text": "b line", "new_text": "x"})
    listed = re.search(r"starting at lines ([\d, ]+)", two.content)
    assert listed is not None
    assert listed.group(1).split(", ")[:3] == ["1", "2", "3"]


def test_python_compiler_agrees_on_numbers(ws: Workspace) -> None:
    # A syntax error after form feeds, \x1c and \u2028 inside a comment and a string.
    text = "# a\x0cb\x1cc\u2028d\nx = 'p\x85q'\n\ndef f(:\n    pass\n"
    Path(ws.root, "bad.py").write_bytes(text.encode())
    with pytest.raises(SyntaxError) as err:
        compile(text, "bad.py", "exec")
    hit = box(ws).call("search_text", {"query": "def f("}).content
    assert hit.startswith(f"bad.py:{err.value.lineno}:")


@given(st.text(alphabet=["a", "\n", "\r", *ODD_BREAKS[:4]], max_size=40))
@settings(max_examples=200, deadline=None)
def test_line_helpers_agree_with_split_on_newline(text: str) -> None:
    lines = split_lines(text)
    assert "".join(split_lines_keepends(text)) == text
    assert [ln.removesuffix("\n") for ln in split_lines_keepends(text)] == lines
    assert len(line_starts(text)) == len(lines)
    assert len(lines) == text.count("\n") + (0 if text.endswith("\n") or not text else 1)


# --- read_file -----------------------------------------------------------------------------


def follow(text: str, **first: int) -> tuple[dict[int, str], int]:
    """Read from the start following every hint; return what was seen and the reads made."""
    seen: dict[int, str] = {}
    args: dict[str, int] = {"start_line": 1, **first}
    for calls in range(1, 10_000):
        out = read_window("f.txt", text, **args)
        for number, piece in rows(out).items():
            seen[number] = seen.get(number, "") + piece
        m = re.search(r"start_line=(\d+)(?:, start_col=(\d+))?\]$", out)
        if m is None:
            return seen, calls
        nxt = {"start_line": int(m.group(1)), "start_col": int(m.group(2) or 1)}
        assert (nxt["start_line"], nxt["start_col"]) > (
            args["start_line"],
            args.get("start_col", 1),
        )
        args = nxt
    raise AssertionError("the hints never ended")


@given(
    st.lists(
        st.one_of(st.text(alphabet="ab\r\t\x0c\u2028", max_size=30), st.just("z" * 4500)),
        max_size=30,
    ),
    st.booleans(),
)
@settings(max_examples=60, deadline=None)
def test_hints_always_advance_and_cover_every_character(lines: list[str], final: bool) -> None:
    text = "\n".join(lines) + ("\n" if final and lines else "")
    if not split_lines(text):
        assert read_window("f.txt", text) == "f.txt: empty file (0 lines)"
        return
    seen, _ = follow(text)
    assert seen == {i: ln.removesuffix("\r") for i, ln in enumerate(split_lines(text), 1)}


def test_one_long_line_is_read_to_its_end_in_pieces() -> None:
    bundle = "".join(f"var v{i}=function(){{return {i}}};" for i in range(3000))
    assert len(bundle) > 60_000
    seen, calls = follow(bundle)
    assert seen == {1: bundle}
    assert calls == -(-len(bundle) // READ_LINE_CAP)
    second = read_window("b.js", bundle, start_col=READ_LINE_CAP + 1)
    assert f"columns {READ_LINE_CAP + 1}-{2 * READ_LINE_CAP} of {len(bundle)}" in second


def test_window_sizes_and_ranges(ws: Workspace) -> None:
    text = "".join(f"line {i} " + "x" * 60 + "\n" for i in range(1, 1001))
    Path(ws.root, "big.py").write_text(text)
    b = box(ws)
    first = b.call("read_file", {"path": "big.py"}).content
    head, *_ = first.splitlines()
    assert head.startswith("big.py: lines 1-")
    assert head.endswith(" of 1000")
    assert sum(len(v) for v in rows(first).values()) <= READ_MAX_CHARS
    ranged = b.call("read_file", {"path": "big.py", "start_line": 500, "end_line": 502}).content
    assert list(rows(ranged)) == [500, 501, 502]
    assert ranged.endswith("start_line=503]")
    assert len(ranged) < 400  # a targeted read costs what it shows
    tail = b.call("read_file", {"path": "big.py", "start_line": 999, "end_line": 5000}).content
    assert list(rows(tail)) == [999, 1000]
    assert "more:" not in tail


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"start_line": 11}, "past the end: s.py has 10 lines"),
        ({"start_line": 5, "end_line": 4}, "before start_line"),
        ({"start_line": 0}, ">= 1"),
        ({"start_line": 2, "start_col": 50}, "past the end of line 2"),
        ({"start_line": "3"}, "must be an integer"),
    ],
)
def test_read_range_errors(ws: Workspace, args: dict[str, Any], needle: str) -> None:
    Path(ws.root, "s.py").write_text("x\n" * 10)
    out = box(ws).call("read_file", {"path": "s.py", **args})
    assert (out.ok, out.error) == (False, "tool_invalid_arguments")
    assert needle in out.content


# --- search_text ---------------------------------------------------------------------------


def test_regex_context_and_case(ws: Workspace) -> None:
    Path(ws.root, "m.py").write_text("import os\n\ndef alpha():\n    return 1\n\ndef Beta():\n")
    b = box(ws)
    out = b.call("search_text", {"query": r"^def \w+", "regex": True, "context": 1}).content
    assert out.splitlines() == [
        "m.py-2- ",
        "m.py:3:1: def alpha():",
        "m.py-4-     return 1",
        "m.py-5- ",
        "m.py:6:1: def Beta():",
    ]
    assert b.call("search_text", {"query": "beta"}).content == "(no matches)"
    assert b.call("search_text", {"query": "beta", "ignore_case": True}).content.startswith(
        "m.py:6:5:"
    )
    assert (
        b.call("search_text", {"query": "alpha()"}).content == "m.py:3:5: def alpha():"
    )  # literal


def test_match_deep_in_a_long_line_is_shown_with_its_column(ws: Workspace) -> None:
    line = "a" * 40_000 + "NEEDLE" + "b" * 20_000
    Path(ws.root, "min.js").write_text(line + "\n")
    out = box(ws).call("search_text", {"query": "NEEDLE"}).content
    assert out.startswith("min.js:1:40001: …")
    assert "NEEDLE" in out
    assert out.endswith("…")
    assert len(out) < 400


def test_bad_regex_and_catastrophic_regex_are_bounded(tmp_path: Path) -> None:
    files = {"evil.txt": ("a" * 40 + "!\n").encode()}
    with pytest.raises(SearchError) as bad:
        search(files, files.__getitem__, Query("(a|b", regex=True))
    assert bad.value.code == "search_bad_regex"
    with pytest.raises(SearchError) as slow:
        search(files, files.__getitem__, Query("(a+)+$", regex=True), timeout_s=0.5)
    assert slow.value.code == "search_timeout"
    # Negative control: the same pattern on short input finishes in the child.
    short = {"ok.txt": b"aaa\n"}
    assert search(short, short.__getitem__, Query("(a+)+$", regex=True)) == "ok.txt:1:1: aaa"


def test_search_skips_binary_and_caps_matches(ws: Workspace) -> None:
    Path(ws.root, "bin.dat").write_bytes(b"\0hit\n")
    Path(ws.root, "t.txt").write_text("hit\n" * 80)
    out = box(ws).call("search_text", {"query": "hit"}).content
    assert "bin.dat" not in out
    assert out.count("t.txt:") == 50
    assert "stopped at 50 matches" in out


# --- outline -------------------------------------------------------------------------------


def test_outline_python(ws: Workspace) -> None:
    Path(ws.root, "p.py").write_text(
        "X = 1\n\nclass A:\n    @property\n    def f(self) -> int:\n        return 1\n\n"
        "    async def g(self, *a):\n        pass\n\n\ndef h(x, y=2):\n    return x\n"
    )
    out = box(ws, "planner").call("outline", {"path": "p.py"}).content
    assert out.splitlines()[1:6] == [
        " 1-1  var X",
        " 3-9  class A",
        " 4-6    def f(self) -> int",
        " 8-9    async def g(self, *a)",
        "12-13 def h(x, y=2)",
    ]


def test_outline_falls_back_for_broken_python_and_other_languages(ws: Workspace) -> None:
    Path(ws.root, "b.py").write_text("def ok():\n    pass\n\ndef broken(:\n    pass\n")
    js = (
        "export function a(x) {\n  return x;\n}\n\nclass B {\n  m() {}\n}\n"
        "const c = (y) => {\n  y;\n};\n"
    )
    Path(ws.root, "m.js").write_text(js)
    Path(ws.root, "r.md").write_text("# T\n\ntext\n\n## S\n\nmore\n\n# U\n")
    Path(ws.root, "g.go").write_text("package m\n\nfunc (s *S) Run() error {\n\treturn nil\n}\n")
    b = box(ws)
    assert (
        "regex (the file does not parse as Python)" in b.call("outline", {"path": "b.py"}).content
    )
    assert "1-2 def ok" in b.call("outline", {"path": "b.py"}).content
    out = b.call("outline", {"path": "m.js"}).content
    assert " 1-3  function a" in out
    assert " 5-7  class B" in out
    assert " 8-10 const c" in out
    md = b.call("outline", {"path": "r.md"}).content
    assert "1-8 # T" in md
    assert "5-8   ## S" in md
    assert "9-9 # U" in md
    assert "3-5 func Run" in b.call("outline", {"path": "g.go"}).content


@given(st.text(max_size=300), st.sampled_from(["a.py", "a.js", "a.md", "a.rb", "a", "a.go"]))
@settings(max_examples=150, deadline=None)
def test_outline_never_raises_and_ranges_are_inside_the_file(text: str, name: str) -> None:
    defs, _ = outline(text, name)
    total = len(split_lines(text))
    for d in defs:
        assert 1 <= d.start <= d.end <= max(total, 1)


# --- edit_file errors ----------------------------------------------------------------------


def test_ambiguous_edit_names_every_match_line(ws: Workspace) -> None:
    Path(ws.root, "f.py").write_text("a = 1\nb = 2\na = 1\n\n\na = 1\n")
    out = box(ws).call("edit_file", {"path": "f.py", "old_text": "a = 1", "new_text": "a = 2"})
    assert out.error == "edit_ambiguous"
    assert "3 times" in out.content
    assert "lines 1, 3, 6" in out.content
    assert Path(ws.root, "f.py").read_text() == "a = 1\nb = 2\na = 1\n\n\na = 1\n"


def test_missed_edit_names_the_closest_line(ws: Workspace) -> None:
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(30))
    Path(ws.root, "g.py").write_text(body)
    b = box(ws)
    out = b.call(
        "edit_file",
        {"path": "g.py", "old_text": "def f17(x):\n  return x + 17\n", "new_text": "y"},
    )
    assert out.error == "edit_no_match"
    assert "closest line is 52" in out.content
    assert "52\tdef f17(x):\n53\t    return x + 17" in out.content
    assert "only in whitespace" in out.content
    nothing = b.call("edit_file", {"path": "g.py", "old_text": "zzzzqqqq", "new_text": "y"})
    assert "No line resembles" in nothing.content


def test_diff_hunk_headers_number_lines_as_git_does(tmp_path: Path) -> None:
    from flow_core.run._changes import unified_diff

    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    old = "".join(f"# a{c}b {i}\n" for i, c in enumerate(ODD_BREAKS)) + "x = 1\ny = 2\n"
    new = old.replace("x = 1", "x = 2")
    (tmp_path / "old.py").write_bytes(old.encode())
    (tmp_path / "new.py").write_bytes(new.encode())
    got = subprocess.run(
        [git, "diff", "--no-index", "--no-color", "-U3", "old.py", "new.py"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
    ).stdout.decode()
    theirs = [ln for ln in got.split("\n") if ln.startswith("@@")]
    ours = [
        ln
        for ln in unified_diff("f.py", old.encode(), new.encode()).split("\n")
        if ln.startswith("@@")
    ]
    assert ours == [h.split(" @@")[0] + " @@" for h in theirs]
    assert ours == [f"@@ -{len(ODD_BREAKS) - 2},5 +{len(ODD_BREAKS) - 2},5 @@"]


# --- hostile files: shapes that once took quadratic time ------------------------------------

HOSTILE = 250_000


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("a.js", "function f() {\n" * (HOSTILE // 15)),
        ("b.js", "".join(" " * i + f"function f{i}() {{\n" for i in range(400)) + "x;\n" * 80_000),
        ("c.rb", "".join(" " * i + f"def f{i}\n" for i in range(400)) + "  x\n" * 60_000),
        ("d.md", "# h\n" * (HOSTILE // 4)),
        ("e.py", "x = " + "(" * 50_000 + ")" * 50_000),
    ],
    ids=["unclosed", "nested", "ruby", "headings", "deep-python"],
)
def test_outline_of_hostile_files_is_linear(name: str, text: str) -> None:
    defs, _ = outline(text, name)
    assert len(defs) <= 400


def test_python_outline_ignores_syntax_warnings() -> None:
    # Run under -W error (the suite's filterwarnings): "\d" would otherwise turn into an error
    # and push a valid file to the fallback.
    defs, how = outline("import re\nRX = re.compile('\\d+')\n\ndef f():\n    pass\n", "w.py")
    assert how == "python ast"
    assert [d.name for d in defs] == ["RX", "f"]


def test_edit_on_hostile_lines_stays_fast_and_bounded(ws: Workspace) -> None:
    minified = "".join(f"v{i}=f({i});" for i in range(3000))
    Path(ws.root, "h.txt").write_text(("a" * 399 + "\n") * 500 + minified + "\n")
    out = box(ws).call("edit_file", {"path": "h.txt", "old_text": "a" * 398 + "b", "new_text": ""})
    assert out.error == "edit_no_match"
    near = minified[:150] + "X"
    long = box(ws).call("edit_file", {"path": "h.txt", "old_text": near, "new_text": ""})
    assert f"501\t{minified[:300]}… [{len(minified)} chars" in long.content
    assert len(long.content) < 2_000


def test_report_keeps_a_capped_message(ws: Workspace) -> None:
    ledger = ToolLedger(limit=10)
    b = ToolBox(role="coder", workspace=ws, ledger=ledger, trusted=True)
    Path(ws.root, "m.txt").write_text("".join(f"line {i} " + "q" * 250 + "\n" for i in range(40)))
    b.call(
        "edit_file",
        {"path": "m.txt", "old_text": "line 3 " + "q" * 249 + "p\nx\ny\nz", "new_text": ""},
    )
    (record,) = ledger.records
    assert record.error == "edit_no_match"
    assert record.message is not None
    assert len(record.message) <= 530
    assert " chars] …" in record.message
    assert record.message.endswith("Copy old_text from these lines exactly.")


def test_search_path_may_name_one_file(ws: Workspace) -> None:
    Path(ws.root, "src").mkdir()
    Path(ws.root, "src", "a.py").write_text("x = 1\ny = 2\n")
    Path(ws.root, "src", "b.py").write_text("y = 3\n")
    b = box(ws)
    assert (
        b.call("search_text", {"query": "y", "path": "src/a.py"}).content == "src/a.py:2:1: y = 2"
    )
    missing = b.call("search_text", {"query": "y", "path": "src/a.py/z"})
    assert missing.error == "not_directory"
