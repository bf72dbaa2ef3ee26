"""``flow serve``: hand over to flow-mcp's stdio server with the merged flags.

``flow_mcp`` is imported only here, so no other command pays for it. ``flow serve`` and the
``flow-mcp`` script take the same options; flow-mcp owns stdout (protocol only), the signal
handling (SIGINT/SIGTERM kill check process groups and close the editor client) and its exit
codes.
"""

from __future__ import annotations

from flow_cli._options import CommonOptions


def serve_mcp(
    opts: CommonOptions,
    *,
    nvim: str | None,
    editor_timeout: float | None,
    max_result_chars: int | None = None,
) -> int:
    """Run the MCP server until EOF or a signal.

    Args:
        opts: the merged common flags.
        nvim: Rose's private Neovim socket, or None for no editor bridge.
        editor_timeout: editor request timeout in seconds, within flow-core's
            ``EDITOR_TIMEOUT_MIN``-``EDITOR_TIMEOUT_MAX``; None: ``EDITOR_TIMEOUT_DEFAULT``.
        max_result_chars: the cap on one tool result in JSON characters; None: flow-mcp's
            default.

    Returns:
        flow-mcp's exit code.
    """
    import flow_mcp
    from flow_core import EDITOR_TIMEOUT_DEFAULT

    extra = {} if max_result_chars is None else {"max_result_chars": max_result_chars}
    options = flow_mcp.ServerOptions(
        workspace=opts.workspace,
        config_file=opts.config,
        trusted=opts.trusted,
        model=opts.model,
        nvim_socket=nvim,
        editor_timeout=EDITOR_TIMEOUT_DEFAULT if editor_timeout is None else editor_timeout,
        **extra,
    )
    return flow_mcp.serve(options)
