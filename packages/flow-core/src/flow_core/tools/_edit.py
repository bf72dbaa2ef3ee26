"""``edit_file``'s error messages: where the ambiguous matches are, where the missed text is.

* old text found more than once: the line of each match (line numbers as ``grep -n``);
* old text found nowhere: the line most like its first non-blank line (``difflib``), shown
  numbered with as many lines as the old text has, and whether the difference is only
  whitespace or line endings.
"""

from __future__ import annotations

import difflib
import heapq

from flow_core.tools._lines import line_of_offset, line_starts, split_lines

__all__ = ["ambiguous_message", "match_lines", "no_match_message"]

_MAX_LISTED = 30
_MAX_COMPARED_LINES = 20_000
_MAX_COMPARED_CHARS = 400
_MAX_SHOWN_LINES = 12
_MAX_SHOWN_CHARS = 300
_MAX_COMPARED_TOTAL = 400_000
_MAX_RATIOS = 20


def match_lines(text: str, old: str) -> list[int]:
    """The 1-based line where each (non-overlapping) occurrence of ``old`` starts."""
    starts = line_starts(text)
    found: list[int] = []
    pos = text.find(old)
    while pos != -1:
        found.append(line_of_offset(starts, pos))
        pos = text.find(old, pos + max(1, len(old)))
    return found


def _shown(line: str) -> str:
    line = line.removesuffix("\r")
    if len(line) <= _MAX_SHOWN_CHARS:
        return line
    return line[:_MAX_SHOWN_CHARS] + f"… [{len(line)} chars; read_file start_col for the rest]"


def ambiguous_message(rel: str, lines: list[int]) -> str:
    """``edit_ambiguous``: the count and every match's first line (capped)."""
    shown = ", ".join(str(n) for n in lines[:_MAX_LISTED])
    more = f" and {len(lines) - _MAX_LISTED} more" if len(lines) > _MAX_LISTED else ""
    return (
        f"old_text occurs {len(lines)} times in {rel} (starting at lines {shown}{more}); "
        "exactly one match is required: include more surrounding lines so it is unique"
    )


def _closest_line(probe: str, lines: list[str]) -> int | None:
    """The 1-based line most like ``probe`` (``difflib`` ratio >= 0.5; the first on a tie).

    As ``difflib.get_close_matches`` does, cheap upper bounds (``real_quick_ratio``,
    ``quick_ratio``) filter first; the full ratio runs on the best ``_MAX_RATIOS`` only, and
    at most ``_MAX_COMPARED_TOTAL`` characters of the file are compared, so the cost stays
    linear in the file whatever its lines hold.
    """
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(probe)
    budget = _MAX_COMPARED_TOTAL
    scored: list[tuple[float, int, str]] = []
    for number, line in enumerate(lines[:_MAX_COMPARED_LINES], 1):
        candidate = line.strip()[:_MAX_COMPARED_CHARS]
        budget -= len(candidate) + 1
        if budget < 0:
            break
        matcher.set_seq1(candidate)
        if matcher.real_quick_ratio() >= 0.5 and (quick := matcher.quick_ratio()) >= 0.5:
            scored.append((quick, -number, candidate))
    best: tuple[float, int] | None = None
    for _, negative, candidate in heapq.nlargest(_MAX_RATIOS, scored):
        matcher.set_seq1(candidate)
        ratio = matcher.ratio()
        if ratio >= 0.5 and (best is None or (ratio, negative) > best):
            best = (ratio, negative)
    return None if best is None else -best[1]


def no_match_message(rel: str, text: str, old: str) -> str:
    """``edit_no_match``: the closest line and a view of the file there."""
    base = (
        f"old_text was not found in {rel} (0 matches); it must match the file exactly, "
        "including whitespace and line endings."
    )
    lines = split_lines(text)
    old_lines = split_lines(old)
    probe = next((ln.strip() for ln in old_lines if ln.strip()), "")
    if not lines or not probe:
        return base + " Read the file and try again."
    number = _closest_line(probe[:_MAX_COMPARED_CHARS], lines)
    if number is None:
        return base + " No line resembles its first line; search_text or read_file to find it."
    offset = next((i for i, ln in enumerate(old_lines) if ln.strip()), 0)
    first = max(1, number - offset)
    last = min(len(lines), first + max(1, min(len(old_lines), _MAX_SHOWN_LINES)) - 1)
    width = len(str(last))
    view = "\n".join(f"{n:>{width}}\t{_shown(lines[n - 1])}" for n in range(first, last + 1))
    why = ""
    region = "\n".join(lines[first - 1 : last])
    if "\r\n" in text and "\r\n" not in old and "\n" in old:
        why = " The file uses CRLF line endings: write each line break in old_text as \\r\\n."
    elif " ".join(region.split()) == " ".join(old.split()):
        why = " The text there differs from old_text only in whitespace or indentation."
    return (
        f"{base} The closest line is {number}; lines {first}-{last} of {rel} are:\n{view}\n"
        f"Copy old_text from these lines exactly.{why}"
    )
