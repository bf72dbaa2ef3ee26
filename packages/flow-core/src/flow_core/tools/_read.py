"""``read_file``'s window: numbered lines, the total line count and a hint that advances.

A read shows at most ``READ_MAX_LINES`` lines and ``READ_MAX_CHARS`` characters, so a targeted
read of one function fits a small model's window. Lines are numbered as ``grep -n`` numbers
them (``flow_core.tools._lines``). A line longer than ``READ_LINE_CAP`` characters comes in
pieces: each piece names its columns (1-based, in characters) and the hint names the next
``start_col``, so even a one-line 60 KB bundle can be read to its end. Every hint points past
what was shown: the next read never repeats the last one.
"""

from __future__ import annotations

from flow_core.tools._lines import split_lines

__all__ = ["READ_LINE_CAP", "READ_MAX_CHARS", "READ_MAX_LINES", "ReadError", "read_window"]

#: Lines one read shows when no ``end_line`` is given: a first look of about 1,000 tokens on a
#: small model's vocabulary (``bench/bench_context.py``); an explicit range may be longer.
READ_MAX_LINES = 100
#: Most characters of file text one read shows (line numbers and notes not counted).
READ_MAX_CHARS = 12_000
#: Longest piece of one line shown at once (characters); longer lines come in pieces.
READ_LINE_CAP = 2_000


class ReadError(ValueError):
    """The requested range does not exist in the file; the message says what does."""


def _hint(rel: str, line: int, col: int = 1) -> str:
    where = f"start_line={line}" + (f", start_col={col}" if col > 1 else "")
    return f"[more: call read_file with path={rel!r}, {where}]"


def read_window(
    rel: str,
    text: str,
    *,
    start_line: int = 1,
    end_line: int | None = None,
    start_col: int = 1,
) -> str:
    """Render lines ``start_line``..``end_line`` of ``text`` for the model.

    Args:
        rel: the workspace-relative path (shown in the header and the hints).
        text: the whole file.
        start_line: first line shown (1-based).
        end_line: last line wanted (inclusive); None reads on up to the window's size.
        start_col: first column (1-based, characters) of ``start_line`` shown; for the rest
            of a long line.

    Returns:
        A header ``PATH: lines A-B of N``, one ``NUMBER<TAB>TEXT`` row per line (the line's
        ``"\\r"`` is not shown; the header says when the file uses CRLF), and, when the file
        goes on, a hint naming the next ``start_line`` (and ``start_col``).

    Raises:
        ReadError: ``start_line`` past the end, ``end_line < start_line``, ``start_col`` past
            the end of the line, or a non-positive number.
    """
    if start_line < 1 or start_col < 1 or (end_line is not None and end_line < 1):
        raise ReadError("start_line, end_line and start_col are 1-based: use numbers >= 1")
    lines = split_lines(text)
    total = len(lines)
    if total == 0:
        return f"{rel}: empty file (0 lines)"
    if start_line > total:
        raise ReadError(f"start_line {start_line} is past the end: {rel} has {total} lines")
    if end_line is not None and end_line < start_line:
        raise ReadError(f"end_line {end_line} is before start_line {start_line}")
    last = min(total, end_line if end_line is not None else start_line + READ_MAX_LINES - 1)
    rows, shown_to, hint = _rows(rel, lines, start_line, last, start_col)
    crlf = (
        " (CRLF line endings: each shown line ends with \\r\\n in the file)"
        if ("\r\n" in text)
        else ""
    )
    head = f"{rel}: lines {start_line}-{shown_to} of {total}{crlf}"
    return "\n".join([head, *rows, *([hint] if hint else [])])


def _rows(
    rel: str, lines: list[str], start_line: int, last: int, start_col: int
) -> tuple[list[str], int, str]:
    """The numbered rows of lines ``start_line``..``last`` (1-based) that fit the window, the
    last line shown, and the hint to go on (``""`` at the end of the file).

    Raises:
        ReadError: ``start_col`` past the end of ``start_line``.
    """
    width = len(str(last))
    rows: list[str] = []
    used = 0
    shown_to = start_line - 1
    for number in range(start_line, last + 1):
        line = lines[number - 1].removesuffix("\r")
        col = start_col if number == start_line else 1
        if col > 1 and col > len(line):
            raise ReadError(f"start_col {col} is past the end of line {number} ({len(line)} chars)")
        piece = line[col - 1 : col - 1 + READ_LINE_CAP]
        if rows and used + len(piece) > READ_MAX_CHARS:
            return rows, shown_to, _hint(rel, number)
        rows.append(f"{number:>{width}}\t{piece}")
        used += len(piece)
        shown_to = number
        end_col = col - 1 + len(piece)
        if end_col < len(line) or col > 1:
            rows.append(f"[line {number}: columns {col}-{end_col} of {len(line)} shown]")
        if end_col < len(line):
            return rows, shown_to, _hint(rel, number, end_col + 1)
    return rows, shown_to, _hint(rel, last + 1) if last < len(lines) else ""
