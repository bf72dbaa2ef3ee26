"""``flow serve``: hand over to flow-mcp's stdio server with the same arguments.

``flow_mcp`` is imported only here, so no other command pays for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flow_cli._options import CommonOptions


def serve_argv(opts: CommonOptions, *, nvim: str | None, editor_timeout: float | None) -> list[str]:
    """The ``flow-mcp`` argv for the merged flags (same interface as ``flow serve``)."""
    argv: list[str] = []
    if opts.workspace is not None:
        argv += ["--workspace", opts.workspace]
    if opts.config is not None:
        argv += ["--config", opts.config]
    if opts.trusted:
        argv.append("--trusted")
    if opts.model is not None:
        argv += ["--model", opts.model]
    if nvim is not None:
        argv += ["--nvim", nvim]
    if editor_timeout is not None:
        argv += ["--editor-timeout", repr(editor_timeout)]
    return argv


def serve_mcp(opts: CommonOptions, *, nvim: str | None, editor_timeout: float | None) -> int:
    """Run the MCP server until EOF or a signal; returns its exit code."""
    import flow_mcp

    entry: Callable[[list[str]], Any] | None = getattr(flow_mcp, "main", None)
    if entry is None:
        from flow_mcp.__main__ import main as entry_main

        entry = entry_main
    code = entry(serve_argv(opts, nvim=nvim, editor_timeout=editor_timeout))
    return int(code) if code is not None else 0
