"""What a ruff check's own configuration excludes: changed files that check never examined.

Source: ``docs/architecture.md``, "What verified means" (condition 3). ruff skips the files
its configuration excludes and still exits 0, so a changed file a ruff check excludes is not
covered by that check. The configuration is found the way ruff finds it (its documentation,
"Configuring Ruff", config file discovery): for each file, the closest ``.ruff.toml``,
``ruff.toml`` or ``pyproject.toml`` with a ``[tool.ruff]`` table in its folder or a folder
above it (in that order within one folder), or the file ``--config PATH`` names;
``--isolated`` reads none. From it ``exclude`` and ``extend-exclude`` are read (and, through
``extend``, those of the configurations it extends), relative to the configuration's folder,
plus ``--exclude``/``--extend-exclude`` in the argv, relative to the workspace root. Patterns
are matched like ignore-file patterns (``tools/_policy.matching_pattern``): a pattern
without ``/`` matches any path component, one with ``/`` a path from that folder. Every
pattern found counts, whichever ruff would let win, so the error is always on the side of
"uncovered".

The folders linters skip by default and the paths ignore files list are refused at the tool
instead (rule ``lint_excluded``); a change to a configuration file vetoes by itself
(``tool-config``).
"""

from __future__ import annotations

import os
import posixpath
import tomllib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from flow_core.tools._policy import matching_pattern

__all__ = ["excluded_by_config", "is_ruff"]

Reader = Callable[[str], bytes | None]
#: ruff's configuration files, in the order it prefers them within one folder.
CONFIG_NAMES: tuple[str, ...] = (".ruff.toml", "ruff.toml", "pyproject.toml")
_MAX_EXTENDS = 8
_EXCLUDE_KEYS = ("exclude", "extend-exclude")


def is_ruff(argv: Sequence[str]) -> bool:
    """Whether ``argv`` runs ruff (a program named ``ruff``, or ``-m ruff``)."""
    for i, arg in enumerate(argv):
        if os.path.basename(arg) in ("ruff", "ruff.exe"):
            return True
        if arg == "-m" and argv[i + 1 : i + 2] == ["ruff"]:
            return True
    return False


def _table(path: str, read: Reader) -> dict[str, Any] | None:
    """ruff's settings in the configuration file ``path`` (None: none, or unreadable)."""
    data = read(path)
    if data is None:
        return None
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    if posixpath.basename(path) == "pyproject.toml":
        tool = doc.get("tool")
        ruff = tool.get("ruff") if isinstance(tool, dict) else None
        return ruff if isinstance(ruff, dict) else None
    return doc


def _patterns(path: str, read: Reader, depth: int = 0) -> list[tuple[str, str]]:
    """``(folder, pattern)`` excluded by the configuration file ``path`` and those it extends."""
    table = _table(path, read)
    if table is None:
        return []
    folder = posixpath.dirname(path)
    out: list[tuple[str, str]] = []
    extend = table.get("extend")
    if isinstance(extend, str) and depth < _MAX_EXTENDS:
        target = posixpath.normpath(posixpath.join(folder, extend))
        if not target.startswith(("../", "/")) and target != "..":
            out += _patterns(target, read, depth + 1)
    for key in _EXCLUDE_KEYS:
        values = table.get(key)
        if isinstance(values, list):
            out += [(folder, v) for v in values if isinstance(v, str) and v.strip("/")]
    return out


def _closest_config(path: str, read: Reader) -> str | None:
    """The configuration file ruff uses for ``path``: the closest one above it."""
    parts = path.split("/")[:-1]
    for n in range(len(parts), -1, -1):
        folder = "/".join(parts[:n])
        for name in CONFIG_NAMES:
            candidate = f"{folder}/{name}" if folder else name
            if _table(candidate, read) is not None:
                return candidate
    return None


def _argv_patterns(argv: Sequence[str]) -> tuple[list[tuple[str, str]], str | None, bool]:
    """The argv's ``--exclude``/``--extend-exclude`` patterns, its ``--config`` file (a
    workspace-relative path; inline ``KEY=VALUE`` settings are not read) and ``--isolated``."""
    patterns: list[tuple[str, str]] = []
    config: str | None = None
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if not eq and i + 1 < len(argv):
            value = argv[i + 1]
        if name in ("--exclude", "--extend-exclude"):
            patterns += [("", v.strip()) for v in value.split(",") if v.strip().strip("/")]
        elif name == "--config" and value.endswith(".toml") and "=" not in value:
            config = posixpath.normpath(value)
    return patterns, config, "--isolated" in argv


def excluded_by_config(argv: Sequence[str], changed: Iterable[str], read: Reader) -> list[str]:
    """The ``changed`` paths the ruff check ``argv`` excludes by its configuration.

    Args:
        argv: a ruff check's argv (:func:`is_ruff`), run from the workspace root.
        changed: workspace-relative paths the run changed.
        read: a workspace-relative path's bytes now (None: absent or unreadable).

    Returns:
        The excluded paths, sorted (module docstring).
    """
    from_argv, config, isolated = _argv_patterns(argv)
    if config is not None and (config.startswith(("../", "/")) or config == ".."):
        config = None  # outside the workspace: the operator's own file, not the model's
    out: list[str] = []
    for path in changed:
        patterns = list(from_argv)
        source = config if config is not None else _closest_config(path, read)
        if source is not None and not isolated:
            patterns += _patterns(source, read)
        if matching_pattern(tuple(path.split("/")), patterns) is not None:
            out.append(path)
    return sorted(out)
