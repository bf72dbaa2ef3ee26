"""The catalogue of every stable error code Flow itself reports, with its meaning and fix.

Codes appear as ``FlowError.code``, ``ErrorInfo.code`` in reports, ``ToolCallRecord.error``
and ``CheckResult.error.code``. They never change meaning once released. Codes from
flow-safeio (file tools refusing a path) are included; flow-rose documents the editor bridge's
own codes in ``flow_rose.EDITOR_ERROR_CODES``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from flow_core.models._http import BACKEND_ERROR_CODES
from flow_core.models._parse import REPLY_ISSUE_CODES
from flow_core.run._preflight import PREFLIGHT_CODES
from flow_safeio import ERROR_CODES as _SAFEIO_CODES

__all__ = ["ERROR_CODES"]

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
    "editor_error": "the Rose editor bridge failed; see flow_rose.EDITOR_ERROR_CODES",
    "editor_workspace_mismatch": "Rose's workspace root differs from Flow's; start both with "
    "the same absolute workspace",
    "script_exhausted": "a ScriptedBackend was asked for more replies than its script holds",
    # reported by the front ends (flow-cli, flow-mcp) in their error reports
    "usage_error": "the command line was not understood (unknown option, missing argument); "
    "see --help",
    "internal_error": "Flow failed unexpectedly; the traceback is on stderr; please report it",
    "interrupted": "Ctrl-C or SIGTERM stopped the command; check process groups were killed",
    "invalid_arguments": "an MCP tool call's arguments did not match the tool's inputSchema",
    "editor_unavailable": "the Rose editor bridge could not be reached or stopped answering",
    "cancelled": "the MCP client cancelled the request (notifications/cancelled) or closed "
    "stdin while it ran; checks were killed and the run's edits rolled back",
    "rollback_incomplete": "files a cancelled run created or changed were left in place (an "
    "editor bridge cannot delete files); the message names them; review or remove them",
    # named checks (verify/_checks.py)
    "check_failed": "the check ran and exited with a non-zero status",
    "check_timeout": "the check ran past its timeout (milliseconds); its process group was "
    "killed; raise checks.NAME.timeout or speed the command up",
    "check_missing": "the check's executable does not exist; fix checks.NAME.cmd[0] or install "
    "it in the project's environment",
    "check_refused": "the check was not started: an editor buffer has unsaved changes; save "
    "or discard them",
    "check_interrupted": "the check was stopped by Ctrl-C or SIGTERM; its process group was killed",
    "check_error": "the check could not be started (permission, exec format, ...)",
    "check_executable_changed": "the check's executable is not the file that was there when "
    "the config was loaded (replaced or re-linked); review it, then start Flow again",
    # model tools (tools/_toolbox.py)
    "tool_unknown": "the model called a tool its role does not have",
    "tool_invalid_arguments": "the model's tool arguments were missing or of the wrong type",
    "edit_no_match": "edit_file's old_text occurs nowhere in the file (exact match only)",
    "edit_ambiguous": "edit_file's old_text occurs more than once; it must match exactly once",
    "search_bad_regex": "search_text's query is not a valid Python regular expression; fix "
    "it or search literally (regex false)",
    "search_timeout": "search_text's regular expression ran past its time bound (seconds) and "
    "its process was killed; simplify the pattern or search literally",
    # the runtime (run/_runtime.py)
    "no_checks": "no named checks are configured, so nothing can be verified; add a "
    "[checks.NAME] table",
    "budget_iterations": "a role used agent.max_iterations model turns without finishing",
    "budget_tool_calls": "the run reached agent.max_tool_calls; further calls were refused",
    "context_budget": "a role's context could not be trimmed under agent.max_context_chars",
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
    "undo_conflict": "a file changed after the run, so undo changed nothing; look at it, then "
    "flow undo ID --force",
    "undo_failed": "a stored image is missing or corrupt, or a file could not be written "
    "safely; whatever was written was put back",
    "undo_nothing": "the run has nothing to undo: isolated and never applied, or already undone",
}


def _merge(*tables: Mapping[str, str]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for table in tables:
        for code, meaning in table.items():
            merged.setdefault(code, meaning)
    return merged


#: Every code flow-core can report, mapped to a one-line meaning and, where one exists, the fix.
ERROR_CODES: Mapping[str, str] = MappingProxyType(
    _merge(_FLOW_CODES, PREFLIGHT_CODES, BACKEND_ERROR_CODES, REPLY_ISSUE_CODES, _SAFEIO_CODES)
)
