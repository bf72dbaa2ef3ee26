"""Lint coverage that looked: suppression comments the model added.

Source: ``docs/architecture.md``, section "What verified means" (condition 3). A lint check that
passes covers a file only if it examined it. A file-level suppression the model added
(``# ruff: noqa``, ``# flake8: noqa``, ``# mypy: ignore-errors``, ``# pylint: skip-file``, a
``# type: ignore`` before the first statement, ``// @ts-nocheck``, ``/* eslint-disable */``,
``#![allow(...)]``, ...) makes the linter look away from the whole file: that file is not
covered. Every suppression comment the model added, file-level or for one line (``# noqa``,
``# type: ignore[...]``, ``// eslint-disable-next-line``, ``# nosec``, ``//nolint``, ...), is
listed in the report (``suppressions_added``).

Markers are matched by the tool words they start with, not one comment syntax: a comment of any
language is a line part after ``#``, ``//``, ``/*``, ``--`` or ``;``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

__all__ = ["Suppression", "added_suppressions"]

# Directives that turn a linter or type checker off for a whole file.
_FILE_LEVEL = re.compile(
    r"(?:ruff|flake8)\s*:\s*noqa"
    r"|mypy\s*:\s*(?:ignore-errors|disable-error-code)"
    r"|pylint\s*:\s*(?:skip-file|disable-all|disable\s*=\s*all\b)"
    r"|pyright\s*:\s*(?:basic|off|report\w+\s*=\s*false)"
    r"|pyre-ignore-all-errors|pyre-strict\s*=\s*false|isort\s*:\s*skip_file"
    r"|@ts-nocheck|eslint-disable(?![-\w])|jshint\s+ignore\s*:\s*start|biome-ignore-all"
    r"|rubocop\s*:\s*disable\s+all|shellcheck\s+disable=all",
    re.IGNORECASE,
)
# Any suppression, for one line or more.
_ANY = re.compile(
    _FILE_LEVEL.pattern
    + r"|\bnoqa\b|type\s*:\s*ignore|pyright\s*:\s*ignore|pylint\s*:\s*disable|\bnosec\b"
    r"|pragma\s*:\s*no\s*cover|@ts-ignore|@ts-expect-error|eslint-disable|biome-ignore"
    r"|\bnolint\b|NOLINT|rubocop\s*:\s*disable|shellcheck\s+disable|pyre-(?:ignore|fixme)"
    r"|lint\s*:\s*ignore|deno-lint-ignore|noinspection",
    re.IGNORECASE,
)
_RUST_CRATE = re.compile(r"^\s*#!\[(?:allow|expect)\(")
_COMMENT = re.compile(r"(?:#|//|/\*|--|;)(.*)$")
# Python: a ``# type: ignore`` comment before any statement makes mypy skip the file (PEP 484).
_TYPE_IGNORE = re.compile(r"^\s*#\s*type\s*:\s*ignore\s*(?:#.*)?$", re.IGNORECASE)


@dataclass(frozen=True)
class Suppression:
    """One suppression comment the model added.

    Attributes:
        path: workspace-relative path.
        line: 1-based line number in the new text.
        text: the line, stripped, at most 160 characters.
        file_level: whether it turns the tool off for the whole file.
    """

    path: str
    line: int
    text: str
    file_level: bool

    def __str__(self) -> str:
        scope = "file" if self.file_level else "line"
        return f"{self.path}:{self.line}: {self.text} ({scope})"


def _before_code(lines: list[str]) -> int:
    """Index of the first line that is neither blank nor a comment."""
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", "//", "/*", "*", "--")):
            return i
    return len(lines)


def _found(text: str) -> list[tuple[int, str, bool]]:
    lines = text.splitlines()
    head = _before_code(lines)
    out: list[tuple[int, str, bool]] = []
    for i, line in enumerate(lines):
        if _RUST_CRATE.match(line):
            out.append((i + 1, line.strip()[:160], True))
            continue
        comment = _COMMENT.search(line)
        if comment is None or not _ANY.search(comment.group(1) if comment else ""):
            continue
        body = comment.group(1)
        whole = bool(_FILE_LEVEL.search(body)) or (i < head and bool(_TYPE_IGNORE.match(line)))
        if whole and "eslint-disable" in body.lower() and i >= head:
            whole = False  # a block disable further down covers the lines below it only
        out.append((i + 1, line.strip()[:160], whole))
    return out


def added_suppressions(path: str, old: bytes | None, new: bytes | None) -> list[Suppression]:
    """The suppression comments in ``new`` that ``old`` did not have (by line text, counted).

    Args:
        path: the workspace-relative path.
        old: the file's bytes before the run's first write (None: it did not exist).
        new: its bytes now (None: gone).
    """
    if new is None:
        return []
    before = Counter(t for _, t, _ in _found(old.decode("utf-8", "replace"))) if old else Counter()
    added: list[Suppression] = []
    for line, text, whole in _found(new.decode("utf-8", "replace")):
        if before[text] > 0:
            before[text] -= 1
            continue
        added.append(Suppression(path, line, text, whole))
    return added
