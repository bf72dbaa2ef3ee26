"""Pure, syntactic path rules (no file system access).

Source of the rules: ``docs/architecture.md``, sections "Trust" and "File I/O" (file tools take
relative paths only; parent traversal, absolute and Windows-style paths and ``.git`` are
refused).
"""

from __future__ import annotations

import functools
import re

from flow_safeio._errors import GitPathError, InvalidPathError, PathEscapeError

__all__ = ["MAX_COMPONENT_BYTES", "MAX_PATH_BYTES", "SKIPPED_DIRS", "split_path", "validate_path"]

#: Longest accepted component, in bytes of UTF-8 (Linux ``NAME_MAX``).
MAX_COMPONENT_BYTES = 255
#: Longest accepted relative path, in bytes of UTF-8 (Linux ``PATH_MAX``).
MAX_PATH_BYTES = 4096

#: Directory names that listings and walks skip: VCS metadata, virtual environments,
#: dependency trees, tool caches and build outputs (``docs/architecture.md``, "File I/O").
SKIPPED_DIRS: frozenset[str] = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".env",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".hypothesis",
        ".nox",
        ".tox",
        ".eggs",
        "build",
        "dist",
        "target",
        ".gradle",
        ".idea",
        ".vscode",
        ".cache",
        ".next",
        ".terraform",
    }
)

_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Code points that HFS+ ignores when comparing names, so ".g\u200cit" opens ".git" there
# (the same list Git checks in is_hfs_dotgit).
_HFS_IGNORABLE = dict.fromkeys(
    [0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]
)
# ".git" itself, and its NTFS 8.3 short name.
_GIT_NAMES = frozenset({".git", "git~1"})


def _is_git_component(component: str) -> bool:
    """Whether a component names ``.git`` on some file system we might be copied to.

    Covers case (``.GIT``), Windows trailing dots and spaces (``.git.``, ``.git ``), NTFS
    alternate streams (``.git::$INDEX_ALLOCATION``), the 8.3 short name (``GIT~1``) and
    HFS+ ignorable code points.
    """
    name = component.translate(_HFS_IGNORABLE)
    name = name.split(":", 1)[0].rstrip(". ").casefold()
    return name in _GIT_NAMES


def split_path(rel: object) -> tuple[str, ...]:
    """Validate ``rel`` and return its components (empty tuple for the root itself).

    Args:
        rel: A relative, ``/``-separated path (``str``). ``"."`` names the root.

    Returns:
        The components, with empty and ``"."`` components dropped.

    Raises:
        InvalidPathError: Not a ``str``; empty; a backslash, NUL or other control character;
            a lone surrogate; a component made only of dots and spaces; too long.
        PathEscapeError: Absolute (``/...``), a drive letter (``C:``), or a ``..`` component.
        GitPathError: A component names ``.git`` in any spelling.
    """
    if not isinstance(rel, str):
        raise InvalidPathError(rel, f"path must be a str, not {type(rel).__name__}")
    if type(rel) is not str:
        # An exact copy: a str subclass could fake equality and hit another path's cache entry.
        rel = str.__str__(rel)
    return _split_str(rel)


@functools.lru_cache(maxsize=4096)
def _split_str(rel: str) -> tuple[str, ...]:
    # A pure function of an exact str, so accepted answers are cached (refusals are not).
    if rel == "":
        raise InvalidPathError(rel, "path is empty")
    if "\x00" in rel:
        raise InvalidPathError(rel, "path contains a NUL character")
    if rel.startswith("/"):
        raise PathEscapeError(rel, "absolute paths are refused; give a path relative to the root")
    if _DRIVE.match(rel):
        raise PathEscapeError(rel, "Windows drive letters are refused")
    if "\\" in rel:
        raise InvalidPathError(rel, "backslashes are refused; separate components with '/'")
    if _CONTROL.search(rel):
        raise InvalidPathError(rel, "path contains a control character")
    try:
        size = len(rel.encode("utf-8"))
    except UnicodeEncodeError as err:
        raise InvalidPathError(rel, "path is not valid Unicode text") from err
    if size > MAX_PATH_BYTES:
        raise InvalidPathError(rel, f"path is longer than {MAX_PATH_BYTES} bytes")
    parts: list[str] = []
    for component in rel.split("/"):
        if component in ("", "."):
            continue
        if component == "..":
            raise PathEscapeError(rel, "'..' components are refused")
        if component.strip(". ") == "":
            raise InvalidPathError(rel, f"component {component!r} is only dots and spaces")
        if _is_git_component(component):
            raise GitPathError(rel, f"component {component!r} names the .git directory")
        if len(component.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise InvalidPathError(rel, f"a component is longer than {MAX_COMPONENT_BYTES} bytes")
        parts.append(component)
    return tuple(parts)


def validate_path(rel: str) -> str:
    """Check a workspace-relative path and return its normal form.

    Pure syntax: nothing on disk is looked at. Repeated slashes and ``.`` components are
    dropped, so ``"a//./b/"`` becomes ``"a/b"``; the root itself is ``"."``.

    Args:
        rel: A relative, ``/``-separated path.

    Returns:
        The normalised relative path.

    Raises:
        InvalidPathError: See :func:`split_path` (``PathEscapeError`` and ``GitPathError``
            are subclasses).
    """
    parts = split_path(rel)
    return "/".join(parts) if parts else "."
