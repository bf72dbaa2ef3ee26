"""Text that is valid Unicode, the one place lone surrogates are replaced.

A Python ``str`` can hold a lone UTF-16 surrogate (U+D800..U+DFFF): a model's reply decoded
leniently, a task given on a command line with a non-UTF-8 byte (``surrogateescape``). Such a
string cannot be encoded as UTF-8, so JSON bodies, reports and the run record would fail on
it. Each of those replaces every lone surrogate by U+FFFD (the Unicode replacement
character, as the Unicode Standard's section 3.9 recommends for ill-formed sequences)
through :func:`valid_text` (``docs/architecture.md``, "Backends" and "Run store").
"""

from __future__ import annotations

__all__ = ["first_surrogate", "valid_text"]


def first_surrogate(text: str) -> int | None:
    """The index of the first lone surrogate in ``text``, or ``None`` when it has none."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return err.start
    return None


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD; ``text`` itself when it has none."""
    if first_surrogate(text) is None:
        return text
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
