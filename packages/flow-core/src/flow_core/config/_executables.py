"""Check executables: where each check's ``cmd[0]`` resolves, its identity, what to protect.

This is an explicit step after validation (``FlowConfig.model_post_init``): the lookup reads
the filesystem and ``PATH``, so it is kept out of the field validators. A check's executable
is pinned at load (its path and ``(st_dev, st_ino)``) and compared again before it runs
(``check_executable_changed``). What an approved check runs is protected from the file tools
when it lies inside the workspace: its executable, the virtualenv it lives in, and the script
an interpreter is given.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flow_core.config._schema import CheckConfig

__all__ = ["executable_identity", "resolve_checks", "resolve_executable"]


def resolve_executable(argv0: str, workspace: Path, path_env: str | None) -> str | None:
    """Where ``argv0`` would be found: the rule ``CheckConfig.executable`` records.

    Args:
        argv0: the first element of a check's argv.
        workspace: the absolute workspace directory (relative paths with ``/`` resolve here).
        path_env: the ``PATH`` to search for a bare name (``None``: ``os.defpath``).

    Returns:
        An absolute, normalised path (symlinks not resolved) to an executable regular file, or
        ``None``.
    """
    if "/" in argv0:
        candidate = os.path.normpath(os.path.join(workspace, argv0))
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
        return None
    found = shutil.which(argv0, path=path_env if path_env is not None else os.defpath)
    return os.path.abspath(found) if found else None


def executable_identity(path: str | None) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the file ``path`` names, following symlinks; None if unreadable.

    Recorded at load as ``CheckConfig.executable_id`` and compared again just before the check
    starts (``docs/architecture.md``, "Checks").
    """
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _inside_workspace(path: str | None, workspace: Path) -> list[str]:
    """Workspace-relative names of ``path`` and of its resolved target that lie inside."""
    if path is None:
        return []
    root = os.path.realpath(workspace)
    out: list[str] = []
    for candidate in (os.path.normpath(path), os.path.realpath(path)):
        for base in (os.path.normpath(workspace), root):
            if os.path.commonpath([base, candidate]) == base and candidate != base:
                rel = Path(os.path.relpath(candidate, base)).as_posix()
                if rel not in out:
                    out.append(rel)
                break
    return out


def _virtualenv_of(path: str | None, workspace: Path) -> list[str]:
    """The workspace-relative virtualenv (a directory with ``pyvenv.cfg``) holding ``path``."""
    if path is None:
        return []
    root = os.path.normpath(workspace)
    here = os.path.dirname(os.path.normpath(path))
    while os.path.commonpath([root, here]) == root and here != root:
        if os.path.isfile(os.path.join(here, "pyvenv.cfg")):
            return [Path(os.path.relpath(here, root)).as_posix()]
        here = os.path.dirname(here)
    return []


#: Interpreters whose first positional argument is the program they run.
_INTERPRETER = re.compile(
    r"(python[0-9.]*|pypy[0-9.]*|sh|bash|dash|zsh|ksh|node|deno|bun|ruby|perl|php|lua[0-9.]*|"
    r"Rscript|tclsh)"
)
#: Options after which an interpreter runs no script file (a module or inline code).
_NO_SCRIPT = frozenset({"-m", "-c", "-e", "--eval"})


def _script_of(cmd: tuple[str, ...], workspace: Path) -> list[str]:
    """The workspace script an interpreter check runs (``sh tools/lint.sh``), if any.

    For ``python -m MODULE`` it is the names that would shadow the module from the workspace
    root (``MODULE.py``, ``MODULE/``), which the check's working directory puts first on
    ``sys.path``. Only the program is protected, not the files it is pointed at
    (``py_compile app.py`` checks ``app.py``, which the coder must still be able to edit).
    """
    name = os.path.basename(cmd[0])
    if not _INTERPRETER.fullmatch(name):
        return []
    for i, arg in enumerate(cmd[1:], start=1):
        if arg == "-m" and name.startswith(("python", "pypy")) and i + 1 < len(cmd):
            # ``python -m pytest`` with cwd = the workspace imports ./pytest.py or ./pytest/
            # first: a file of that name would replace the tool, so neither may be created.
            top = cmd[i + 1].split(".")[0]
            return [f"{top}.py", top] if top and "/" not in top else []
        if arg in _NO_SCRIPT:
            return []
        if arg.startswith("-"):
            continue
        candidate = os.path.normpath(os.path.join(workspace, arg))
        return _inside_workspace(candidate, workspace) if os.path.isfile(candidate) else []
    return []


def resolve_checks(
    checks: Mapping[str, CheckConfig], workspace: Path, path_env: str | None
) -> tuple[dict[str, CheckConfig], list[str]]:
    """Pin every check's executable; list the workspace paths that must become protected.

    Args:
        checks: the validated ``[checks.NAME]`` tables.
        workspace: the absolute workspace directory.
        path_env: the ``PATH`` for bare names (None: ``os.defpath``).

    Returns:
        The checks with ``executable`` and ``executable_id`` set, and the workspace-relative
        paths of what they run (executables, their virtualenvs, interpreter scripts).
    """
    resolved: dict[str, CheckConfig] = {}
    inside: list[str] = []
    for name, check in checks.items():
        exe = resolve_executable(check.cmd[0], workspace, path_env)
        resolved[name] = check.model_copy(
            update={"executable": exe, "executable_id": executable_identity(exe)}
        )
        inside += _inside_workspace(exe, workspace)
        inside += _virtualenv_of(exe, workspace)
        inside += _script_of(check.cmd, workspace)
    return resolved, inside
