"""``RoseBridge``: flow-core's ``EditorBridge`` over Rose's ``rose.tools`` Lua module.

The contract with Rose (the shape of ``schemas()`` entries, of ``call()`` replies, of the
freshness v1 fields, of file_read/file_write and editor_lint) is written down in this
package's README; the test double in ``tests/fixtures/rtp/lua/rose/tools.lua`` implements it.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Self

from flow_core import (
    EDITOR_TIMEOUT_DEFAULT,
    EDITOR_TIMEOUT_MAX,
    EDITOR_TIMEOUT_MIN,
    EditorError,
    EditorFreshness,
    EditorLintResult,
    Role,
    role_tools,
)
from flow_rose._connection import Connection
from flow_rose._errors import editor_error
from flow_rose._replies import (
    EDITOR_TOOLS,
    filter_schemas,
    lint_result,
    parse_freshness,
    unwrap,
)
from flow_rose._socket import validate_socket

DEFAULT_TIMEOUT: Final = EDITOR_TIMEOUT_DEFAULT
"""Default editor request timeout, in seconds."""

MIN_TIMEOUT: Final = EDITOR_TIMEOUT_MIN
"""Smallest accepted editor request timeout, in seconds."""

MAX_TIMEOUT: Final = EDITOR_TIMEOUT_MAX
"""Largest accepted editor request timeout, in seconds."""

_FILE_TOOLS: Final = frozenset({"file_read", "file_write"})
_REFUSAL_CODES: Final = frozenset({"modified", "readonly"})


def _check_timeout(timeout: float) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise editor_error(
            "editor_timeout_invalid", f"editor timeout must be a number of seconds: {timeout!r}"
        )
    value = float(timeout)
    if not MIN_TIMEOUT <= value <= MAX_TIMEOUT:
        raise editor_error(
            "editor_timeout_invalid",
            f"editor timeout {value:g} s is outside {MIN_TIMEOUT:g}-{MAX_TIMEOUT:g} seconds",
        )
    return value


def _realpath(path: str) -> str:
    return os.path.realpath(path)


class RoseBridge:
    """flow-core's ``EditorBridge`` implemented over Rose's ``rose.tools`` module.

    Build it with ``RoseBridge.connect``. Every request runs on one worker thread that owns the
    pynvim connection and is bounded by the editor request timeout (seconds). Any failure
    (unavailable editor, timeout, workspace mismatch, missing freshness field, refusal) raises
    ``flow_core.EditorError`` with a code from ``flow_rose.EDITOR_ERROR_CODES``; nothing ever
    falls back to direct disk I/O.
    """

    def __init__(
        self, connection: Connection, workspace: str, schemas: dict[str, dict[str, Any]]
    ) -> None:
        """Internal: use ``RoseBridge.connect``."""
        self._conn = connection
        self._workspace = workspace
        self._schemas = schemas

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        socket_path: str | os.PathLike[str],
        *,
        workspace: str | os.PathLike[str],
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Self:
        """Attach to Rose over a private Neovim socket.

        Order: the timeout is range-checked; the socket is validated (``validate_socket``)
        before anything connects; the worker thread connects; Rose's schemas are discovered
        and filtered to ``EDITOR_TOOLS``; ``editor_context`` is called once and Rose's
        resolved workspace must equal ``workspace`` (both resolved with ``realpath``) and its
        freshness v1 fields must all be present.

        Args:
            socket_path: absolute path of Neovim's listening Unix socket (``--nvim``).
            workspace: Flow's workspace root.
            timeout: the editor request timeout in seconds, within flow-core's
                ``EDITOR_TIMEOUT_MIN``-``EDITOR_TIMEOUT_MAX`` (default
                ``EDITOR_TIMEOUT_DEFAULT``). It bounds connecting and every later request
                separately.

        Returns:
            A connected bridge. Close it (or use it as a context manager).

        Raises:
            EditorError: ``editor_timeout_invalid``, ``editor_socket_tcp``,
                ``editor_socket_invalid``, ``editor_socket_dir_unsafe``, ``editor_socket_public``,
                ``editor_socket_peer``, ``editor_unavailable``,
                ``editor_timeout``, ``editor_protocol``, ``editor_workspace_mismatch`` or
                ``editor_freshness_missing``.
        """
        seconds = _check_timeout(timeout)
        sock = validate_socket(socket_path)
        flow_workspace = _realpath(os.fspath(workspace))
        conn = Connection(str(sock), seconds)
        try:
            schemas = filter_schemas(conn.schemas())
            if "editor_context" not in schemas:
                raise editor_error(
                    "editor_protocol",
                    "Rose does not offer editor_context, which the freshness API v1 needs",
                )
            bridge = cls(conn, flow_workspace, schemas)
            context = bridge._context()
            parse_freshness(context)
        except BaseException:
            conn.close()
            raise
        return bridge

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- EditorBridge ---------------------------------------------------------------------

    @property
    def timeout(self) -> float:
        """The editor request timeout, in seconds."""
        return self._conn.timeout

    def workspace(self) -> str:
        """Rose's resolved workspace root, asked of Rose now (``editor_context``).

        Returns:
            The ``realpath`` of the workspace Rose reports.

        Raises:
            EditorError: ``editor_workspace_mismatch`` when it is not Flow's (checked on every
                editor_context and file_* result too), or any request failure.
        """
        return _realpath(str(self._context()["workspace"]))

    def tool_schemas(self) -> list[dict[str, Any]]:
        """Every allowlisted tool Rose offered at attach, sorted by name.

        Returns:
            Copies of ``{"name", "description", "inputSchema", "readOnly"}`` entries;
            ``editor_debug``'s schema only allows ``{"action": "status"}``.
        """
        return [copy.deepcopy(self._schemas[n]) for n in sorted(self._schemas)]

    def tool_schemas_for(self, role: Role) -> list[dict[str, Any]]:
        """The tool schemas one role may see.

        Args:
            role: planner and reviewer get only the read-only tools; the coder also gets
                editor_lint and editor_check (``flow_core.role_tools`` for a trusted session:
                Flow's own toolset narrows an untrusted coder further).
        """
        schemas = self.tool_schemas()
        allowed = role_tools(role, trusted=True, editor_tools=[s["name"] for s in schemas])
        return [s for s in schemas if s["name"] in allowed]

    def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, role: Role | None = None
    ) -> dict[str, Any]:
        """Call one allowlisted editor tool that Rose offered at attach.

        Args:
            name: a name from ``tool_schemas()``.
            arguments: the tool's JSON object arguments.
            role: when given, lint and check are refused for the planner and reviewer.

        Returns:
            Rose's result object (a non-object result is wrapped as ``{"result": value}``).

        Raises:
            EditorError: ``editor_tool_unknown`` (not allowlisted or not offered),
                ``editor_tool_denied`` (file_read/file_write, a role without the tool,
                an editor_debug action other than status), ``editor_arguments_invalid``,
                ``editor_tool_error`` (Rose reported an error), or connection errors.
        """
        if name in _FILE_TOOLS:
            raise editor_error(
                "editor_tool_denied",
                f"{name} is reserved for Flow's own validated file tools, not a model tool",
            )
        if name not in EDITOR_TOOLS:
            raise editor_error("editor_tool_unknown", f"{name!r} is not an allowed editor tool")
        if name not in self._schemas:
            raise editor_error("editor_tool_unknown", f"Rose did not offer {name} at attach")
        if role is not None and name not in role_tools(role, trusted=True, editor_tools=(name,)):
            raise editor_error(
                "editor_tool_denied", f"the {role} role is read-only and cannot call {name}"
            )
        if not isinstance(arguments, Mapping):
            raise editor_error(
                "editor_arguments_invalid", f"arguments for {name} must be a JSON object"
            )
        if name == "editor_debug":
            action = arguments.get("action", "status")
            if action != "status":
                raise editor_error(
                    "editor_tool_denied",
                    f"editor_debug action {action!r} is not available; only 'status' is",
                )
            arguments = {"action": "status"}
        result = unwrap(name, self._conn.call(name, arguments))
        if isinstance(result, dict):
            return result
        return {"result": result}

    def read_file(self, rel: str) -> str:
        """Buffer-aware read through Rose's ``file_read``.

        Flow has already validated ``rel`` (path, trust, role, size, protected files).

        Args:
            rel: workspace-relative, ``/``-separated path.

        Returns:
            The text Rose reports (a loaded buffer's text, else the file on disk).

        Raises:
            EditorError: ``editor_workspace_mismatch`` when the result's workspace is not
                Flow's, ``editor_tool_error`` (e.g. not found), ``editor_protocol``, or
                connection errors.
        """
        result = self._file_call("file_read", {"path": rel, "workspace": self._workspace}, rel)
        text = result.get("text")
        if not isinstance(text, str):
            raise editor_error("editor_protocol", f"Rose's file_read of {rel} returned no text")
        return text

    def write_file(self, rel: str, text: str) -> None:
        """Buffer-aware write through Rose's ``file_write``.

        Rose refuses when the file's buffer has unsaved changes or is read-only
        (``editor_refused``, the user's text untouched); a loaded clean buffer is updated to
        the written text. There is no fallback to writing the disk directly.

        Args:
            rel: workspace-relative, ``/``-separated path, already validated by Flow.
            text: the whole new content.

        Raises:
            EditorError: ``editor_refused``, ``editor_workspace_mismatch``,
                ``editor_protocol`` (e.g. Rose reports a different byte count),
                ``editor_tool_error`` or connection errors.
        """
        if not isinstance(text, str):
            raise editor_error("editor_arguments_invalid", "file_write text must be a string")
        result = self._file_call(
            "file_write", {"path": rel, "text": text, "workspace": self._workspace}, rel
        )
        written = result.get("bytes")
        expected = len(text.encode("utf-8"))
        if not isinstance(written, int) or isinstance(written, bool) or written != expected:
            raise editor_error(
                "editor_protocol",
                f"Rose's file_write of {rel} reported {written!r} bytes, expected {expected}",
            )

    def freshness(self) -> EditorFreshness:
        """Rose's freshness API v1 state, read from ``editor_context``.

        Returns:
            Dirty buffers (every modified buffer in the workspace, not only the current one)
            and the workspace snapshot token.

        Raises:
            EditorError: ``editor_freshness_missing`` when any v1 field is absent or not v1
                (fail closed), ``editor_workspace_mismatch``, or connection errors.
        """
        return parse_freshness(self._context())

    def lint(self, paths: Sequence[str]) -> EditorLintResult:
        """Run Rose's native linter (``editor_lint``) over workspace-relative paths.

        Only ``status == "ok"`` with ``verified`` true, ``error_count == 0``, ``stale`` false
        and a non-empty covered file list gives ``verified=True``; the covered files are those
        Rose names that were asked for. A missing LSP stays ``"unavailable"``; a malformed or
        failed result is ``"error"``; cached diagnostics without a lint run (``verified``
        false) never verify.

        Args:
            paths: workspace-relative paths to lint.

        Raises:
            EditorError: connection errors (unavailable, timeout); Rose's own reported
                failures come back as ``status="error"`` instead.
        """
        wanted = tuple(paths)
        if "editor_lint" not in self._schemas:
            return EditorLintResult(
                status="unavailable",
                verified=False,
                files=(),
                message="Rose does not offer editor_lint",
            )
        try:
            result = unwrap("editor_lint", self._conn.call("editor_lint", {"paths": wanted}))
        except EditorError as err:
            if err.code not in {"editor_tool_error", "editor_protocol"}:
                raise
            return EditorLintResult(status="error", verified=False, files=(), message=str(err))
        return lint_result(result, wanted)

    def close(self) -> None:
        """Close the connection on its worker thread (idempotent)."""
        self._conn.close()

    # -- helpers ----------------------------------------------------------------------------

    def _context(self) -> dict[str, Any]:
        result = unwrap("editor_context", self._conn.call("editor_context", {}))
        if not isinstance(result, dict):
            raise editor_error("editor_protocol", "Rose's editor_context result is not an object")
        self._check_workspace("editor_context", result)
        return result

    def _file_call(self, name: str, arguments: dict[str, Any], rel: str) -> dict[str, Any]:
        result = unwrap(name, self._conn.call(name, arguments), refusals=_REFUSAL_CODES)
        if not isinstance(result, dict):
            raise editor_error("editor_protocol", f"Rose's {name} result is not an object")
        self._check_workspace(name, result)
        if result.get("path") != rel:
            raise editor_error(
                "editor_protocol",
                f"Rose's {name} answered for {result.get('path')!r}, not for {rel!r}",
            )
        return result

    def _check_workspace(self, name: str, result: Mapping[str, Any]) -> None:
        theirs = result.get("workspace")
        if not isinstance(theirs, str) or not os.path.isabs(theirs):
            raise editor_error(
                "editor_workspace_mismatch",
                f"Rose's {name} result names no absolute workspace; refusing to continue",
            )
        if _realpath(theirs) != self._workspace:
            raise editor_error(
                "editor_workspace_mismatch",
                f"Rose's workspace {theirs!r} is not Flow's workspace {self._workspace!r}; "
                "start Rose and Flow on the same directory",
            )
