"""The workspace paths no write channel may change, computed in one place.

Four sources, always in this order, duplicates dropped: the root-level paths of the protected
rows of the tool-files table (``DEFAULT_PROTECTED``: agent launchers and settings, MCP server
lists, CI, ...), the operator's own ``protected`` list, what the named checks run when it lies
inside the workspace (``resolve_checks``: executables, their virtualenvs, interpreter scripts),
and the operator config files that lie inside the workspace. Every writer (the file tools
through flow-safeio, the editor bridge, undo and apply) receives this one list.
Source of the rule: ``docs/architecture.md``, sections "Trust" and "Evidence".
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from flow_core.verify._toolfiles import ROOT_PROTECTED

__all__ = ["DEFAULT_PROTECTED", "protected_paths"]

#: Workspace paths the file tools may read but never write, whatever the configuration says
#: (compared after NFC normalisation and case folding, by flow-safeio, and bound read-only in
#: the check jail): the root-level paths of the protected rows of the one table of files other
#: tools run or obey (``verify/_toolfiles.py``: agent instructions and settings, MCP launchers,
#: CI, dev containers, ``.envrc``, ...). The table itself also matches them in any directory.
DEFAULT_PROTECTED: tuple[str, ...] = ROOT_PROTECTED


def protected_paths(
    workspace: str | os.PathLike[str] | None = None,
    *,
    given: Iterable[str] = (),
    check_paths: Iterable[str] = (),
    config_files: Iterable[str | os.PathLike[str]] = (),
) -> tuple[str, ...]:
    """The protected list for ``workspace``: workspace-relative ``/`` paths, in order.

    Args:
        workspace: the absolute workspace root (needed only for ``config_files``).
        given: the operator's ``protected`` entries.
        check_paths: the workspace-relative paths the checks run (``resolve_checks``).
        config_files: the config files loaded; those inside the workspace are added.

    Returns:
        ``DEFAULT_PROTECTED``, then each source in the order above, without repeats.
    """
    inside: list[str] = []
    if workspace is not None:
        root = os.path.realpath(workspace)
        for src in config_files:
            real = os.path.realpath(src)
            if os.path.commonpath([root, real]) == root and real != root:
                inside.append(Path(os.path.relpath(real, root)).as_posix())
    return tuple(dict.fromkeys((*DEFAULT_PROTECTED, *given, *check_paths, *inside)))
