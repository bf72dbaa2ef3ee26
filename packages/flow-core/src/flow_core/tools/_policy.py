"""Which tools each role gets: the one role → toolset rule.

Used by the runtime's ``ToolBox``, the TUI's ``/tools`` and flow-rose's bridge, so the tools
a role is offered, the ones it may call and the ones a user is shown cannot disagree
(``docs/architecture.md``, "Tools").

* planner and reviewer (and an untrusted coder): ``list_files``, ``read_file``,
  ``search_text``, ``outline`` and the editor's read-only tools;
* a trusted coder: those plus ``write_file``, ``edit_file``, ``run_check`` (only when checks
  are configured) and the editor's ``editor_lint``/``editor_check``.

It also holds the one rule for writes that change what runs (:func:`what_runs_refusal`,
:data:`WHAT_RUNS_RULES`): new modules shadowing a standard-library, installed or workspace
module, encoding declarations other than UTF-8, Python startup files.
"""

from __future__ import annotations

import codecs
import importlib.machinery
import re
import sys
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from flow_core._protocols import Role

__all__ = [
    "EDITOR_TOOL_NAMES",
    "FILE_TOOL_NAMES",
    "IGNORE_FILES",
    "LINT_EXCLUDED_DIRS",
    "READ_ONLY_EDITOR_TOOL_NAMES",
    "READ_ONLY_TOOL_NAMES",
    "WHAT_RUNS_RULES",
    "RunsRefusal",
    "declared_encoding",
    "lint_excluded_refusal",
    "matching_pattern",
    "module_name",
    "reads_as_python",
    "role_tools",
    "what_runs_refusal",
]

#: Flow's own file tools, in the order the coder sees them.
FILE_TOOL_NAMES: tuple[str, ...] = (
    "list_files",
    "read_file",
    "search_text",
    "outline",
    "write_file",
    "edit_file",
)
#: Tools every role gets.
READ_ONLY_TOOL_NAMES: tuple[str, ...] = ("list_files", "read_file", "search_text", "outline")
#: Editor tools Flow accepts from the bridge (the allowlist; ``editor_debug`` is status only).
EDITOR_TOOL_NAMES: tuple[str, ...] = (
    "editor_context",
    "editor_diagnostics",
    "editor_symbols",
    "editor_references",
    "editor_lint",
    "editor_check",
    "editor_scip",
    "editor_debug",
)
#: Editor tools that change nothing: every role gets these when an editor is attached.
READ_ONLY_EDITOR_TOOL_NAMES: tuple[str, ...] = tuple(
    n for n in EDITOR_TOOL_NAMES if n not in ("editor_lint", "editor_check")
)


def role_tools(
    role: Role,
    *,
    trusted: bool,
    has_checks: bool = False,
    editor_tools: Iterable[str] = (),
) -> tuple[str, ...]:
    """The tool names ``role`` may call, in the order the model sees them.

    Args:
        role: ``"planner"``, ``"coder"`` or ``"reviewer"``.
        trusted: whether the session may write and run checks (``--trusted``).
        has_checks: whether named checks are configured (``run_check`` needs one).
        editor_tools: the editor tools the attached editor offers (empty without an editor);
            names outside ``EDITOR_TOOL_NAMES`` are never granted.

    Returns:
        Flow's file tools, then ``run_check``, then the granted editor tools in the order
        given. Pure: no I/O, same answer for the same arguments.
    """
    writes = role == "coder" and trusted
    names = list(FILE_TOOL_NAMES if writes else READ_ONLY_TOOL_NAMES)
    if writes and has_checks:
        names.append("run_check")
    allowed = EDITOR_TOOL_NAMES if writes else READ_ONLY_EDITOR_TOOL_NAMES
    for name in editor_tools:
        if name in allowed and name not in names:
            names.append(name)
    return tuple(names)


# -- writes that change what runs ---------------------------------------------------------------
#
# The one rule for writes that change which code an interpreter runs, apart from the code the
# write plainly shows (docs/architecture.md, "Writes that change what runs"). A check judges the
# code it runs; a write that makes ``import json`` load the model's file, or that makes Python
# decode a line the diff and the linter show as a comment as code, changes what the check ran
# without the diff saying so. Each refusal names its rule:

