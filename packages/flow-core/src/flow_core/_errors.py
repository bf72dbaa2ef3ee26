"""Flow's exception tree. Every error has a stable ``code`` string (see ``ERROR_CODES``).

::

    FlowError                      code: any entry of ERROR_CODES
    ├── ConfigError                operator configuration or usage is wrong (CLI exit 2)
    │   └── UnknownCheckError      a check name that the operator config does not define
    ├── NotTrustedError            an action that needs --trusted was asked for without it
    ├── BackendError               the model server could not be used (connection, HTTP, JSON)
    └── EditorError                the Rose bridge is unavailable, mismatched or refused

Errors are translated only at the edges: the CLI maps them to an exit code and one line on
stderr, the MCP server to a JSON-RPC error or an ``isError`` result.
"""

from __future__ import annotations


class FlowError(Exception):
    """Base of every error Flow raises on purpose.

    Args:
        message: what was wrong and what to do about it.
        code: stable, machine-readable code (documented in ``ERROR_CODES``).
    """

    default_code = "flow_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code

    def __str__(self) -> str:
        return self.message


class ConfigError(FlowError):
    """The operator configuration (file, key, flag) is invalid; names the file, key and fix."""

    default_code = "config_invalid"


class UnknownCheckError(ConfigError):
    """A check name that is not configured under ``[checks.NAME]``."""

    default_code = "check_unknown"


class NotTrustedError(FlowError):
    """Writes and named checks need ``--trusted`` (``docs/architecture.md``, "Trust")."""

    default_code = "not_trusted"


class BackendError(FlowError):
    """The model server failed: refused connection, HTTP error, unknown model, bad JSON."""

    default_code = "backend_error"


class EditorError(FlowError):
    """The Rose editor bridge is unavailable, mismatched, timed out or refused an operation."""

    default_code = "editor_error"
