"""``edit_file``'s error messages: where the ambiguous matches are, where the missed text is.

* old text found more than once: the line of each match (line numbers as ``grep -n``);
* old text found nowhere: the line most like its first non-blank line (``difflib``), shown
  numbered with as many lines as the old text has, and whether the difference is only
  whitespace or line endings.
"""

from __future__ import annotations

import difflib

from flow_core.tools._lines import line_of_offset, line_starts, split_lines

__all__ = ["ambiguous_message", "match_lines", "no_match_message"]

_MAX_LISTED = 30
_MAX_COMPARED_LINES = 20_000
_MAX_COMPARED_CHARS = 400
_MAX_SHOWN_LINES = 12


def match_lines(text: str, old: str) -> list[int]:
    """The 1-based line where each (non-overlapping) occurrence of ``old`` starts."""
    starts = line_starts(text)
    found: list[int] = []
    pos = text.find(old)
    while pos != -1:
        found.append(line_of_offset(starts, pos))
        pos = text.find(old, pos + max(1, len(old)))
    return found


def ambiguous_message(rel: str, lines: list[int]) -> str:
    """``edit_ambiguous``: the count and every match's first line (capped)."""
    shown = ", ".join(str(n) for n in lines[:_MAX_LISTED])
    more = f" and {len(lines) - _MAX_LISTED} more" if len(lines) > _MAX_LISTED else ""
    return (
        f"old_text occurs {len(lines)} times in {rel} (starting at lines {shown}{more}); "
        "exactly one match is required: include more surrounding lines so it is unique"
    )


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
    candidates = [ln.strip()[:_MAX_COMPARED_CHARS] for ln in lines[:_MAX_COMPARED_LINES]]
    best = difflib.get_close_matches(probe[:_MAX_COMPARED_CHARS], candidates, n=1, cutoff=0.5)
    if not best:
        return base + " No line resembles its first line; search_text or read_file to find it."
    number = candidates.index(best[0]) + 1
    offset = next((i for i, ln in enumerate(old_lines) if ln.strip()), 0)
    first = max(1, number - offset)
    last = min(len(lines), first + max(1, min(len(old_lines), _MAX_SHOWN_LINES)) - 1)
    width = len(str(last))
    view = "\n".join(
        f"{n:>{width}}\t{lines[n - 1].removesuffix(chr(13))}" for n in range(first, last + 1)
    )
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
