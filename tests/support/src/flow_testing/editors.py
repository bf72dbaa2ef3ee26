"""One editor-bridge double for the suites: files on disk or in memory, every call recorded.

It implements flow-core's ``EditorBridge`` protocol (``flow_core/_protocols.py``), the seam a
real editor (Rose, through flow-rose) sits behind: ``workspace``, ``tool_schemas``,
``call_tool``, ``read_file``, ``write_file``, ``freshness``, ``lint`` and ``close``. Imports
``flow_core``, so only suites of packages that depend on flow-core use it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from flow_core import EditorError, EditorFreshness, EditorLintResult

__all__ = ["RecordingEditor", "tool_schema"]


def tool_schema(name: str, *, read_only: bool = True) -> dict[str, Any]:
    """One editor tool as a bridge lists it (MCP's tool shape plus ``readOnly``)."""
    return {
        "name": name,
        "description": name,
        "inputSchema": {"type": "object"},
        "readOnly": read_only,
    }


class RecordingEditor:
    """An ``EditorBridge`` that keeps files on disk under ``root``, or in :attr:`files`.

    Every call is recorded in :attr:`calls` as ``"read:PATH"``, ``"write:PATH"``,
    ``"call:TOOL"`` or ``"lint:PATH,PATH"``. A test sets :attr:`dirty` (the unsaved buffers),
    :attr:`snapshot` (the editor's state id) and :attr:`lint_result` as the run goes on.

    Args:
        root: the folder files are read from and written to; None keeps them in :attr:`files`.
        workspace: the folder the editor says it has open (``root``, or ``"/"``, by default).
        files: the in-memory files when ``root`` is None (path -> text).
        schemas: the editor's tools (default: ``editor_diagnostics`` and ``editor_lint``).
        dirty: the unsaved buffers :meth:`freshness` reports.
        fail: file reads and writes raise ``EditorError`` (an editor that went away).
    """

    def __init__(
        self,
        root: Path | None = None,
        *,
        workspace: str | None = None,
        files: Mapping[str, str] | None = None,
        schemas: Sequence[dict[str, Any]] | None = None,
        dirty: tuple[str, ...] = (),
        fail: bool = False,
    ) -> None:
        self.root = root
        self.ws = workspace or (str(root) if root is not None else "/")
        self.files = dict(files or {})
        self.schemas = (
            list(schemas)
            if schemas is not None
            else [
                tool_schema("editor_diagnostics"),
                tool_schema("editor_lint", read_only=False),
            ]
        )
        self.dirty = dirty
        self.fail = fail
        self.snapshot = "s1"
        self.lint_result: Callable[[Sequence[str]], EditorLintResult] = lambda paths: (
            EditorLintResult("ok", True, tuple(paths))
        )
        self.calls: list[str] = []
        self.closed = False

    def workspace(self) -> str:
        return self.ws

    def tool_schemas(self) -> list[dict[str, Any]]:
        return list(self.schemas)

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        self.calls.append(f"call:{name}")
        return {"tool": name}

    def read_file(self, rel: str) -> str:
        self.calls.append(f"read:{rel}")
        if self.fail:
            raise EditorError("editor gone")
        return (self.root / rel).read_text() if self.root is not None else self.files[rel]

    def write_file(self, rel: str, text: str) -> None:
        self.calls.append(f"write:{rel}")
        if self.fail:
            raise EditorError("unsaved buffer")
        if self.root is not None:
            (self.root / rel).write_text(text)
        else:
            self.files[rel] = text

    def freshness(self) -> EditorFreshness:
        return EditorFreshness(self.dirty, self.snapshot)

    def lint(self, paths: Sequence[str]) -> EditorLintResult:
        self.calls.append("lint:" + ",".join(paths))
        return self.lint_result(paths)

    def close(self) -> None:
        self.closed = True
