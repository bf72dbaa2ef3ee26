"""Where an operator config may come from: never from where the model or others can write.

The operator config decides which commands Flow runs as checks, with ``--trusted``. A config
file that the model's file tools could write (it lies inside the workspace), or that another
user could write or replace (group or other write permission on the file or on a folder above
it, or another owner), would let them choose those commands: a cloned repository shipping
``flow-mcp --workspace . --config ./flow.toml --trusted`` in its MCP settings would run its
own commands as "checks". Every entry point (CLI, TUI, MCP server) loads through
``load_config``, which refuses such a file with ``ConfigError`` code ``config_unsafe``.
Source of the rule: ``docs/architecture.md``, section "Evidence".

A folder with the sticky bit (``/tmp``) is accepted although others may write it: they cannot
rename or remove a file they do not own there. Files and folders owned by root are accepted.
The walk over the folders (links followed one by one) is flow-safeio's ``owned_way``, the
same one the Neovim socket check uses.
"""

from __future__ import annotations

import os
from pathlib import Path

from flow_core._errors import ConfigError
from flow_safeio import change_problem, owned_way

__all__ = ["check_config_location", "config_location_problem"]


def _inside(path: str, roots: list[str]) -> bool:
    return any(os.path.commonpath([root, path]) == root for root in roots)


def config_location_problem(config_file: str | Path, workspace: str | Path) -> str | None:
    """Why ``config_file`` must not be used as operator config, or None when it may.

    Args:
        config_file: the ``--config`` path (absolute or relative to the current directory).
        workspace: the absolute workspace root.

    Returns:
        One sentence naming the file and the problem, or None.
    """
    found = _location_problem(config_file, workspace)
    return None if found is None else found[0]


_MOVE = "move it out of the project (e.g. to ~/.config/flow/<project>.toml)"
_OWN = "copy it to a file of your own outside the project (e.g. ~/.config/flow/<project>.toml)"
_ELSEWHERE = "move it to a folder only you can write (e.g. ~/.config/flow/<project>.toml)"


def _location_problem(config_file: str | Path, workspace: str | Path) -> tuple[str, str] | None:
    """The problem (see :func:`config_location_problem`) and the fix that suits it."""
    given = os.path.abspath(config_file)
    real = os.path.realpath(given)
    roots = list(dict.fromkeys([os.path.normpath(workspace), os.path.realpath(workspace)]))
    if _inside(given, roots) or _inside(real, roots):
        problem = (
            f"{given} lies inside the workspace {roots[0]}, where the model's file tools and "
            "the checks can write it"
        )
        return problem, _MOVE
    try:
        st = os.stat(real)
    except OSError as err:
        return f"{given} cannot be examined ({err.strerror})", f"make {given} readable by you"
    file_problem = change_problem(given, st, uid=os.geteuid())
    if file_problem is not None:
        fix = f"chmod go-w {real}" if file_problem.reason == "writable" else _OWN
        return f"{given} {file_problem.describe()}", fix
    for start in dict.fromkeys((os.path.dirname(given), os.path.dirname(real))):
        _reached, way = owned_way(start)
        if way is None:
            continue
        where = f"the folder {way.path} above {given} {way.describe()}"
        if way.reason == "unresolvable":
            return where, f"make {way.path} searchable by you, or {_ELSEWHERE}"
        if way.reason == "writable":
            return (
                f"{where}, so the file can be replaced",
                f"chmod go-w {way.path}, or {_ELSEWHERE}",
            )
        return f"{where}, so the file can be replaced", _OWN
    return None


def check_config_location(config_file: str | Path, workspace: str | Path) -> None:
    """Raise when ``config_file`` may not be used (see :func:`config_location_problem`).

    Raises:
        ConfigError: code ``config_unsafe``, naming the file, the problem and the fix.
    """
    found = _location_problem(config_file, workspace)
    if found is not None:
        problem, fix = found
        raise ConfigError(
            f"--config: refused: {problem}; an operator config chooses the commands Flow runs, "
            f"so it must be a file only you can write, outside the workspace; fix: {fix}",
            code="config_unsafe",
        )
