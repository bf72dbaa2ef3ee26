"""The catalogue of every stable error code Flow itself reports, with its meaning and fix.

Codes appear as ``FlowError.code``, ``ErrorInfo.code`` in reports, ``ToolCallRecord.error``
and ``CheckResult.error.code``. They never change meaning once released. Codes from
flow-safeio (file tools refusing a path) and from flow-rose (the editor bridge,
:data:`EDITOR_ERROR_CODES`, re-exported as ``flow_rose.EDITOR_ERROR_CODES``) are registered
here too, so every code Flow reports has exactly one entry.

Each code also has a *category* (:data:`ERROR_CATEGORIES`): ``usage`` (fix the command line
or the configuration; CLI exit code 2), ``failure`` (the work failed; exit 1) or
``interrupted`` (Ctrl-C or SIGTERM; exit 130). Codes not named in the usage or interrupted
sets below are failures. The CLI's exit codes and the MCP tools' ``isError`` are derived from
these categories (``flow_core.exit_code_for``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

from flow_core._advice import ADVICE
from flow_core._protocols import EDITOR_TIMEOUT_MAX, EDITOR_TIMEOUT_MIN
from flow_core.models._http import BACKEND_ERROR_CODES
from flow_core.models._parse import REPLY_ISSUE_CODES
from flow_core.run._baseline import BASELINE_CODES
from flow_core.run._preflight import PREFLIGHT_CODES
from flow_safeio import ERROR_CODES as _SAFEIO_CODES

__all__ = [
    "EDITOR_ERROR_CODES",
    "ERROR_CATEGORIES",
    "ERROR_CODES",
    "EXIT_CODES",
    "ErrorCategory",
    "Explanation",
    "error_category",
    "explain_error",
]

_FLOW_CODES: dict[str, str] = {
    # errors raised by flow-core (see _errors.py)
    "flow_error": "an unexpected Flow failure; the message says what happened",
    "config_invalid": "a config key is unknown, has the wrong type or an invalid value; "
    "fix the key named in the message, in the file named there",
    "config_syntax": "a config file is not valid TOML; fix the line named in the message",
    "config_not_found": "the --config file does not exist or cannot be read; give an existing "
    "absolute path",
    "config_unsafe": "the --config file lies inside the workspace, or others can write it or a "
    "folder above it; move it outside the project and make it writable by you only",
    "check_unknown": "no [checks.NAME] table defines that check name; use a configured name "
    "(flow status lists them)",
    "not_trusted": "writes and named checks need --trusted; without it a run only plans",
    "backend_error": "the model server failed in a way no narrower code describes",
    "editor_error": "the Rose editor bridge failed; see EDITOR_ERROR_CODES",
    "script_exhausted": "a ScriptedBackend was asked for more replies than its script holds",
    # reported by the front ends (flow-cli, flow-mcp) in their error reports
    "usage_error": "the command line was not understood (unknown option, missing argument); "
    "see --help",
    "internal_error": "Flow failed unexpectedly; the traceback is on stderr; please report it",
    "interrupted": "Ctrl-C or SIGTERM stopped the command; check process groups were killed",
    "invalid_arguments": "an MCP tool call's arguments did not match the tool's inputSchema",
    "cancelled": "the MCP client cancelled the request (notifications/cancelled) or closed "
    "stdin while it ran; checks were killed and the run's edits rolled back",
    "rollback_incomplete": "files a cancelled run created or changed were left in place (an "
    "editor bridge cannot delete files); the message names them; review or remove them",
    # named checks (verify/_checks.py)
    "check_failed": "the check ran and exited with a non-zero status",
    "check_timeout": "the check ran past its timeout (milliseconds); its process group was "
    "killed; raise checks.NAME.timeout or speed the command up",
    "check_limit": "the check ran into a whole-check limit of [sandbox] (memory_mib: the kernel "
    "ended it; processes: a fork was refused; cpu_seconds: Flow ended it; disk_mib: its disk was "
    "full when it ended); the message names the limit",
    "check_missing": "the check's executable does not exist; fix checks.NAME.cmd[0] or install "
    "it in the project's environment",
    "check_refused": "the check was not started: an editor buffer has unsaved changes; save "
    "or discard them",
    "check_interrupted": "the check was stopped by Ctrl-C or SIGTERM; its process group was killed",
    "check_error": "the check could not be started (permission, exec format, ...)",
    "check_executable_changed": "the check's executable is not the file that was there when "
    "the config was loaded (replaced or re-linked); review it, then start Flow again",
    "sandbox_unavailable": 'sandbox.mode = "bwrap" but bubblewrap cannot run here; install the '
    'bubblewrap package, or set sandbox.mode = "auto" to run checks unjailed with a warning',
    "check_evidence": "the check exited 0 but its structured test results do not prove a pass "
    "(missing, unparsable, no test, a failure, or a baseline test removed, renamed or newly "
    "skipped); the message lists which",
    # model tools (tools/_toolbox.py)
    "tool_unknown": "the model called a tool its role does not have",
    "tool_invalid_arguments": "the model's tool arguments were missing or of the wrong type",
    "weak_evidence": "a test check's pass rests on its exit status alone: Flow reads no test "
    "results from its runner",
    "changes_what_runs": "a write would change which code runs beyond what it shows (a module "
    "shadowing a standard-library, installed or workspace module, a non-UTF-8 encoding "
    "declaration, a Python startup file) or escape the linters (a lint-excluded location); "
    "the message names the rule",
    "edit_no_match": "edit_file's old_text occurs nowhere in the file (exact match only)",
    "edit_ambiguous": "edit_file's old_text occurs more than once; it must match exactly once",
    "search_bad_regex": "search_text's query is not a valid Python regular expression; fix "
    "it or search literally (regex false)",
    "search_timeout": "search_text's regular expression ran past its time bound (seconds) and "
    "its process was killed; simplify the pattern or search literally",
    "search_unavailable": "search_text could not start the process that runs regular "
    "expressions; search literally (regex false)",
    # the runtime (run/_runtime.py)
    "not_verified": "the run finished but is not verified: a condition of the gate did not "
    "hold (a required check, static coverage, the review, or a change underneath); the "
    "reasons are listed",
    "no_checks": "no named checks are configured, so nothing can be verified; add a "
    "[checks.NAME] table",
    "budget_iterations": "a role used agent.max_iterations model turns without finishing",
    "budget_time": "the run reached its wall-clock limit, agent.max_seconds; the model request "
    "in flight was closed and no role started after it",
    "budget_tool_calls": "the run reached agent.max_tool_calls; further calls were refused",
    "context_budget": "a role's context could not be trimmed under agent.max_context_chars",
    "schema_echo": "a tool call's argument was text copied from the tool's schema (a "
    "description or a placeholder), not a value; the role ended early",
    "repeated_call": "a role repeated an identical tool call more than agent.max_repeated_calls "
    "times with no change in between; the role ended early",
    "no_progress": "a role went agent.max_idle_turns turns in a row without a new successful "
    "tool call or an answer; the role ended early",
    "reply_cap": "a reply stopped at its token cap (max_reply_tokens) before the context "
    "window was full; what it held was not run",
    "review_invalid": "the reviewer's reply was not valid JSON matching the review schema",
    # the run store (store/): records, undo, apply, isolated runs
    "apply_conflict": "a file an isolated run changed is no longer what the run started from "
    "in the workspace; nothing was applied and the patch is kept (flow show ID --diff)",
    "apply_refused": "the run is not an isolated one, or its change was already applied",
    "isolate_failed": "the isolated tree (git worktree or private copy) could not be made; "
    "the message says why; run without --isolate or fix the repository",
    "run_not_found": "no run record has that id (or the prefix matches several); flow runs "
    "lists them",
    "run_store_full": "a write was refused because its pre-image does not fit the run record "
    "([runs] max_run_bytes); raise it or make smaller changes",
    "run_store_unusable": "the run store cannot be created or lies inside the workspace; set "
    "XDG_STATE_HOME to a private directory outside the project",
    "workspace_busy": "another run, undo or apply is writing the same workspace; nothing was "
    "written (the message names it); wait, run with --isolate, or set [runs] when_busy",
    "undo_conflict": "a file changed after the run, so undo changed nothing; look at it, then "
    "flow undo ID --force",
    "undo_failed": "a stored image is missing or corrupt, or a file could not be written "
    "safely; whatever was written was put back",
    "undo_nothing": "the run has nothing to undo: isolated and never applied, or already undone",
}


#: The editor bridge's codes (flow-rose raises each as ``flow_core.EditorError``).
EDITOR_ERROR_CODES: Mapping[str, str] = MappingProxyType(
    {
        "editor_socket_invalid": "the --nvim value is not an absolute path to an existing Unix "
        "socket owned by the user",
        "editor_socket_tcp": "the --nvim value looks like a TCP address (host:port or an IP); "
        "only a private Unix socket is accepted",
        "editor_socket_public": "the socket is reachable by other users: put it in a 0700 "
        "directory you own, or remove its group/other permission bits",
        "editor_socket_dir_unsafe": "another user could replace the socket: its directory is "
        "not yours or others can write it, or a directory or symbolic link on the way belongs "
        "to another user (not root) or is writable by others without the sticky bit; use a "
        "0700 directory of yours",
        "editor_socket_peer": "the process listening on the socket does not run as the user "
        "(its uid is read from the connected socket: SO_PEERCRED, LOCAL_PEERCRED) or the uid "
        "cannot be read; the socket may have been swapped after it was checked; the "
        "connection is closed unused",
        "editor_unavailable": "Neovim could not be reached, went away (killed, socket closed) or "
        "the bridge was already closed or failed, or the bridge is not installed; reconnect",
        "editor_timeout": "Neovim did not answer within the editor request timeout (seconds); "
        "the connection is closed because its state is unknown",
        "editor_timeout_invalid": "the editor request timeout (seconds) is outside "
        f"{EDITOR_TIMEOUT_MIN:g}-{EDITOR_TIMEOUT_MAX:g}",
        "editor_protocol": "Rose answered in a shape that breaks the documented rose.tools "
        "contract",
        "editor_workspace_mismatch": "Rose's resolved workspace is not Flow's workspace "
        "(compared after resolving symlinks); start both with the same absolute workspace",
        "editor_freshness_missing": "Rose's editor_context lacks a freshness API v1 field; "
        "Flow fails closed",
        "editor_refused": "Rose refused a buffer-aware file operation (unsaved or read-only "
        "buffer) to protect the user's text",
        "editor_tool_unknown": "the tool is not on the bridge's allowlist or Rose did not "
        "offer it at attach",
        "editor_tool_denied": "the tool or action is not allowed here (lint/check for a "
        "read-only role, an editor_debug action other than status)",
        "editor_tool_error": "Rose ran the tool and reported an error",
        "editor_arguments_invalid": "tool arguments are not a JSON object (or not JSON at all)",
    }
)

ErrorCategory = Literal["usage", "failure", "interrupted"]

#: The process exit code of each category (``flow status|check|run``; 0 is success).
EXIT_CODES: Final[Mapping[ErrorCategory, int]] = MappingProxyType(
    {"usage": 2, "failure": 1, "interrupted": 130}
)

#: Codes that mean "fix the command line or the configuration" (CLI exit code 2).
_USAGE: Final = frozenset(
    {
        "check_unknown",
        "config_invalid",
        "config_not_found",
        "config_syntax",
        "config_unsafe",
        "editor_socket_dir_unsafe",
        "editor_socket_invalid",
        "editor_socket_peer",
        "editor_socket_public",
        "editor_socket_tcp",
        "editor_timeout_invalid",
        "invalid_arguments",
        "isolate_failed",
        "not_trusted",
        "baseline_failing",
        "preflight_check_missing",
        "preflight_empty_task",
        "preflight_model_missing",
        "preflight_no_required_check",
        "preflight_tree_too_large",
        "preflight_workspace_missing",
        "run_not_found",
        "run_store_unusable",
        "sandbox_unavailable",
        "usage_error",
    }
)
#: Codes that mean Ctrl-C, SIGTERM or the MCP client stopped the work (CLI exit code 130).
_INTERRUPTED: Final = frozenset({"cancelled", "check_interrupted", "interrupted"})


def _merge(*tables: Mapping[str, str]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for table in tables:
        for code, meaning in table.items():
            merged.setdefault(code, meaning)
    return merged


#: Every code flow-core can report, mapped to a one-line meaning and, where one exists, the fix.
ERROR_CODES: Mapping[str, str] = MappingProxyType(
    _merge(
        _FLOW_CODES,
        PREFLIGHT_CODES,
        BASELINE_CODES,
        BACKEND_ERROR_CODES,
        REPLY_ISSUE_CODES,
        EDITOR_ERROR_CODES,
        _SAFEIO_CODES,
    )
)

#: The category of every code in :data:`ERROR_CODES`.
ERROR_CATEGORIES: Mapping[str, ErrorCategory] = MappingProxyType(
    {
        code: "usage" if code in _USAGE else "interrupted" if code in _INTERRUPTED else "failure"
        for code in ERROR_CODES
    }
)


def error_category(code: str) -> ErrorCategory:
    """The category of ``code``; a code missing from the catalogue counts as a failure."""
    return ERROR_CATEGORIES.get(code, "failure")


@dataclass(frozen=True, slots=True)
class Explanation:
    """What ``flow explain CODE`` prints for one error code.

    Attributes:
        code: the stable code.
        category: ``usage``, ``failure`` or ``interrupted``.
        exit_code: the CLI exit code the category gives (2, 1 or 130).
        meaning: the catalogue's one-line meaning (:data:`ERROR_CODES`).
        cause: the usual cause.
        fix: what to do.
    """

    code: str
    category: ErrorCategory
    exit_code: int
    meaning: str
    cause: str
    fix: str


def explain_error(code: str) -> Explanation | None:
    """The explanation of ``code`` from the catalogue, or None for an unknown code."""
    meaning = ERROR_CODES.get(code)
    if meaning is None:
        return None
    cause, fix = ADVICE.get(code, ("not recorded", "read the message that came with the code"))
    category = error_category(code)
    return Explanation(code, category, EXIT_CODES[category], meaning, cause, fix)
