"""``search_text``: literal or regular-expression search with line numbers and context.

Bounds (a model's pattern is hostile input):

* the pattern is at most ``MAX_PATTERN_CHARS`` characters;
* at most ``MAX_SEARCH_BYTES`` bytes are read across all files of one call;
* a literal query (the default) is matched in process: ``str.find`` and, for
  ``ignore_case``, an escaped pattern, both linear in the input;
* a regular expression runs in a separate Python process (``python -I -S``) that receives the
  pattern and the texts on stdin and returns match positions on stdout; it is killed (by pid)
  after ``REGEX_TIMEOUT_S`` seconds. Python's ``re`` has no timeout and holds the GIL while it
  backtracks, so a thread could not be stopped; a child process can. The child reads no file
  itself: the texts come from the workspace through flow-safeio.

Each matching line is shown as ``PATH:LINE:COL: TEXT`` (1-based line as ``grep -n`` counts,
1-based column in characters) with up to ``context`` lines around it (``PATH-LINE- TEXT``,
groups separated by ``--``, as ``grep -C`` prints them). A line longer than
``SEARCH_LINE_CAP`` characters is shown as a window around the match, marked with ``…``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from flow_core._codes import ErrorCode
from flow_core.tools._lines import split_lines

__all__ = [
    "MAX_CONTEXT_LINES",
    "MAX_PATTERN_CHARS",
    "MAX_SEARCH_BYTES",
    "MAX_SEARCH_MATCHES",
    "REGEX_TIMEOUT_S",
    "SEARCH_LINE_CAP",
    "Query",
    "SearchError",
    "search",
]

#: Most matches one call returns.
MAX_SEARCH_MATCHES = 50
#: Most bytes read across all files in one call.
MAX_SEARCH_BYTES = 4 * 1024 * 1024
#: Longest query or pattern accepted (characters).
MAX_PATTERN_CHARS = 1_000
#: Seconds a regular-expression search may run before its process is killed.
REGEX_TIMEOUT_S = 5.0
#: Most characters of one line shown (a window around the match).
SEARCH_LINE_CAP = 300
#: Most context lines before and after a match.
MAX_CONTEXT_LINES = 5
#: Characters of output after which no further match group is added.
_OUTPUT_BUDGET = 16_000

# The child: reads {"pattern", "flags", "texts", "limit"} from stdin, writes
# [[file_index, line, start_col0, end_col0], ...] to stdout. Lines split on "\n" only.
_WORKER = r"""
import json, re, sys
job = json.loads(sys.stdin.buffer.read())
rx = re.compile(job["pattern"], job["flags"])
out = []
for index, text in enumerate(job["texts"]):
    if len(out) >= job["limit"]:
        break
    for number, line in enumerate(text.split("\n"), 1):
        m = rx.search(line[:-1] if line.endswith("\r") else line)
        if m is not None:
            out.append([index, number, m.start(), m.end()])
            if len(out) >= job["limit"]:
                break
sys.stdout.write(json.dumps(out))
"""


class SearchError(ValueError):
    """The query cannot be run; ``code`` is a catalogued error code."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message


@dataclass(frozen=True, slots=True)
class _Match:
    path: str
    line: int  # 1-based
    start: int  # 0-based column of the match
    end: int


def _compile(query: str, *, regex: bool, ignore_case: bool) -> re.Pattern[str]:
    if not query:
        raise SearchError("tool_invalid_arguments", "query must not be empty")
    if len(query) > MAX_PATTERN_CHARS:
        raise SearchError(
            "tool_invalid_arguments",
            f"query has {len(query)} characters; at most {MAX_PATTERN_CHARS} are accepted",
        )
    flags = re.IGNORECASE if ignore_case else 0
    try:
        return re.compile(query if regex else re.escape(query), flags)
    except (re.error, RecursionError, OverflowError, ValueError) as err:
        raise SearchError(
            "search_bad_regex",
            f"query is not a valid Python regular expression ({err}); fix it or pass "
            "regex=false for a literal search",
        ) from err


