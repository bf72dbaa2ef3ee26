"""The stable error codes the Rose bridge raises, all as ``flow_core.EditorError``.

The bridge adds no exception classes of its own: flow-core knows the editor only through the
``EditorBridge`` Protocol, and every failure crosses that seam as ``EditorError`` whose ``code``
is one of the keys below. The CLI and the MCP server translate it at their edges.
"""

from __future__ import annotations

from flow_core import EditorError

EDITOR_ERROR_CODES: dict[str, str] = {
    "editor_socket_invalid": (
        "The --nvim value is not an absolute path to an existing Unix socket owned by the user."
    ),
    "editor_socket_tcp": (
        "The --nvim value looks like a TCP address (host:port or an IP); only a private Unix "
        "socket is accepted."
    ),
    "editor_socket_public": (
        "The socket is reachable by other users: put it in a 0700 directory you own, or remove "
        "its group/other permission bits."
    ),
    "editor_unavailable": (
        "Neovim could not be reached, went away (killed, socket closed) or the bridge was "
        "already closed or failed; reconnect."
    ),
    "editor_timeout": (
        "Neovim did not answer within the editor request timeout (seconds); the connection is "
        "closed because its state is unknown."
    ),
    "editor_timeout_invalid": "The editor request timeout is outside 0.1-660 seconds.",
    "editor_protocol": ("Rose answered in a shape that breaks the documented rose.tools contract."),
    "editor_workspace_mismatch": (
        "Rose's resolved workspace is not Flow's workspace (compared after resolving symlinks)."
    ),
    "editor_freshness_missing": (
        "Rose's editor_context lacks a freshness API v1 field; Flow fails closed."
    ),
    "editor_refused": (
        "Rose refused a buffer-aware file operation (unsaved or read-only buffer) to protect "
        "the user's text."
    ),
    "editor_tool_unknown": (
        "The tool is not on the bridge's allowlist or Rose did not offer it at attach."
    ),
    "editor_tool_denied": (
        "The tool or action is not allowed here (lint/check for a read-only role, an "
        "editor_debug action other than status)."
    ),
    "editor_tool_error": "Rose ran the tool and reported an error.",
    "editor_arguments_invalid": "Tool arguments are not a JSON object (or not JSON at all).",
}


def editor_error(code: str, message: str) -> EditorError:
    """Build ``EditorError(message, code=code)`` for the caller to raise (``raise ... from``).

    Args:
        code: a key of ``EDITOR_ERROR_CODES``.
        message: what went wrong and what to do about it.
    """
    assert code in EDITOR_ERROR_CODES, code
    return EditorError(message, code=code)
