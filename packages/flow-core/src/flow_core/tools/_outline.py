"""``outline``: the definitions of one file with their line ranges.

Python is read with ``ast`` (classes, functions and methods with their signatures, module
constants); a file ``ast`` cannot parse, and every other language, goes through a plain
line-based fallback: one regular expression per language family for the lines that start a
definition, and the end taken from the matching closing brace (brace languages), the next
heading of the same or a higher level (Markdown), or the line before the next definition at
the same or a lower indentation. Line numbers follow ``flow_core.tools._lines`` (``grep -n``).
The fallback patterns are anchored at the line start and have no nested repetition, so each
line costs linear time.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass

from flow_core.tools._lines import split_lines

__all__ = ["MAX_OUTLINE_ENTRIES", "Definition", "outline", "render_outline"]

#: Most definitions listed for one file.
MAX_OUTLINE_ENTRIES = 400
_MAX_SIGNATURE = 160


@dataclass(frozen=True, slots=True)
class Definition:
    """One definition: ``kind`` (class, def, const, ...), name, 1-based inclusive lines."""

    kind: str
    name: str
    start: int
    end: int
    depth: int = 0
    signature: str = ""


# -- Python ------------------------------------------------------------------------------------


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    try:
        text = f"({ast.unparse(node.args)})"
        if node.returns is not None:
            text += f" -> {ast.unparse(node.returns)}"
    except (ValueError, RecursionError):  # pragma: no cover - unparse of a parsed tree
        return "(...)"
    return text if len(text) <= _MAX_SIGNATURE else text[: _MAX_SIGNATURE - 1] + "…"


def _python_defs(body: list[ast.stmt], depth: int, out: list[Definition]) -> None:
    for node in body:
        if len(out) >= MAX_OUTLINE_ENTRIES:
            return
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        end = node.end_lineno or node.lineno
        if isinstance(node, ast.ClassDef):
            out.append(Definition("class", node.name, start, end, depth))
            _python_defs(node.body, depth + 1, out)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            kind = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
            out.append(Definition(kind, node.name, start, end, depth, _signature(node)))
        elif depth == 0 and isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    out.append(Definition("var", t.id, start, end, depth))


def _python(text: str) -> list[Definition] | None:
    # The compiler also breaks lines at a lone "\r"; blanking every "\r" keeps its numbers
    # equal to grep's ("\n" only). A file that then fails to parse uses the fallback.
    try:
        with warnings.catch_warnings():  # e.g. SyntaxWarning for "\\d": not ours to report
            warnings.simplefilter("ignore")
            tree = ast.parse(text.replace("\r", " "), type_comments=False)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    out: list[Definition] = []
    _python_defs(tree.body, 0, out)
    return out


# -- the line-based fallback -------------------------------------------------------------------

_IDENT = r"[A-Za-z_$][\w$]*"
_BRACE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # JavaScript / TypeScript
    (
        "function",
        re.compile(rf"\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\*?\s*({_IDENT})"),
    ),
    ("class", re.compile(rf"\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+({_IDENT})")),
    ("interface", re.compile(rf"\s*(?:export\s+)?(?:interface|enum|type)\s+({_IDENT})")),
    (
        "const",
        re.compile(
            rf"\s*(?:export\s+)?(?:const|let|var)\s+({_IDENT})\s*=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|{_IDENT}\s*=>)"
        ),
    ),
    # Go
    ("func", re.compile(rf"func\s+(?:\([^)]*\)\s*)?({_IDENT})")),
    ("type", re.compile(rf"type\s+({_IDENT})\s+(?:struct|interface)")),
    # Rust
    (
        "fn",
        re.compile(rf"\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+|async\s+|unsafe\s+)*fn\s+({_IDENT})"),
    ),
    (
        "type",
        re.compile(rf"\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait|mod|union)\s+({_IDENT})"),
    ),
    ("impl", re.compile(r"\s*impl(?:<[^>]*>)?\s+([^{]+?)\s*(?:\{|$)")),
    # Java, C#, Kotlin, C++, PHP classes
    (
        "class",
        re.compile(
            rf"\s*(?:(?:public|private|protected|internal|static|final|sealed|abstract|partial|data|open)\s+)*(?:class|interface|enum|record|struct|object|namespace|trait)\s+({_IDENT})"
        ),
    ),
    # C-family functions and methods: "type name(args) {" at the start of a line
    ("function", re.compile(rf"(?:[\w:<>,*&\[\]]+\s+)+\**&?({_IDENT}(?:::{_IDENT})*)\s*\([^;]*$")),
)
_INDENT_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Ruby, Elixir, shell, Lua, Python-like
    ("def", re.compile(rf"\s*(?:def|defp|fn|func|function|sub|proc)\s+((?:self\.)?{_IDENT}[?!]?)")),
    ("class", re.compile(rf"\s*(?:class|module|defmodule)\s+({_IDENT}(?:(?:::|\.){_IDENT})*)")),
    ("function", re.compile(rf"\s*({_IDENT})\s*\(\)\s*\{{?\s*$")),
)
_HEADING = re.compile(r"(#{1,6})\s+(\S.*?)\s*#*\s*$")
_BRACE_EXTS = frozenset(
    [
        "js",
        "jsx",
        "mjs",
        "cjs",
        "ts",
        "tsx",
        "mts",
        "cts",
        "go",
        "rs",
        "java",
        "kt",
        "kts",
        "scala",
        "cs",
        "c",
        "h",
        "cc",
        "cpp",
        "cxx",
        "hpp",
        "hh",
        "swift",
        "php",
        "dart",
    ]
)
_NOT_DEFINITIONS = (
    "//",
    "/*",
    "*",
    "#",
    "return ",
    "else",
    "if ",
    "for ",
    "while ",
    "switch ",
    "}",
)
_MAX_SCAN_LINES = 20_000
_LINE_SCAN_CAP = 400


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _brace_closers(lines: list[str]) -> tuple[dict[int, int], dict[int, int]]:
    """One pass over the braces: the lines holding a ``{`` (with the depth of their first
    one) and, for each, the line of the ``}`` that closes that first ``{`` (0-based)."""
    stack: list[int] = []
    first_depth: dict[int, int] = {}
    closes: dict[int, int] = {}
    for i, line in enumerate(lines[:_MAX_SCAN_LINES]):
        for ch in line[: _LINE_SCAN_CAP * 10]:
            if ch == "{":
                first_depth.setdefault(i, len(stack))
                stack.append(i)
            elif ch == "}" and stack:
                opened = stack.pop()
                if first_depth[opened] == len(stack):
                    closes.setdefault(opened, i)
    return first_depth, closes


def _brace_ends(lines: list[str], starts: list[int]) -> list[int]:
    """The 1-based last line of each definition: its first brace's closer (brace languages)."""
    first_depth, closes = _brace_closers(lines)
    scanned = min(len(lines), _MAX_SCAN_LINES)
    ends: list[int] = []
    for i in starts:
        opener = next((k for k in range(i, min(i + 3, scanned)) if k in first_depth), None)
        if opener is None:  # a declaration without a body
            ends.append(i + 1)
        else:
            ends.append(closes.get(opener, scanned - 1) + 1)
    return ends


def _indent_ends(lines: list[str], starts: list[int]) -> list[int]:
    """The 1-based last line of each definition: the last non-blank line before the next line
    indented no deeper than the definition (``end``, ``}`` and ``)`` lines stay inside)."""
    ends = [0] * len(starts)
    is_start = {line: k for k, line in enumerate(starts)}
    stack: list[tuple[int, int]] = []  # (indent, index into starts)
    last = 0
    for j, line in enumerate(lines):
        body = line.strip()
        if not body:
            continue
        ind = _indent(line)
        if not body.startswith(("end", "}", ")")):
            while stack and ind <= stack[-1][0]:
                ends[stack.pop()[1]] = last + 1
        k = is_start.get(j)
        if k is not None:
            stack.append((ind, k))
        last = j
    for _, k in stack:
        ends[k] = last + 1
    return ends


def _headings(lines: list[str]) -> list[Definition]:
    """Markdown headings, each running to the line before the next heading of its level or
    a higher one."""
    out: list[Definition] = []
    open_: list[int] = []  # indexes into out, by rising level
    for i, line in enumerate(lines[:_MAX_SCAN_LINES]):
        m = _HEADING.match(line[:_LINE_SCAN_CAP])
        if not m:
            continue
        level = len(m.group(1))
        while open_ and len(out[open_[-1]].kind) >= level:
            k = open_.pop()
            d = out[k]
            out[k] = Definition(d.kind, d.name, d.start, i, d.depth)
        if len(out) >= MAX_OUTLINE_ENTRIES:
            break
        out.append(Definition("#" * level, m.group(2), i + 1, len(lines), level - 1))
        open_.append(len(out) - 1)
    return out


def _fallback(text: str, ext: str) -> list[Definition]:
    lines = split_lines(text)
    if ext in ("md", "markdown", "rst"):
        return _headings(lines)
    brace = ext in _BRACE_EXTS
    rules = _BRACE_RULES if brace else _INDENT_RULES
    starts: list[tuple[int, str, str]] = []
    for i, line in enumerate(lines[:_MAX_SCAN_LINES]):
        head = line[:_LINE_SCAN_CAP]
        stripped = head.lstrip()
        if not stripped or stripped.startswith(_NOT_DEFINITIONS):
            continue
        for kind, rx in rules:
            m = rx.match(head)
            if m:
                starts.append((i, kind, m.group(1).strip()))
                break
        if len(starts) >= MAX_OUTLINE_ENTRIES:
            break
    firsts = [i for i, _, _ in starts]
    ends = _brace_ends(lines, firsts) if brace else _indent_ends(lines, firsts)
    levels = sorted({_indent(lines[i]) for i in firsts})
    return [
        Definition(kind, name, i + 1, max(i + 1, end), levels.index(_indent(lines[i])))
        for (i, kind, name), end in zip(starts, ends, strict=True)
    ]


def outline(text: str, path: str) -> tuple[list[Definition], str]:
    """The definitions of ``text`` and how they were found (``"python ast"`` or ``"regex"``)."""
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    if ext in ("py", "pyi", "pyw"):
        found = _python(text)
        if found is not None:
            return found, "python ast"
        return _fallback(text, "py"), "regex (the file does not parse as Python)"
    return _fallback(text, ext), "regex"


def render_outline(rel: str, text: str) -> str:
    """``outline``'s reply: a header with the line count, one row per definition."""
    defs, how = outline(text, rel)
    total = len(split_lines(text))
    head = f"{rel}: {total} lines; {len(defs)} definitions ({how})"
    if not defs:
        return head + "\n(no definitions found; use read_file with start_line/end_line)"
    width = len(str(total))
    rows = [
        f"{d.start:>{width}}-{d.end:<{width}} {'  ' * d.depth}{d.kind} {d.name}{d.signature}"
        for d in defs
    ]
    if len(defs) >= MAX_OUTLINE_ENTRIES:
        rows.append(f"[capped at {MAX_OUTLINE_ENTRIES} definitions]")
    rows.append("[read one with read_file start_line=FIRST end_line=LAST]")
    return "\n".join([head, *rows])
