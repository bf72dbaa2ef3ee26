"""The run record's bytes on disk: files opened without following links, replaced atomically,
and JSON or text written losslessly for any text a model or a user can produce.

``store/_record.py`` (the record's layout) writes through these; ``run/_journal.py`` uses the
same encoders. The rules are ``docs/architecture.md``'s "Run store" section.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_STRING_CHARS",
    "cut_strings",
    "json_bytes",
    "mode_of",
    "now_iso",
    "open_new",
    "read_small",
    "sha256",
    "text_bytes",
    "write_all",
    "write_atomic",
]

#: Longest string kept in one transcript line, in characters; longer ones are cut with a marker.
MAX_STRING_CHARS = 64 * 1024

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def sha256(data: bytes | None) -> str | None:
    """Hex SHA-256 of ``data``; ``None`` for a file that does not exist."""
    return None if data is None else hashlib.sha256(data).hexdigest()


def now_iso() -> str:
    """The current UTC time, ISO 8601 with milliseconds and a ``Z``."""
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def open_new(path: Path, *, append: bool = False) -> int:
    """Open a new file (0600) for writing, or an existing one to append; never through a link."""
    flags = os.O_WRONLY | os.O_CREAT | _NOFOLLOW | _CLOEXEC
    flags |= os.O_APPEND if append else os.O_EXCL
    return os.open(path, flags, 0o600)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``, however many ``write`` calls it takes."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_small(path: Path, limit: int) -> bytes:
    """Read at most ``limit`` bytes of a regular file, never through a symbolic link."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    try:
        return os.read(fd, limit) if limit else b""
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` (0600) with ``data``: a reader sees the old or the new file, whole."""
    tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
    fd = open_new(tmp)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)
    try:
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def json_bytes(value: Any, *, indent: int | None = None) -> bytes:
    """``value`` as JSON in UTF-8 bytes, for any text a model or a user can produce.

    Text that is not valid Unicode (a lone UTF-16 surrogate: an undecodable byte of argv or
    stdin, decoded by Python's ``surrogateescape``, or a model's ``\\ud83d`` escape) cannot
    be UTF-8 encoded; such a value is written with every non-ASCII character as a JSON
    ``\\uXXXX`` escape, which ``json.loads`` reads back to the same string (lossless). NUL
    and other control characters are escaped by JSON itself. Anything else JSON cannot carry
    is written as its ``str``.
    """
    text = json.dumps(value, ensure_ascii=False, default=str, indent=indent)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, default=str, indent=indent).encode()


def text_bytes(text: str) -> bytes:
    """``text`` as UTF-8 for a text file of the record (``plan.md``, ``diff.patch``).

    An undecodable byte that Python kept as a lone surrogate (``surrogateescape``) is written
    back as that byte, so the file holds what the user gave; any other lone surrogate becomes
    U+FFFD, the marked replacement.
    """
    try:
        return text.encode()
    except UnicodeEncodeError:
        pass
    out = bytearray()
    for char in text:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(code - 0xDC00)
        elif 0xD800 <= code <= 0xDFFF:
            out += "\ufffd".encode()
        else:
            out += char.encode()
    return bytes(out)


def cut_strings(value: Any) -> Any:
    """``value`` with every string over ``MAX_STRING_CHARS`` cut and marked."""
    if isinstance(value, str):
        if len(value) <= MAX_STRING_CHARS:
            return value
        dropped = len(value) - MAX_STRING_CHARS
        return value[:MAX_STRING_CHARS] + f"\n[run store: {dropped} more characters cut]"
    if isinstance(value, Mapping):
        return {str(k): cut_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [cut_strings(v) for v in value]
    return value


def mode_of(value: Any) -> int | None:
    """Permission bits read back from a record line (anything else: unknown)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 0o7777:
        return value
    return None