#: Rule names, each with the reason the refusal message gives.
WHAT_RUNS_RULES: dict[str, str] = {
    "python_startup": "every interpreter that finds it on its path runs it at start "
    "(.pth, sitecustomize, usercustomize)",
    "shadow_stdlib": "a top-level module of that name replaces the standard-library module "
    "for every import in the checks",
    "shadow_installed": "a top-level module of that name replaces the installed distribution's "
    "module for every import in the checks",
    "shadow_workspace": "the workspace already has a top-level module of that name; a second "
    "one (or a package folder beside the module) changes which one an import loads",
    "encoding_declaration": "the file tools write UTF-8; a declaration naming another encoding "
    "makes Python decode the bytes differently from the diff and the linter",
    "lint_excluded": "linters skip this location by default (their exclude lists, or the "
    "project's .gitignore/.ignore), so a passing lint check would not have examined the file",
}

#: Folder names linters leave out by default and Flow's generated-folder rule does not already
#: refuse: ruff's ``exclude`` defaults, flake8's and pylint's (``CVS``, ``*.egg``).
LINT_EXCLUDED_DIRS: frozenset[str] = frozenset(
    {
        ".bzr",
        ".direnv",
        ".git-rewrite",
        ".ipynb_checkpoints",
        ".pants.d",
        ".pyenv",
        ".pytype",
        "__pypackages__",
        "_build",
        "buck-out",
        "site-packages",
        "cvs",
    }
)

#: Per-folder ignore files linters obey (ruff reads them through the ``ignore`` crate, as ripgrep
#: does); the repository's ``.git/info/exclude`` is read too (``ToolBox._ignore_patterns``).
IGNORE_FILES: tuple[str, ...] = (".gitignore", ".ignore")


@dataclass(frozen=True)
class RunsRefusal:
    """Why a write was refused by the what-runs rule.

    Attributes:
        rule: a key of :data:`WHAT_RUNS_RULES`.
        detail: what in this write tripped it (the module name, the declared encoding).
    """

    rule: str
    detail: str

    @property
    def message(self) -> str:
        """The refusal as the model and the report read it."""
        return (
            f"refused by the rule {self.rule!r} ({self.detail}): {WHAT_RUNS_RULES[self.rule]}; "
            "choose another name or leave the declaration out"
        )


# PEP 263: a comment on line 1 or 2 naming the source encoding (the tokenizer's own pattern).
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
_BLANK = re.compile(r"^[ \t\f]*(?:[#\r\n]|$)", re.ASCII)
_UTF8 = frozenset({"utf-8", "utf_8", "utf8"})
#: Modules ``site`` imports at every start, whatever form they take (file, package, bytecode).
_STARTUP_MODULES = frozenset({"sitecustomize", "usercustomize"})
_SHEBANG_PYTHON = re.compile(r"^#![^\n]*python", re.ASCII)


def reads_as_python(path: str, text: str) -> bool:
    """Whether an interpreter may read ``path`` as Python source and so obey its encoding
    declaration: a Python source suffix (``importlib.machinery.SOURCE_SUFFIXES``, ``.pyw``,
    ``.pyi``), a ``#!`` line naming python, or no suffix at all (a script run by name).
    A Markdown heading such as ``# Decoding: ...`` in ``notes.md`` is not a declaration.
    """
    suffix = PurePosixPath(path).suffix.lower()
    if not suffix or suffix in (*importlib.machinery.SOURCE_SUFFIXES, ".pyw", ".pyi"):
        return True
    return bool(_SHEBANG_PYTHON.match(text))


def declared_encoding(text: str) -> str | None:
    """The encoding a PEP 263 declaration in ``text`` names, or None.

    Python reads the declaration on line 1, or on line 2 when line 1 is blank or a comment
    (``tokenize.detect_encoding``); the name is returned as written.
    """
    lines = text.split("\n", 2)[:2]
    for number, line in enumerate(lines):
        found = _CODING.match(line)
        if found:
            return found.group(1)
        if number == 0 and not _BLANK.match(line):
            return None
    return None


def _is_utf8(name: str) -> bool:
    folded = name.lower().replace("_", "-")
    if folded in _UTF8 or folded.startswith("utf-8-"):
        return True
    try:
        return codecs.lookup(name).name == "utf-8"
    except LookupError:
        return False


