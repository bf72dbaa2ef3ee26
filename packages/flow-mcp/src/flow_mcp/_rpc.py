"""JSON-RPC 2.0 pieces the session and the tools share ("Basic > Messages").

Error codes, :class:`JsonRpcError` (an error answer), :class:`PreEncoded` (a result that is
already JSON) and the :class:`Handler` Protocol the session calls into.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

RequestId = str | int
Method = Callable[[dict[str, Any]], "dict[str, Any] | PreEncoded"]


class JsonRpcError(Exception):
    """A JSON-RPC error answer: ``{"code", "message", "data"?}`` ("Basic > Messages").

    Args:
        code: the JSON-RPC error code.
        message: one short sentence for the client's user.
        data: optional JSON-serialisable details.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        """The ``error`` member of a response."""
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


class PreEncoded:
    """A method result that is already compact ASCII JSON (the constant ``tools/list``)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class Handler(Protocol):
    """What the session needs from the tools layer ("Server Features > Tools")."""

    def list_tools(self) -> list[dict[str, Any]]:
        """The ``tools`` array of a ``tools/list`` result."""
        ...

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        progress_token: RequestId | None,
        *,
        stopped: Callable[[], str | None] = ...,
    ) -> dict[str, Any]:
        """A ``CallToolResult``; raises :class:`JsonRpcError` for protocol-level failures.

        ``stopped()`` says why the call must stop (a cancellation or the client's end that
        came before the tool started), else None; the tool checks it once it has started.
        """
        ...

    def cancel(self, reason: str) -> None:
        """Stop the tool call in progress, if any (called from the reader thread)."""
        ...


__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "METHOD_NOT_FOUND",
    "Handler",
    "JsonRpcError",
    "Method",
    "PreEncoded",
    "RequestId",
]
