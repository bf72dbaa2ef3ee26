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
_MAX_SCAN_LINES = 20_000
_LINE_SCAN_CAP = 400


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _brace_end(lines: list[str], start: int) -> int:
    """The line of the ``}`` closing the first ``{`` at or after ``start`` (0-based index)."""
    depth = 0
    opened = False
    for i in range(start, min(len(lines), start + _MAX_SCAN_LINES)):
        for ch in lines[i][: _LINE_SCAN_CAP * 10]:
            if ch == "{":
                depth += 1
                opened = True
            elif ch == "}" and opened:
                depth -= 1
                if depth == 0:
                    return i + 1
        if not opened and i > start + 2:  # a declaration without a body
            return start + 1
        if not opened and lines[i].rstrip().endswith(";"):
            return i + 1
    return min(len(lines), start + _MAX_SCAN_LINES) if opened else start + 1


def _fallback(text: str, ext: str) -> list[Definition]:
    lines = split_lines(text)
    out: list[Definition] = []
    if ext in ("md", "markdown", "rst"):
        heads = []
        for i, line in enumerate(lines[:_MAX_SCAN_LINES]):
            m = _HEADING.match(line[:_LINE_SCAN_CAP])
            if m:
                heads.append((i + 1, len(m.group(1)), m.group(2)))
        for j, (number, level, title) in enumerate(heads[:MAX_OUTLINE_ENTRIES]):
            end = len(lines)
            for later, lv, _ in heads[j + 1 :]:
                if lv <= level:
                    end = later - 1
                    break
            out.append(Definition("#" * level, title, number, end, level - 1))
        return out
    brace = ext in _BRACE_EXTS
    rules = _BRACE_RULES if brace else _INDENT_RULES
    starts: list[tuple[int, str, str]] = []
    for i, line in enumerate(lines[:_MAX_SCAN_LINES]):
        head = line[:_LINE_SCAN_CAP]
        stripped = head.lstrip()
        if not stripped or stripped.startswith(
            ("//", "/*", "*", "#", "return ", "else", "if ", "for ", "while ", "switch ", "}")
        ):
            continue
        for kind, rx in rules:
            m = rx.match(head)
            if m:
                starts.append((i, kind, m.group(1).strip()))
                break
        if len(starts) >= MAX_OUTLINE_ENTRIES:
            break
    levels = sorted({_indent(lines[i]) for i, _, _ in starts})
    for k, (i, kind, name) in enumerate(starts):
        ind = _indent(lines[i])
        if brace:
            end = _brace_end(lines, i)
        else:
            end = len(lines)
            for j in range(i + 1, len(lines)):
                body = lines[j].strip()
                if body and _indent(lines[j]) <= ind and not body.startswith(("end", "}", ")")):
                    end = j
                    while end > i + 1 and not lines[end - 1].strip():
                        end -= 1
                    break
        del k
        out.append(Definition(kind, name, i + 1, max(i + 1, end), levels.index(ind)))
    return out


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
