"""Every error code Flow reports, as one table of typed rows: code, category, meaning, cause, fix.

This module is a table of data, long because it holds one row per code and no logic to split
by job. Each row is one code: its category (``usage``: fix the command line or the
configuration, CLI exit 2; ``failure``: the work failed, exit 1; ``interrupted``: Ctrl-C, SIGTERM
or a cancelled MCP request, exit 130), the area that raises it (flow-core itself, preflight, the
baseline check, the HTTP backends, the reply parser, the Rose editor bridge, flow-safeio), its
one-line meaning, and the usual cause and fix ``flow explain CODE`` prints. ``ErrorCode`` names
every code as a ``Literal``, so a misspelt code at a call site (``FlowError(..., code="...")``)
fails mypy; a test keeps the ``Literal`` and the rows one set. flow-safeio's rows take their
meaning from ``flow_safeio.ERROR_CODES`` (that package cannot depend on this one). The views the
rest of Flow reads (``ERROR_CODES``, ``ERROR_CATEGORIES``, ``BACKEND_ERROR_CODES``, ...) are
derived from these rows in ``flow_core._catalogue``. A new code is one new row here plus its name
in ``ErrorCode``. Source of the rule: ``docs/architecture.md``, "Exit codes".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from flow_core._roles import EDITOR_TIMEOUT_MAX, EDITOR_TIMEOUT_MIN
from flow_safeio import ERROR_CODES as _SAFEIO

__all__ = ["ROWS", "Area", "CodeRow", "ErrorCategory", "ErrorCode"]

ErrorCategory: TypeAlias = Literal["usage", "failure", "interrupted"]

#: Who raises a code: flow-core itself and its front ends, the run's preflight, the baseline
#: check run before any model request, the HTTP backends, the reply parser, the Rose editor
#: bridge, flow-safeio's file rules.
Area: TypeAlias = Literal["flow", "preflight", "baseline", "backend", "reply", "editor", "safeio"]

#: Every code, by name (one per row of ``ROWS``).
ErrorCode: TypeAlias = Literal[
    "flow_error",
    "config_invalid",
    "config_syntax",
    "config_not_found",
    "config_unsafe",
    "check_unknown",
    "not_trusted",
    "backend_error",
    "editor_error",
    "script_exhausted",
    "usage_error",
    "internal_error",
    "interrupted",
    "invalid_arguments",
    "cancelled",
    "rollback_incomplete",
    "check_failed",
    "check_timeout",
    "check_limit",
    "check_missing",
    "check_refused",
    "check_interrupted",
    "check_error",
    "check_executable_changed",
    "sandbox_unavailable",
    "check_evidence",
    "tool_unknown",
    "tool_invalid_arguments",
    "weak_evidence",
    "changes_what_runs",
    "edit_no_match",
    "edit_ambiguous",
    "search_bad_regex",
    "search_timeout",
    "search_unavailable",
    "not_verified",
    "no_checks",
    "budget_iterations",
    "budget_time",
    "budget_tool_calls",
    "context_budget",
    "schema_echo",
    "repeated_call",
    "no_progress",
    "reply_cap",
    "review_invalid",
    "apply_conflict",
    "apply_refused",
    "isolate_failed",
    "run_not_found",
    "run_store_full",
    "run_store_unusable",
    "workspace_busy",
    "undo_conflict",
    "undo_failed",
    "undo_nothing",
    "preflight_check_missing",
    "preflight_empty_task",
    "preflight_model_missing",
    "preflight_no_required_check",
    "preflight_workspace_missing",
    "preflight_tree_too_large",
    "check_timeout_short",
    "baseline_failing",
    "baseline_passing",
    "backend_unreachable",
    "backend_timeout",
    "backend_http",
    "model_not_found",
    "backend_malformed",
    "response_too_large",
    "redirect_refused",
    "remote_refused",
    "backend_closed",
    "request_unencodable",
    "prompt_too_long",
    "text_tool_call",
    "arguments_as_string",
    "unknown_tool",
    "empty_reply",
    "reasoning_only",
    "reply_too_large",
    "context_overflow",
    "call_cut_off",
    "ambiguous_call",
    "invalid_unicode",
    "editor_socket_invalid",
    "editor_socket_tcp",
    "editor_socket_public",
    "editor_socket_dir_unsafe",
    "editor_socket_peer",
    "editor_unavailable",
    "editor_timeout",
    "editor_timeout_invalid",
    "editor_protocol",
    "editor_workspace_mismatch",
    "editor_freshness_missing",
    "editor_refused",
    "editor_tool_unknown",
    "editor_tool_denied",
    "editor_tool_error",
    "editor_arguments_invalid",
    "io_error",
    "path_invalid",
    "path_outside",
    "git_path",
    "protected",
    "generated_path",
    "symlink",
    "hardlink",
    "not_regular_file",
    "is_directory",
    "not_directory",
    "not_found",
    "too_large",
    "not_text",
    "root_invalid",
    "root_stale",
    "closed",
]


@dataclass(frozen=True, slots=True)
class CodeRow:
    """One error code.

    Attributes:
        code: the stable code string.
        category: ``usage``, ``failure`` or ``interrupted`` (the CLI exit code follows from it).
        area: who raises it (see ``Area``).
        meaning: one line: what the code means (``flow explain`` and ``ERROR_CODES``).
        cause: the usual cause, in the user's terms.
        fix: what to do.
        also: further areas whose code tables list it, each with the meaning it has there
            (``invalid_arguments`` is both an MCP argument error and a reply issue).
    """

    code: ErrorCode
    category: ErrorCategory
    area: Area
    meaning: str
    cause: str
    fix: str
    also: tuple[tuple[Area, str], ...] = ()


ROWS: tuple[CodeRow, ...] = (
    CodeRow(
        "flow_error",
        "failure",
        "flow",
        "an unexpected Flow failure; the message says what happened",
        "a failure inside Flow that has no narrower code",
        "read the message; if it looks like a bug, report it with the command you ran",
    ),
    CodeRow(
        "config_invalid",
        "usage",
        "flow",
        "a config key is unknown, has the wrong type or an invalid value; fix the key named in "
        "the message, in the file named there",
        "a misspelt key, a string where a number belongs, or a value out of range",
        "correct the key the message names, in the file it names (flow status shows which files "
        "were read)",
    ),
    CodeRow(
        "config_syntax",
        "usage",
        "flow",
        "a config file is not valid TOML; fix the line named in the message",
        "a missing quote or bracket, or a key repeated in one table",
        "fix the TOML at the line and column the message gives",
    ),
    CodeRow(
        "config_not_found",
        "usage",
        "flow",
        "the --config file does not exist or cannot be read; give an existing absolute path",
        "a relative or mistyped --config path",
        "pass the absolute path of an existing, readable TOML file",
    ),
    CodeRow(
        "config_unsafe",
        "usage",
        "flow",
        "the --config file lies inside the workspace, or others can write it or a folder above "
        "it; move it outside the project and make it writable by you only",
        "an operator config kept in the project (a cloned repository could ship one) or a file "
        "others can write",
        "a config in the project: move it out (e.g. ~/.config/flow/<project>.toml); a file or "
        "folder others can write: chmod go-w it, or keep the config in a folder of your own",
    ),
    CodeRow(
        "check_unknown",
        "usage",
        "flow",
        "no [checks.NAME] table defines that check name; use a configured name (flow status lists "
        "them)",
        "a typo in flow check NAME or /check NAME",
        "use one of the names flow status lists under configured_checks",
    ),
    CodeRow(
        "not_trusted",
        "usage",
        "flow",
        "writes and named checks need --trusted; without it a run only plans",
        "flow run/check or the MCP tools started without --trusted",
        "review the [checks.*] commands in your operator config, then add --trusted",
    ),
    CodeRow(
        "backend_error",
        "failure",
        "flow",
        "the model server failed in a way no narrower code describes",
        "an unusual failure of the model server",
        "read the message and the server's log",
    ),
    CodeRow(
        "editor_error",
        "failure",
        "flow",
        "the Rose editor bridge failed; see EDITOR_ERROR_CODES",
        "the Rose editor bridge failed",
        "see the editor_* codes and restart Neovim with Rose if needed",
    ),
    CodeRow(
        "script_exhausted",
        "failure",
        "flow",
        "a ScriptedBackend was asked for more replies than its script holds",
        "a test's ScriptedBackend ran out of replies",
        "give the script as many replies as the run makes model requests",
    ),
    CodeRow(
        "usage_error",
        "usage",
        "flow",
        "the command line was not understood (unknown option, missing argument); see --help",
        "an unknown option or a missing argument",
        "see flow --help or flow COMMAND --help",
    ),
    CodeRow(
        "internal_error",
        "failure",
        "flow",
        "Flow failed unexpectedly; the traceback is on stderr; please report it",
        "a bug in Flow",
        "report it with the traceback printed on stderr and the command you ran",
    ),
    CodeRow(
        "interrupted",
        "interrupted",
        "flow",
        "Ctrl-C or SIGTERM stopped the command; check process groups were killed",
        "Ctrl-C or SIGTERM while the command worked",
        "nothing to fix; run the command again when you want; flow runs and flow undo show and "
        "undo what a run left",
    ),
    CodeRow(
        "invalid_arguments",
        "usage",
        "flow",
        "an MCP tool call's arguments did not match the tool's inputSchema",
        "an MCP client sent arguments that do not match the tool's inputSchema",
        "send the arguments the tool's inputSchema describes (tools/list shows it)",
        also=(
            (
                "reply",
                "tool arguments were not a JSON object of valid Unicode text and finite numbers "
                "(the call was dropped)",
            ),
        ),
    ),
    CodeRow(
        "cancelled",
        "interrupted",
        "flow",
        "the MCP client cancelled the request (notifications/cancelled) or closed stdin while it "
        "ran; checks were killed and the run's edits rolled back",
        "the MCP client sent notifications/cancelled or closed stdin during the run",
        "nothing to fix; call the tool again when you want",
    ),
    CodeRow(
        "rollback_incomplete",
        "failure",
        "flow",
        "files a cancelled run created or changed were left in place (an editor bridge cannot "
        "delete files); the message names them; review or remove them",
        "a cancelled run created files through the editor bridge, which cannot delete them",
        "review the files the message names and remove those you do not want",
    ),
    CodeRow(
        "check_failed",
        "failure",
        "flow",
        "the check ran and exited with a non-zero status",
        "the project's tests or linter found a problem",
        "read the check's output in the report (checks[].output_tail) and fix the code, or run "
        "flow check NAME to reproduce",
    ),
    CodeRow(
        "check_timeout",
        "failure",
        "flow",
        "the check ran past its timeout (milliseconds); its process group was killed; raise "
        "checks.NAME.timeout or speed the command up",
        "a slow or hanging command, or a timeout written in seconds",
        "raise checks.NAME.timeout (milliseconds) or make the command faster",
    ),
    CodeRow(
        "check_limit",
        "failure",
        "flow",
        "the check ran into a whole-check limit of [sandbox] (memory_mib: the kernel ended it; "
        "processes: a fork was refused; cpu_seconds: Flow ended it; disk_mib: its disk was full "
        "when it ended); the message names the limit",
        "the check's processes together used more memory than sandbox.memory_mib, more processes "
        "than sandbox.processes, more CPU time than sandbox.cpu_seconds, or wrote more than "
        "sandbox.disk_mib (a runaway test, a fork bomb, a log that fills the disk)",
        "fix the test if it runs away; otherwise raise the named [sandbox] limit",
    ),
    CodeRow(
        "check_missing",
        "failure",
        "flow",
        "the check's executable does not exist; fix checks.NAME.cmd[0] or install it in the "
        "project's environment",
        "the tool is not installed in the project's environment, or cmd[0] is misspelt",
        "install it, or correct checks.NAME.cmd[0]",
    ),
    CodeRow(
        "check_refused",
        "failure",
        "flow",
        "the check was not started: an editor buffer has unsaved changes; save or discard them",
        "an unsaved buffer in the editor",
        "save or discard the buffer, then run the check again",
    ),
    CodeRow(
        "check_interrupted",
        "interrupted",
        "flow",
        "the check was stopped by Ctrl-C or SIGTERM; its process group was killed",
        "Ctrl-C, SIGTERM or a cancel while the check ran",
        "nothing to fix; run it again",
    ),
    CodeRow(
        "check_error",
        "failure",
        "flow",
        "the check could not be started (permission, exec format, ...)",
        "a file without execute permission, a wrong interpreter line, or a resource limit",
        "make cmd[0] an executable program and check its first line",
    ),
    CodeRow(
        "check_executable_changed",
        "failure",
        "flow",
        "the check's executable is not the file that was there when the config was loaded "
        "(replaced or re-linked); review it, then start Flow again",
        "the program a check runs was replaced or re-linked after the config was loaded (a "
        "package upgrade, or something writing into the project)",
        "look at the program; if the change is expected, start Flow again",
    ),
    CodeRow(
        "sandbox_unavailable",
        "usage",
        "flow",
        'sandbox.mode = "bwrap" but bubblewrap cannot run here; install the bubblewrap package, '
        'or set sandbox.mode = "auto" to run checks unjailed with a warning',
        "bwrap is not installed, or this machine forbids unprivileged user namespaces (some "
        "containers, kernel.unprivileged_userns_clone = 0)",
        "install the bubblewrap package (Debian/Ubuntu: apt-get install bubblewrap), or set "
        'sandbox.mode = "auto" to run checks unjailed with a warning',
    ),
    CodeRow(
        "check_evidence",
        "failure",
        "flow",
        "the check exited 0 but its structured test results do not prove a pass (missing, "
        "unparsable, no test, a failure, or a baseline test removed, renamed or newly skipped); "
        "the message lists which",
        "the check exited 0 but its JUnit results are missing or unparsable, hold no test or a "
        "failure, or a baseline test was removed, renamed or newly skipped (a test file that ends "
        "the run early, or tests deleted to make the run pass)",
        "read evidence_problems in the check's result; restore the baseline tests and fix the "
        "code instead",
    ),
    CodeRow(
        "tool_unknown",
        "failure",
        "flow",
        "the model called a tool its role does not have",
        "the model asked for a tool its role is not given",
        "nothing to fix in the project; a stronger model or a clearer task helps",
    ),
    CodeRow(
        "tool_invalid_arguments",
        "failure",
        "flow",
        "the model's tool arguments were missing or of the wrong type",
        "the model sent arguments of the wrong type or left one out",
        "nothing to fix in the project; the model is told and may try again",
    ),
    CodeRow(
        "weak_evidence",
        "failure",
        "flow",
        "a test check's pass rests on its exit status alone: Flow reads no test results from its "
        "runner",
        "a check of kind test runs a runner Flow cannot read (not pytest, no {junit_xml}), or "
        'sets results = "exit_status"; a test file that ends the runner with status 0 then passes '
        "it",
        "run the tests with pytest (Flow adds its own --junitxml), or put {junit_xml} where the "
        'runner writes JUnit XML and set results = "junit"',
    ),
    CodeRow(
        "changes_what_runs",
        "failure",
        "flow",
        "a write would change which code runs beyond what it shows (a module shadowing a "
        "standard-library, installed or workspace module, a non-UTF-8 encoding declaration, a "
        "Python startup file) or escape the linters (a lint-excluded location); the message names "
        "the rule",
        "the model created a module named like a standard-library or installed module (or one the "
        "workspace already has), declared an encoding other than UTF-8, wrote a .pth or "
        "sitecustomize file (each changes what an import or the interpreter runs), or wrote where "
        "linters do not look (rule lint_excluded)",
        "nothing to fix in Flow: the write was refused and the run went on; the rule's reasons "
        'are in docs/architecture.md, section "Writes that change what runs"',
    ),
    CodeRow(
        "edit_no_match",
        "failure",
        "flow",
        "edit_file's old_text occurs nowhere in the file (exact match only)",
        "the model's old_text differs from the file (whitespace, stale copy)",
        "nothing to fix; the model is told the closest line and may read the file again",
    ),
    CodeRow(
        "edit_ambiguous",
        "failure",
        "flow",
        "edit_file's old_text occurs more than once; it must match exactly once",
        "the model's old_text occurs several times",
        "nothing to fix; the model is told every matching line and may give more context",
    ),
    CodeRow(
        "search_bad_regex",
        "failure",
        "flow",
        "search_text's query is not a valid Python regular expression; fix it or search literally "
        "(regex false)",
        "the model wrote an invalid regular expression",
        "nothing to fix; the model is told and may search literally",
    ),
    CodeRow(
        "search_timeout",
        "failure",
        "flow",
        "search_text's regular expression ran past its time bound (seconds) and its process was "
        "killed; simplify the pattern or search literally",
        "a regular expression with catastrophic backtracking, or a huge file",
        "nothing to fix; the model is told to simplify the pattern",
    ),
    CodeRow(
        "search_unavailable",
        "failure",
        "flow",
        "search_text could not start the process that runs regular expressions; search literally "
        "(regex false)",
        "the helper process for regular-expression search could not start (process or memory "
        "limits)",
        "nothing to fix in the project; the model is told to search literally",
    ),
    CodeRow(
        "not_verified",
        "failure",
        "flow",
        "the run finished but is not verified: a condition of the gate did not hold (a required "
        "check, static coverage, the review, or a change underneath); the reasons are listed",
        "the model's change did not pass a required check, was not covered by a static analyser, "
        "or the reviewer did not approve",
        "read the reasons and the check output; fix by hand, or run again with a clearer task or "
        "a stronger model (flow undo removes what the run left)",
    ),
    CodeRow(
        "no_checks",
        "failure",
        "flow",
        "no named checks are configured, so nothing can be verified; add a [checks.NAME] table",
        "an operator config without [checks.NAME] tables",
        'add at least one required check, e.g. [checks.tests] cmd = ["python", "-m", "pytest", '
        '"-q"]',
    ),
    CodeRow(
        "budget_iterations",
        "failure",
        "flow",
        "a role used agent.max_iterations model turns without finishing",
        "a task too large for the model, or a model that keeps calling tools",
        "split the task, use a stronger model, or raise agent.max_iterations",
    ),
    CodeRow(
        "budget_time",
        "failure",
        "flow",
        "the run reached its wall-clock limit, agent.max_seconds; the model request in flight was "
        "closed and no role started after it",
        "a slow model, a large task, or agent.max_seconds set low",
        "raise agent.max_seconds, use a faster model, or give a narrower task",
    ),
    CodeRow(
        "budget_tool_calls",
        "failure",
        "flow",
        "the run reached agent.max_tool_calls; further calls were refused",
        "a long exploration or repeated failing calls",
        "raise agent.max_tool_calls or give a narrower task",
    ),
    CodeRow(
        "context_budget",
        "failure",
        "flow",
        "a role's context could not be trimmed under agent.max_context_chars",
        "large tool results or a long task in a small budget",
        "raise agent.max_context_chars or give a narrower task",
    ),
    CodeRow(
        "schema_echo",
        "failure",
        "flow",
        "a tool call's argument was text copied from the tool's schema (a description or a "
        "placeholder), not a value; the role ended early",
        "a small model that copies the schema's descriptions instead of filling values (common "
        "below 1B parameters, and with a chat template that drops tool definitions)",
        "use a larger or tool-trained model, or turn on guided calls where the server supports "
        "them; the report's tool_calls show the copied text",
    ),
    CodeRow(
        "repeated_call",
        "failure",
        "flow",
        "a role repeated an identical tool call more than agent.max_repeated_calls times with no "
        "change in between; the role ended early",
        "a model stuck in a loop, calling the same tool with the same arguments",
        "give a narrower task naming the file, use a stronger model, or raise "
        "agent.max_repeated_calls",
    ),
    CodeRow(
        "no_progress",
        "failure",
        "flow",
        "a role went agent.max_idle_turns turns in a row without a new successful tool call or an "
        "answer; the role ended early",
        "a model whose calls fail, repeat, or break the tool format turn after turn",
        "read the role's errors in the report; use a stronger model, name the file in the task, "
        "or raise agent.max_idle_turns",
    ),
    CodeRow(
        "reply_cap",
        "failure",
        "flow",
        "a reply stopped at its token cap (max_reply_tokens) before the context window was full; "
        "what it held was not run",
        "a reply longer than max_reply_tokens (a whole file written at once, or a model that "
        "rambles); the window was not full",
        "raise max_reply_tokens in [models.options.ROLE] or the backend's options table; raising "
        "the window does not help",
    ),
    CodeRow(
        "review_invalid",
        "failure",
        "flow",
        "the reviewer's reply was not valid JSON matching the review schema",
        "the reviewer model did not answer with the review JSON",
        "use a model that follows structured output, or retry",
    ),
    CodeRow(
        "apply_conflict",
        "failure",
        "flow",
        "a file an isolated run changed is no longer what the run started from in the workspace; "
        "nothing was applied and the patch is kept (flow show ID --diff)",
        "the workspace changed while the isolated run worked",
        "look at the patch with flow show ID --diff and apply it by hand, or run again",
    ),
    CodeRow(
        "apply_refused",
        "failure",
        "flow",
        "the run is not an isolated one, or its change was already applied",
        "flow apply on a run that was not isolated or was applied already",
        "check flow runs; only an isolated, unapplied run can be applied",
    ),
    CodeRow(
        "isolate_failed",
        "usage",
        "flow",
        "the isolated tree (git worktree or private copy) could not be made; the message says "
        "why; run without --isolate or fix the repository",
        "git worktree failed (a locked repository, no commits) or the copy hit a limit",
        "run without --isolate, or fix the repository state the message names",
    ),
    CodeRow(
        "run_not_found",
        "usage",
        "flow",
        "no run record has that id (or the prefix matches several); flow runs lists them",
        "a mistyped or ambiguous run id",
        "flow runs lists the ids; give more characters of the id",
    ),
    CodeRow(
        "run_store_full",
        "failure",
        "flow",
        "a write was refused because its pre-image does not fit the run record ([runs] "
        "max_run_bytes); raise it or make smaller changes",
        "a change larger than the run record may hold",
        "raise [runs] max_run_bytes or make smaller changes",
    ),
    CodeRow(
        "run_store_unusable",
        "usage",
        "flow",
        "the run store cannot be created or lies inside the workspace; set XDG_STATE_HOME to a "
        "private directory outside the project",
        "XDG_STATE_HOME points into the project or to a folder you cannot write",
        "set XDG_STATE_HOME to a private folder outside the project",
    ),
    CodeRow(
        "workspace_busy",
        "failure",
        "flow",
        "another run, undo or apply is writing the same workspace; nothing was written (the "
        "message names it); wait, run with --isolate, or set [runs] when_busy",
        "a second run (or an undo or apply) started on a workspace a run is writing",
        'wait for it, use --isolate, or set [runs] when_busy = "wait" or "isolate"',
    ),
    CodeRow(
        "undo_conflict",
        "failure",
        "flow",
        "a file changed after the run, so undo changed nothing; look at it, then flow undo ID "
        "--force",
        "a file the run changed was edited afterwards",
        "look at the file; flow undo ID --force undoes anyway",
    ),
    CodeRow(
        "undo_failed",
        "failure",
        "flow",
        "a stored image is missing or corrupt, or a file could not be written safely; whatever "
        "was written was put back",
        "the run record was damaged or a file could not be written safely",
        "look at the message; the files were left as they were",
    ),
    CodeRow(
        "undo_nothing",
        "failure",
        "flow",
        "the run has nothing to undo: isolated and never applied, or already undone",
        "the run changed nothing, was never applied, or was undone already",
        "nothing to do; flow runs shows each run's state",
    ),
    CodeRow(
        "preflight_check_missing",
        "usage",
        "preflight",
        "a required check's executable does not exist or is not executable; install it or fix "
        "checks.NAME.cmd[0]",
        "a required check's program is not installed or cmd[0] is misspelt",
        "install it or correct checks.NAME.cmd[0]",
    ),
    CodeRow(
        "preflight_empty_task",
        "usage",
        "preflight",
        "the task is empty or only whitespace; say what to do",
        'flow run "" or an empty MCP task',
        "say what to change, e.g. flow run --trusted 'Fix the failing parser tests'",
    ),
    CodeRow(
        "preflight_model_missing",
        "usage",
        "preflight",
        "a role's model is not installed on the model server; choose one of the installed models "
        "the message lists, or install it",
        "a model name that is not installed on the server (a typo, or not pulled yet)",
        "choose one of the installed models the message lists (--model NAME, or the model "
        "settings of the operator config), or install it (ollama pull NAME)",
    ),
    CodeRow(
        "preflight_no_required_check",
        "usage",
        "preflight",
        "no required check is configured, so no run can be verified; add a [checks.NAME] table "
        "with required = true",
        "no check has required = true",
        "add a [checks.NAME] table with cmd and required = true",
    ),
    CodeRow(
        "preflight_workspace_missing",
        "usage",
        "preflight",
        "the workspace directory does not exist (any more); fix workspace_dir or --workspace",
        "a typo in workspace_dir or --workspace, or the folder was removed",
        "pass an existing directory with --workspace or fix workspace_dir",
    ),
    CodeRow(
        "preflight_tree_too_large",
        "usage",
        "preflight",
        "the workspace holds more files (outside generated folders) than the whole-tree watch "
        "records, so no run there could be verified; raise [runs] watch_max_files, or add the "
        "bulk to .gitignore-style generated folders",
        "a workspace with more files than [runs] watch_max_files (a vendored tree, data)",
        "raise [runs] watch_max_files, or keep the bulk in a generated folder",
    ),
    CodeRow(
        "check_timeout_short",
        "failure",
        "preflight",
        "a check's timeout is under 1,000 ms; check timeouts are in milliseconds, so timeout = 60 "
        "means 0.06 s: write 60000 for a minute",
        "a timeout written in seconds (timeout = 60)",
        "write milliseconds: timeout = 60000 for a minute",
    ),
    CodeRow(
        "baseline_failing",
        "usage",
        "baseline",
        "a required lint, type or diagnostics check already fails on the untouched tree, so no "
        "run could be verified; the run stopped before any model request",
        "a lint or type check run over a whole project that has old findings (ruff on a real "
        "repository often reports dozens before any change)",
        "scope checks.NAME.cmd to the files the task is about, fix the old findings first, or run "
        "with --allow-failing-baseline (agent.allow_failing_baseline = true) so only findings the "
        "run adds count; that needs the check to print one 'path:line: message' line a finding "
        "within 16 KiB (ruff check --output-format=concise), else it stops the run too",
    ),
    CodeRow(
        "baseline_passing",
        "failure",
        "baseline",
        "a required test check already passes on the untouched tree, so the tests do not show the "
        "problem the task names (a warning; the run went on)",
        "a test check that does not exercise the problem, or a task already done",
        "add a test that fails now and point the test check at it; the run still goes on",
    ),
    CodeRow(
        "backend_unreachable",
        "failure",
        "backend",
        "the server refused the connection or could not be reached",
        "the model server is not running or listens elsewhere",
        "start Ollama (ollama serve), or the bundled model's server (flow-serve-smollm2), or fix "
        "base_url",
    ),
    CodeRow(
        "backend_timeout",
        "failure",
        "backend",
        "the server did not answer within the configured timeout (seconds)",
        "a slow model, a large prompt, or a server that stopped answering",
        "raise the backend's timeout (seconds) or use a smaller model",
    ),
    CodeRow(
        "backend_http",
        "failure",
        "backend",
        "the server answered with an HTTP error status",
        "a wrong base_url (a missing /v1 on OpenAI-compatible servers) or a server-side error",
        "check base_url and the server's log",
    ),
    CodeRow(
        "model_not_found",
        "failure",
        "backend",
        "the server does not have the requested model",
        "the model is not pulled or the name is misspelt",
        "pull it (ollama pull NAME) or choose an installed model (flow tui: /models)",
    ),
    CodeRow(
        "backend_malformed",
        "failure",
        "backend",
        "the server's reply was not the JSON shape its API documents",
        "a server that is not the API the backend expects (an Ollama URL with backend = openai, "
        "or the reverse)",
        "set backend and base_url to match the server",
    ),
    CodeRow(
        "response_too_large",
        "failure",
        "backend",
        "the reply exceeded the response size cap (bytes)",
        "a model that rambles past the reply size cap",
        "lower the model's reply token limit or raise the cap",
    ),
    CodeRow(
        "redirect_refused",
        "failure",
        "backend",
        "the server answered with a redirect; Flow never follows redirects",
        "base_url points at a proxy or a URL that redirects",
        "use the server's direct loopback URL",
    ),
    CodeRow(
        "remote_refused",
        "failure",
        "backend",
        "the URL's host is not loopback and allow_remote is not set",
        "base_url names a host other than this machine",
        "use a loopback URL, or set allow_remote = true if you trust that server",
    ),
    CodeRow(
        "backend_closed",
        "failure",
        "backend",
        "the backend was used after close()",
        "code that used a backend after closing it",
        "create a new backend or runtime",
    ),
    CodeRow(
        "request_unencodable",
        "failure",
        "backend",
        "the request could not be encoded as JSON (nesting too deep, or a value of a type JSON "
        "has no form for); nothing was sent",
        "tool results or arguments that JSON cannot carry",
        "nothing to fix in the project; the turn is reported and the run goes on",
    ),
    CodeRow(
        "prompt_too_long",
        "failure",
        "backend",
        "the server refused the prompt as longer than the model's context window; Flow never "
        "resends the same or a larger prompt: lower agent.max_context_chars or set the window "
        "(context_tokens) to what the server was started with",
        "the server was started with a smaller context window than Flow assumed, or the task and "
        "its tool output grew past it",
        "set the role's context window (context_tokens) to the server's, lower "
        "agent.max_context_chars, or start the server with a larger context",
    ),
    CodeRow(
        "text_tool_call",
        "failure",
        "reply",
        "a tool call was written as text in the reply instead of a structured call",
        "a model without native tool calling wrote the call as text",
        "nothing to fix; Flow recovers explicit calls; a tool-capable model avoids it",
    ),
    CodeRow(
        "arguments_as_string",
        "failure",
        "reply",
        "tool arguments arrived as a JSON string instead of a JSON object",
        "a model that encodes arguments twice",
        "nothing to fix; Flow decodes them and tells the model",
    ),
    CodeRow(
        "unknown_tool",
        "failure",
        "reply",
        "the model called a tool it was not offered (the call was dropped)",
        "the model invented a tool name",
        "nothing to fix; the model is told the tools it has",
    ),
    CodeRow(
        "empty_reply",
        "failure",
        "reply",
        "the reply had neither text nor tool calls",
        "a model that answered nothing",
        "nothing to fix; the model is asked again; a stronger model helps",
    ),
    CodeRow(
        "reasoning_only",
        "failure",
        "reply",
        "the reply held only reasoning (thinking), no answer and no tool call; the reasoning is "
        "kept in the transcript, never run",
        "a thinking model that spent its reply on reasoning (Ollama's think option, or a "
        "reasoning template) and gave no answer, often cut by max_reply_tokens",
        "nothing to fix for one turn (the model is asked again); if it repeats, raise "
        "max_reply_tokens or set think = false in [models.options.ROLE]",
    ),
    CodeRow(
        "reply_too_large",
        "failure",
        "reply",
        "the reply text exceeded the size cap and was truncated",
        "a model that rambles",
        "lower the reply token limit or use a model that answers briefly",
    ),
    CodeRow(
        "context_overflow",
        "failure",
        "reply",
        "the reply was cut short by the context window or token limit",
        "the prompt and the reply together filled the model's context window",
        "raise the window (context_tokens, or the server's context size, e.g. llama.cpp's "
        "--ctx-size), or give a narrower task",
    ),
    CodeRow(
        "call_cut_off",
        "failure",
        "reply",
        "a tool call came in a reply cut short by the length limit; it was not run",
        "the reply hit the length limit in the middle of a tool call",
        "raise the model's reply token limit; the model is told and may try again",
    ),
    CodeRow(
        "ambiguous_call",
        "failure",
        "reply",
        "a tool call written as text held the wrapper's own tags inside a value, so where it ends "
        "is unclear; no text call of that reply was run",
        "a model without structured tool calls wrote a call as text whose value held the "
        "wrapper's own tags (</parameter>, </function>, </tool_call>), so its end was unclear",
        "nothing to fix for one turn (the model is told and may send it again); a server with "
        "structured tool calls, or guided decoding, avoids it",
    ),
    CodeRow(
        "invalid_unicode",
        "failure",
        "reply",
        "the reply text held invalid Unicode (lone surrogates); they were replaced by U+FFFD",
        "a model that emitted broken surrogate pairs",
        "nothing to fix; the text was repaired and the run goes on",
    ),
    CodeRow(
        "editor_socket_invalid",
        "usage",
        "editor",
        "the --nvim value is not an absolute path to an existing Unix socket owned by the user",
        "a wrong --nvim path, or Neovim not started with Rose",
        "start Neovim with Rose and pass the absolute socket path it prints",
    ),
    CodeRow(
        "editor_socket_tcp",
        "usage",
        "editor",
        "the --nvim value looks like a TCP address (host:port or an IP); only a private Unix "
        "socket is accepted",
        "--nvim given host:port",
        "pass Rose's private Unix socket path instead",
    ),
    CodeRow(
        "editor_socket_public",
        "usage",
        "editor",
        "the socket is reachable by other users: put it in a 0700 directory you own, or remove "
        "its group/other permission bits",
        "a socket with group/other permission bits",
        "let Rose create it in a 0700 directory of yours, or chmod go-rwx it",
    ),
    CodeRow(
        "editor_socket_dir_unsafe",
        "usage",
        "editor",
        "another user could replace the socket: its directory is not yours or others can write "
        "it, or a directory or symbolic link on the way belongs to another user (not root) or is "
        "writable by others without the sticky bit; use a 0700 directory of yours",
        "the socket lies in a shared or world-writable directory",
        "use a 0700 directory you own (Rose's default)",
    ),
    CodeRow(
        "editor_socket_peer",
        "usage",
        "editor",
        "the process listening on the socket does not run as the user (its uid is read from the "
        "connected socket: SO_PEERCRED, LOCAL_PEERCRED) or the uid cannot be read; the socket may "
        "have been swapped after it was checked; the connection is closed unused",
        "the socket belongs to another user's process, or was swapped",
        "start Rose yourself and connect to its own socket",
    ),
    CodeRow(
        "editor_unavailable",
        "failure",
        "editor",
        "Neovim could not be reached, went away (killed, socket closed) or the bridge was already "
        "closed or failed, or the bridge is not installed; reconnect",
        "Neovim exited, the socket closed, or flow-rose is not installed",
        "start Neovim with Rose again, or install the editor extra",
    ),
    CodeRow(
        "editor_timeout",
        "failure",
        "editor",
        "Neovim did not answer within the editor request timeout (seconds); the connection is "
        "closed because its state is unknown",
        "Neovim was busy or blocked (a prompt waiting for input)",
        "answer or close what blocks Neovim; raise --editor-timeout if it is just slow",
    ),
    CodeRow(
        "editor_timeout_invalid",
        "usage",
        "editor",
        "the editor request timeout (seconds) is outside "
        f"{EDITOR_TIMEOUT_MIN:g}-{EDITOR_TIMEOUT_MAX:g}",
        "--editor-timeout outside the allowed range",
        "give a value from 0.1 to 660 seconds",
    ),
    CodeRow(
        "editor_protocol",
        "failure",
        "editor",
        "Rose answered in a shape that breaks the documented rose.tools contract",
        "a Rose version that does not match this Flow",
        "install matching versions of Rose and Flow",
    ),
    CodeRow(
        "editor_workspace_mismatch",
        "failure",
        "editor",
        "Rose's resolved workspace is not Flow's workspace (compared after resolving symlinks); "
        "start both with the same absolute workspace",
        "Neovim and Flow opened different project folders",
        "start both in the same absolute workspace",
    ),
    CodeRow(
        "editor_freshness_missing",
        "failure",
        "editor",
        "Rose's editor_context lacks a freshness API v1 field; Flow fails closed",
        "an old Rose without the freshness API",
        "update Rose",
    ),
    CodeRow(
        "editor_refused",
        "failure",
        "editor",
        "Rose refused a buffer-aware file operation (unsaved or read-only buffer) to protect the "
        "user's text",
        "an unsaved or read-only buffer for that file",
        "save or close the buffer, then run again",
    ),
    CodeRow(
        "editor_tool_unknown",
        "failure",
        "editor",
        "the tool is not on the bridge's allowlist or Rose did not offer it at attach",
        "a tool name Rose does not offer",
        "update Rose, or use a tool it lists",
    ),
    CodeRow(
        "editor_tool_denied",
        "failure",
        "editor",
        "the tool or action is not allowed here (lint/check for a read-only role, an editor_debug "
        "action other than status)",
        "a read-only role asked for an editing or running tool",
        "nothing to fix; the model is told",
    ),
    CodeRow(
        "editor_tool_error",
        "failure",
        "editor",
        "Rose ran the tool and reported an error",
        "Rose could not do what the tool asked",
        "read Rose's message in the report",
    ),
    CodeRow(
        "editor_arguments_invalid",
        "failure",
        "editor",
        "tool arguments are not a JSON object (or not JSON at all)",
        "malformed tool arguments for an editor tool",
        "nothing to fix; the model is told",
    ),
    CodeRow(
        "io_error",
        "failure",
        "safeio",
        _SAFEIO["io_error"],
        "a disk, permission or filesystem error",
        "read the message; check free space and permissions",
    ),
    CodeRow(
        "path_invalid",
        "failure",
        "safeio",
        _SAFEIO["path_invalid"],
        "the model wrote an odd path (backslashes, control characters)",
        "nothing to fix; the model is told",
    ),
    CodeRow(
        "path_outside",
        "failure",
        "safeio",
        _SAFEIO["path_outside"],
        "the model tried to reach a file outside the project",
        "nothing to fix; Flow refused it and the run goes on",
    ),
    CodeRow(
        "git_path",
        "failure",
        "safeio",
        _SAFEIO["git_path"],
        "the model tried to touch .git",
        "nothing to fix; Flow never lets a model write git metadata",
    ),
    CodeRow(
        "protected",
        "failure",
        "safeio",
        _SAFEIO["protected"],
        "the model tried to write a file that Flow protects (operator config, check programs, "
        "files other tools run)",
        "nothing to fix; change such files yourself if needed",
    ),
    CodeRow(
        "generated_path",
        "failure",
        "safeio",
        _SAFEIO["generated_path"],
        "the model tried to write inside .venv, node_modules or another generated folder",
        "nothing to fix; Flow never writes there",
    ),
    CodeRow(
        "symlink",
        "failure",
        "safeio",
        _SAFEIO["symlink"],
        "the path goes through a symbolic link",
        "nothing to fix; Flow never follows links in the project",
    ),
    CodeRow(
        "hardlink",
        "failure",
        "safeio",
        _SAFEIO["hardlink"],
        "the file has more than one hard link",
        "nothing to fix; Flow refuses to write through a shared inode",
    ),
    CodeRow(
        "not_regular_file",
        "failure",
        "safeio",
        _SAFEIO["not_regular_file"],
        "the path names a FIFO, socket or device",
        "nothing to fix; only regular files are read or written",
    ),
    CodeRow(
        "is_directory",
        "failure",
        "safeio",
        _SAFEIO["is_directory"],
        "the model named a folder where a file was needed",
        "nothing to fix; the model is told",
    ),
    CodeRow(
        "not_directory",
        "failure",
        "safeio",
        _SAFEIO["not_directory"],
        "a path component is a file",
        "nothing to fix; the model is told",
    ),
    CodeRow(
        "not_found",
        "failure",
        "safeio",
        _SAFEIO["not_found"],
        "the model named a file that does not exist",
        "nothing to fix; the model is told and may list files",
    ),
    CodeRow(
        "too_large",
        "failure",
        "safeio",
        _SAFEIO["too_large"],
        "a file larger than the workspace's size cap",
        "raise the cap if you want Flow to read such files",
    ),
    CodeRow(
        "not_text",
        "failure",
        "safeio",
        _SAFEIO["not_text"],
        "a binary file or another encoding",
        "nothing to fix; Flow reads UTF-8 text only",
    ),
    CodeRow(
        "root_invalid",
        "failure",
        "safeio",
        _SAFEIO["root_invalid"],
        "a workspace path that is not an existing absolute directory",
        "pass an existing absolute directory",
    ),
    CodeRow(
        "root_stale",
        "failure",
        "safeio",
        _SAFEIO["root_stale"],
        "the project folder was moved or replaced while Flow ran",
        "start Flow again on the folder",
    ),
    CodeRow(
        "closed",
        "failure",
        "safeio",
        _SAFEIO["closed"],
        "code that used a workspace after closing it",
        "open a new workspace",
    ),
)
