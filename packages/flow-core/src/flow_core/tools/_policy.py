"""Which tools each role gets: the one role → toolset rule.

Used by the runtime's ``ToolBox``, the TUI's ``/tools`` and flow-rose's bridge, so the tools
a role is offered, the ones it may call and the ones a user is shown cannot disagree
(``docs/architecture.md``, "Tools").

* planner and reviewer (and an untrusted coder): ``list_files``, ``read_file``,
  ``search_text``, ``outline`` and the editor's read-only tools;
* a trusted coder: those plus ``write_file``, ``edit_file``, ``run_check`` (only when checks
  are configured) and the editor's ``editor_lint``/``editor_check``.
"""

from __future__ import annotations

from collections.abc import Iterable

from flow_core._protocols import Role

__all__ = [
    "EDITOR_TOOL_NAMES",
    "FILE_TOOL_NAMES",
    "READ_ONLY_EDITOR_TOOL_NAMES",
    "READ_ONLY_TOOL_NAMES",
    "role_tools",
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