def _run_regex(
    rx: re.Pattern[str], texts: list[str], limit: int, timeout_s: float
) -> list[tuple[int, int, int, int]]:
    job = json.dumps(
        {"pattern": rx.pattern, "flags": int(rx.flags), "texts": texts, "limit": limit}
    ).encode("ascii")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError as err:  # no executable, no process left, no memory: not the model's fault
        raise SearchError(
            "search_unavailable",
            f"the regular-expression search could not start ({type(err).__name__}); "
            "search for a literal string instead (regex=false)",
        ) from err
    try:
        out, _ = proc.communicate(job, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise SearchError(
            "search_timeout",
            f"the regular expression ran past {timeout_s:g} s and was stopped "
            "(nested repetition backtracks exponentially); simplify it, narrow path, or "
            "search for a literal string",
        ) from None
    finally:
        # Also on Ctrl-C or any other exception: the child never outlives the call.
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
    if proc.returncode != 0:
        raise SearchError("search_bad_regex", "the regular expression could not be run")
    try:
        return [(int(a), int(b), int(c), int(d)) for a, b, c, d in json.loads(out)]
    except (ValueError, TypeError) as err:
        raise SearchError("search_bad_regex", "the regular expression could not be run") from err


def _show(line: str, start: int, end: int) -> str:
    line = line.removesuffix("\r")
    if len(line) <= SEARCH_LINE_CAP:
        return line
    left = max(0, min(start - SEARCH_LINE_CAP // 3, len(line) - SEARCH_LINE_CAP))
    right = left + SEARCH_LINE_CAP
    return ("…" if left else "") + line[left:right] + ("…" if right < len(line) else "")


@dataclass(frozen=True)
class Query:
    """What ``search_text`` looks for: ``text``, literal or a Python regular expression
    (``regex``), matched one line at a time, case-insensitively with ``ignore_case``."""

    text: str
    regex: bool = False
    ignore_case: bool = False


def search(
    paths: Iterable[str],
    read: Callable[[str], bytes],
    query: Query,
    *,
    context: int = 0,
    limit: int = MAX_SEARCH_MATCHES,
    timeout_s: float = REGEX_TIMEOUT_S,
) -> str:
    """Search the files ``paths`` (read with ``read``) and render the matches.

    Args:
        paths: workspace-relative files, in the order to search.
        read: returns a file's bytes; an ``OSError`` skips the file.
        query: the text and how it matches (``Query``).
        context: lines shown before and after each match (0..``MAX_CONTEXT_LINES``).
        limit: most matches (1..``MAX_SEARCH_MATCHES``).
        timeout_s: seconds a regular-expression search may run (its process is then killed).

    Raises:
        SearchError: ``tool_invalid_arguments``, ``search_bad_regex`` or ``search_timeout``.
    """
    rx = _compile(query.text, regex=query.regex, ignore_case=query.ignore_case)
    context = max(0, min(context, MAX_CONTEXT_LINES))
    names, texts, note = _read_texts(paths, read)
    if query.regex:
        found = _run_regex(rx, texts, limit + 1, timeout_s)
        matches = [_Match(names[i], n, s, e) for i, n, s, e in found]
    else:
        matches = _literal_matches(rx, names, texts, limit + 1)
    if len(matches) > limit:
        matches = matches[:limit]
        note = f"[stopped at {limit} matches; narrow path or query]"
    if not matches:
        return "(no matches)" + ("\n" + note if note else "")
    return _render(matches, dict(zip(names, texts, strict=True)), context) + (
        "\n" + note if note else ""
    )


def _read_texts(
    paths: Iterable[str], read: Callable[[str], bytes]
) -> tuple[list[str], list[str], str]:
    """The searchable files of ``paths`` and their text (undecodable bytes replaced), up to
    ``MAX_SEARCH_BYTES`` read; unreadable and binary files (a NUL in the first 8 KiB) are
    skipped. The third item is the note to show when the byte bound stopped the reading."""
    names: list[str] = []
    texts: list[str] = []
    scanned = 0
    for path in paths:
        if scanned >= MAX_SEARCH_BYTES:
            return names, texts, f"[stopped after reading {MAX_SEARCH_BYTES} bytes; narrow path]"
        try:
            data = read(path)
        except OSError:
            continue
        scanned += len(data)
        if b"\0" in data[:8192]:
            continue
        names.append(path)
        texts.append(data.decode("utf-8", errors="replace"))
    return names, texts, ""


def _literal_matches(
    rx: re.Pattern[str], names: list[str], texts: list[str], most: int
) -> list[_Match]:
    """Matches of ``rx`` line by line (a line's ``"\\r"`` not matched), in file order, at
    most ``most`` of them."""
    matches: list[_Match] = []
    for name, text in zip(names, texts, strict=True):
        if len(matches) >= most:
            break
        if rx.search(text) is None:
            continue
        for number, line in enumerate(text.split("\n"), 1):
            m = rx.search(line.removesuffix("\r"))
            if m is not None:
                matches.append(_Match(name, number, m.start(), m.end()))
                if len(matches) >= most:
                    break
    return matches


def _render(matches: list[_Match], texts: dict[str, str], context: int) -> str:
    out: list[str] = []
    size = 0
    lines_of: dict[str, list[str]] = {}
    shown: set[tuple[str, int]] = set()
    last: tuple[str, int] | None = None
    at_line = {(m.path, m.line): m for m in matches}
    for i, m in enumerate(matches):
        if size > _OUTPUT_BUDGET:
            out.append(f"[output budget reached: {len(matches) - i} more matches not shown]")
            break
        lines = lines_of.setdefault(m.path, split_lines(texts[m.path]))
        first = max(1, m.line - context)
        if context and out and (last is None or last[0] != m.path or first > last[1] + 1):
            out.append("--")
        for number in range(first, min(len(lines), m.line + context) + 1):
            if (m.path, number) in shown:
                continue
            shown.add((m.path, number))
            hit = at_line.get((m.path, number))
            if hit is not None:
                shown_text = _show(lines[number - 1], hit.start, hit.end)
                row = f"{m.path}:{number}:{hit.start + 1}: {shown_text}"
            else:
                row = f"{m.path}-{number}- {_show(lines[number - 1], 0, 0)}"
            out.append(row)
            size += len(row)
            last = (m.path, number)
    return "\n".join(out)
