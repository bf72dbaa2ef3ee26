"""Flow's exception tree, drawn once. Every error has a stable ``code`` (``flow_core._codes``).

::

    FlowError                      code: any ErrorCode (the catalogue's rows)
    ├── ConfigError                operator configuration or usage is wrong (CLI exit 2)
    │   └── UnknownCheckError      a check name that the operator config does not define
    ├── NotTrustedError            an action that needs --trusted was asked for without it
    ├── BackendError               the model server could not be used (connection, HTTP, JSON)
    │   └── HTTPStatusError        an HTTP error status, body kept (models/_http.py)
    ├── EditorError                the Rose bridge is unavailable, mismatched or refused
    └── StoreError                 the run store, undo, apply or an isolated tree (store/_record.py)

    Exception
    └── ToolError                  one model tool call failed; its code goes in the tool record
                                   and its message back to the model (tools/_calls.py)
    ValueError
    └── SearchError                search_text's query cannot run (tools/_search.py)

    flow_safeio.SafeIOError        file refusals (flow-safeio's own tree, its README): each
                                   code has a row in the catalogue too

Errors are translated only at the edges: the CLI maps them to an exit code and one line on
stderr, the MCP server to a JSON-RPC error or an ``isError`` result. A test keeps this drawing
complete: every ``FlowError`` subclass in flow-core is named here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from flow_core._codes import ErrorCode


class FlowError(Exception):
    """Base of every error Flow raises on purpose.

    Args:
        message: what was wrong and what to do about it.
        code: stable, machine-readable code (documented in ``ERROR_CODES``).
    """

    default_code: ClassVar[ErrorCode] = "flow_error"

    def __init__(self, message: str, *, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code: ErrorCode = code or self.default_code

    def __str__(self) -> str:
        return self.message


class ConfigError(FlowError):
    """The operator configuration (file, key, flag) is invalid; names the file, key and fix."""

    default_code: ClassVar[ErrorCode] = "config_invalid"


class UnknownCheckError(ConfigError):
    """A check name that is not configured under ``[checks.NAME]``."""

    default_code: ClassVar[ErrorCode] = "check_unknown"


class NotTrustedError(FlowError):
    """Writes and named checks need ``--trusted`` (``docs/architecture.md``, "Trust")."""

    default_code: ClassVar[ErrorCode] = "not_trusted"


class BackendError(FlowError):
    """The model server failed: refused connection, HTTP error, unknown model, bad JSON."""

    default_code: ClassVar[ErrorCode] = "backend_error"


class EditorError(FlowError):
    """The Rose editor bridge is unavailable, mismatched, timed out or refused an operation."""

    default_code: ClassVar[ErrorCode] = "editor_error"
