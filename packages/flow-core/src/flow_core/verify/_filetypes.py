"""Coverage keys: which language, documentation or tool-configuration class a file belongs to.

The gate (``flow_core.verify._gate``) asks for static coverage per key, and the runtime uses the
same keys to pick the files Rose's native linter sees. Keys, in the order they are decided
(:func:`language_key`):

1. ``"tool-config"``: a file that configures the tools the checks run (:func:`is_tool_config`);
2. ``"docs"``: documentation and data (a known extension or a well-known name like ``LICENSE``);
3. ``"file:NAME"``: any other file without an extension;
4. the language name for a known extension (``".py"`` → ``"python"``), else the lower-cased
   extension.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath

from flow_core.verify._toolfiles import TOOL_FILES, classify, is_tool_config

__all__ = [
    "DOC_EXTENSIONS",
    "DOC_KEY",
    "FILE_KEY_PREFIX",
    "LANGUAGE_BY_EXTENSION",
    "TOOL_CONFIG_DIRS",
    "TOOL_CONFIG_KEY",
    "TOOL_CONFIG_NAMES",
    "TOOL_CONFIG_PATTERNS",
    "is_tool_config",
    "language_key",
]

#: The coverage key shared by documentation and data files.
DOC_KEY = "docs"
#: The coverage key of files that configure the tools the checks run: always vetoed.
TOOL_CONFIG_KEY = "tool-config"
#: Prefix of the key of a file without an extension (``"file:python"``).
FILE_KEY_PREFIX = "file:"
#: Extensions mapped to a language name.
LANGUAGE_BY_EXTENSION: Mapping[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".rs": "rust",
    ".go": "go",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".nix": "nix",
    ".lua": "lua",
    ".sh": "sh",
    ".bash": "sh",
    ".rb": "ruby",
    ".java": "java",
    ".kt": "kotlin",
    ".swift": "swift",
    ".zig": "zig",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".php": "php",
    ".cs": "csharp",
    ".scala": "scala",
    ".vim": "vim",
}
#: Documentation and data extensions: they need the named gate but no linter.
DOC_EXTENSIONS = frozenset(
    {".md", ".markdown", ".json", ".toml", ".yaml", ".yml", ".txt", ".rst", ".csv", ".ini", ".cfg"}
)
_DOC_NAMES = frozenset(
    {
        "README",
        "LICENSE",
        "LICENCE",
        "COPYING",
        "NOTICE",
        "AUTHORS",
        "CHANGELOG",
        "CHANGES",
        "CONTRIBUTING",
        "NEWS",
    }
)

# The files that configure the checks' tools are rows of the one table of files other tools
# run or obey (verify/_toolfiles.py, action "tool-config"); these are views of it.
#: Case-folded base names of tool-configuration files, in any directory.
TOOL_CONFIG_NAMES: frozenset[str] = frozenset(
    n for row in TOOL_FILES if row.action == "tool-config" for n in row.names
)
#: ``fnmatch`` patterns on the case-folded base name (``.eslintrc*``, ``jest.config.*``).
TOOL_CONFIG_PATTERNS: tuple[str, ...] = tuple(
    g for row in TOOL_FILES if row.action == "tool-config" for g in row.globs
)
#: Runs of directory components whose every file is tool configuration (``.cargo/``).
TOOL_CONFIG_DIRS: tuple[tuple[str, ...], ...] = tuple(
    d for row in TOOL_FILES if row.action == "tool-config" for d in row.dirs
)


def language_key(path: str) -> str:
    """The coverage key of a workspace-relative path.

    Returns:
        ``"tool-config"`` for a file that configures the tools the checks run
        (:func:`is_tool_config`); ``"docs"`` for documentation/data (a documentation extension,
        or a well-known name such as ``LICENSE``); ``"file:NAME"`` for any other file without
        an extension (``"scripts/python"`` → ``"file:python"``); otherwise the language name
        for a known extension, or the lower-cased extension (``".foo"``).
    """
    if classify(path) is not None:
        # Any row of the table: tool configuration, and the protected files other tools run
        # (never written by the tools; a change made otherwise must not pass for docs either).
        return TOOL_CONFIG_KEY
    p = PurePosixPath(path)
    ext = p.suffix.lower()
    if not ext:
        return DOC_KEY if p.name.upper() in _DOC_NAMES else FILE_KEY_PREFIX + p.name
    if ext in DOC_EXTENSIONS:
        return DOC_KEY
    return LANGUAGE_BY_EXTENSION.get(ext, ext)
