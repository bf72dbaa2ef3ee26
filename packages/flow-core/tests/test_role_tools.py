"""The one role → toolset rule, and that the toolbox offers exactly what it grants."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flow_core import (
    EDITOR_TOOL_NAMES,
    FILE_TOOL_NAMES,
    READ_ONLY_TOOL_NAMES,
    ROLES,
    Role,
    role_tools,
)
from flow_core.tools import READ_ONLY_EDITOR_TOOL_NAMES, ToolBox, ToolHost, ToolLedger
from flow_safeio import Workspace
from flow_testing.editors import RecordingEditor

READERS = ("planner", "reviewer")


@pytest.mark.parametrize("role", READERS)
@pytest.mark.parametrize("trusted", [False, True])
def test_readers_only_read(role: Role, trusted: bool) -> None:
    names = role_tools(role, trusted=trusted, has_checks=True, editor_tools=EDITOR_TOOL_NAMES)
    assert names == READ_ONLY_TOOL_NAMES + READ_ONLY_EDITOR_TOOL_NAMES
    assert not {"write_file", "edit_file", "run_check", "editor_lint", "editor_check"} & set(names)


def test_the_coder_writes_only_when_trusted() -> None:
    untrusted = role_tools("coder", trusted=False, has_checks=True, editor_tools=EDITOR_TOOL_NAMES)
    assert untrusted == role_tools("reviewer", trusted=False, editor_tools=EDITOR_TOOL_NAMES)
    trusted = role_tools("coder", trusted=True, has_checks=True, editor_tools=EDITOR_TOOL_NAMES)
    assert trusted == (*FILE_TOOL_NAMES, "run_check", *EDITOR_TOOL_NAMES)
    assert "run_check" not in role_tools("coder", trusted=True, has_checks=False)


def test_unknown_editor_tools_are_never_granted() -> None:
    offered = ["file_write", "editor_symbols", "shell", "editor_symbols"]
    for role in ROLES:
        names = role_tools(role, trusted=True, editor_tools=offered)
        assert names.count("editor_symbols") == 1
        assert not {"file_write", "shell"} & set(names)


def _spec(name: str) -> dict[str, Any]:
    return {"name": name, "description": name, "inputSchema": {"type": "object"}}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("trusted", [False, True])
def test_the_toolbox_offers_exactly_the_granted_tools(
    tmp_path: Path, role: Role, trusted: bool
) -> None:
    specs = [_spec(n) for n in (*EDITOR_TOOL_NAMES, "file_read")]
    with Workspace(tmp_path) as ws:
        box = ToolBox(
            role=role,
            workspace=ws,
            ledger=ToolLedger(limit=10),
            trusted=trusted,
            host=ToolHost(
                check_names=["tests"],
                run_check=lambda name: pytest.fail("not called"),
                editor=RecordingEditor(),
                editor_schemas=specs,
            ),
        )
    granted = role_tools(role, trusted=trusted, has_checks=True, editor_tools=EDITOR_TOOL_NAMES)
    assert [s["function"]["name"] for s in box.schemas] == list(granted)
    assert box.names == frozenset(granted)
