"""Line numbering shared by every file tool, the edit errors and the run's diff.

A line ends at ``"\\n"`` and only there, the rule ``grep -n``, ``ruff``, ``pytest`` and C
compilers follow for the same file: line 1 starts at offset 0, each ``"\\n"`` starts the next
line, and a final ``"\\n"`` ends the last line without starting an empty one. A ``"\\r"``
before the ``"\\n"`` belongs to the line it ends. ``str.splitlines`` is never used for
numbering: it also breaks at ``\\x0b``, ``\\x0c``, ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028``
and ``\\u2029``, which would shift every later number (docs/architecture.md, "Tools").
"""

from __future__ import annotations

import bisect

__all__ = ["line_of_offset", "line_starts", "split_lines", "split_lines_keepends"]


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their ``"\\n"`` (a ``"\\r"`` before it is kept).

    ``""`` has no line; ``"a"`` and ``"a\\n"`` have one; ``"a\\n\\n"`` has two.
    """
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def split_lines_keepends(text: str) -> list[str]:
    """The lines of ``text`` each with its ``"\\n"`` (the last one may have none)."""
    if not text:
        return []
    lines = [line + "\n" for line in text.split("\n")]
    last = lines.pop()[:-1]
    if last:
        lines.append(last)
    return lines


def line_starts(text: str) -> list[int]:
    """The character offset where each line starts (``[0]`` for any non-empty text)."""
    starts = [0]
    find = text.find
    pos = find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = find("\n", pos + 1)
    if len(starts) > 1 and starts[-1] == len(text):
        starts.pop()
    return starts if text else []


def line_of_offset(starts: list[int], offset: int) -> int:
    """The 1-based line holding character ``offset``, given ``line_starts(text)``."""
    return bisect.bisect_right(starts, offset)
