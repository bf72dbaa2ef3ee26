"""The stable error codes the Rose bridge raises, all as ``flow_core.EditorError``.

The bridge adds no exception classes of its own: flow-core knows the editor only through the
``EditorBridge`` Protocol, and every failure crosses that seam as ``EditorError`` whose ``code``
is a key of ``EDITOR_ERROR_CODES``. The codes live in flow-core's one error catalogue (with
their meanings and categories); this module re-exports that section. The CLI and the MCP
server translate the errors at their edges.
"""

from __future__ import annotations

from flow_core import EDITOR_ERROR_CODES, EditorError, ErrorCode

__all__ = ["EDITOR_ERROR_CODES", "editor_error"]


def editor_error(code: ErrorCode, message: str) -> EditorError:
    """Build ``EditorError(message, code=code)`` for the caller to raise (``raise ... from``).

    Args:
        code: a key of ``EDITOR_ERROR_CODES`` (an ``ErrorCode``: a misspelt one fails mypy).
        message: what went wrong and what to do about it.
    """
    assert code in EDITOR_ERROR_CODES, code
    return EditorError(message, code=code)