def module_name(path: str) -> str | None:
    """The module name a file defines by its own name: ``a/json.py`` → ``json``,
    ``a/json/__init__.py`` → ``json`` (the package), other files → None.

    Every suffix the import system loads counts (``importlib.machinery.all_suffixes``).
    """
    parts = PurePosixPath(path).parts
    if not parts:
        return None
    name = parts[-1]
    if name in ("__init__.py", "__init__.pyc") and len(parts) >= 2:
        return parts[-2]
    for suffix in sorted(importlib.machinery.all_suffixes(), key=len, reverse=True):
        if name.endswith(suffix) and len(name) > len(suffix):
            stem = name[: -len(suffix)]
            return stem if stem.isidentifier() else None
    return None


def matching_pattern(parts: tuple[str, ...], patterns: Iterable[tuple[str, str]]) -> str | None:
    """The ignore-file pattern (``(folder, pattern)``, gitignore syntax, negations left out)
    that matches a path given as components, or None."""
    for folder, raw in patterns:
        base = tuple(folder.split("/")) if folder else ()
        if parts[: len(base)] != base:
            continue
        rest = parts[len(base) :]
        pattern = raw.rstrip("/")
        dir_only = raw.endswith("/")
        while pattern.startswith("**/"):  # "**/x" is "x" in any folder, as git reads it
            pattern = pattern[3:]
        candidates = rest[:-1] if dir_only else rest
        if "/" in pattern.strip("/"):
            anchored = pattern.lstrip("/")
            for n in range(1, len(rest) + (0 if dir_only else 1)):
                if fnmatchcase("/".join(rest[:n]), anchored):
                    return raw
        elif pattern.startswith("/"):
            if candidates and fnmatchcase(candidates[0], pattern[1:]):
                return raw
        elif any(fnmatchcase(part, pattern) for part in candidates):
            return raw
    return None


def lint_excluded_refusal(
    path: str, ignore_patterns: Iterable[tuple[str, str]] = ()
) -> RunsRefusal | None:
    """Whether linters would skip ``path`` by default (rule ``lint_excluded``); pure.

    Args:
        path: the workspace-relative path written.
        ignore_patterns: ``(folder, pattern)`` from the workspace's ``.gitignore`` and
            ``.ignore`` files on the way to ``path`` (ruff and other linters skip what they
            list).
    """
    parts = PurePosixPath(path).parts
    for folder in parts[:-1]:
        if folder.casefold() in LINT_EXCLUDED_DIRS or folder.endswith(".egg"):
            return RunsRefusal("lint_excluded", f"folder {folder!r}")
    matched = matching_pattern(parts, ignore_patterns)
    if matched is not None:
        return RunsRefusal("lint_excluded", f"ignore pattern {matched!r}")
    return None


def what_runs_refusal(
    path: str,
    text: str,
    *,
    new_top_level: str | None,
    startup_file: bool,
    installed: Collection[str],
    workspace_modules: Collection[str],
) -> RunsRefusal | None:
    """Whether a write changes what runs beyond what it shows; the one place of that rule.

    Args:
        path: the workspace-relative path written.
        text: the text written (the file tools write UTF-8).
        new_top_level: the top-level module name the write creates (a new ``X.py`` or
            ``X/__init__.py`` in a folder that is not itself a package), else None.
        startup_file: whether the path is a Python startup file (``verify/_toolfiles.py``,
            the "Python startup files" row); a module or package of a startup module's name
            (``sitecustomize/__init__.py``, ``usercustomize.pyc``) is one too.
        installed: top-level module names of the installed distributions the checks import.
        workspace_modules: top-level module names already in the workspace, other than
            ``path`` itself.

    Returns:
        The first rule the write breaks (order: startup, stdlib, installed, workspace,
        encoding), or None. Pure: no I/O.
    """
    if startup_file or module_name(path) in _STARTUP_MODULES:
        return RunsRefusal("python_startup", path)
    if new_top_level is not None:
        if new_top_level in sys.stdlib_module_names:
            return RunsRefusal("shadow_stdlib", f"module {new_top_level!r}")
        if new_top_level in installed:
            return RunsRefusal("shadow_installed", f"module {new_top_level!r}")
        if new_top_level in workspace_modules:
            return RunsRefusal("shadow_workspace", f"module {new_top_level!r}")
    declared = declared_encoding(text) if reads_as_python(path, text) else None
    if declared is not None and not _is_utf8(declared):
        return RunsRefusal("encoding_declaration", f"coding: {declared[:40]}")
    return None
