"""Each error code's usual cause and fix, for ``flow explain CODE``.

Part of the error catalogue (``flow_core._catalogue``): :data:`ERROR_CODES` gives each code's
meaning and category, this table its usual cause and what the user should do. A test keeps
every catalogued code explained here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["ADVICE"]

#: code -> (usual cause, fix), in the user's terms.
ADVICE: Final[Mapping[str, tuple[str, str]]] = MappingProxyType(
    {
        "flow_error": (
            "a failure inside Flow that has no narrower code",
            "read the message; if it looks like a bug, report it with the command you ran",
        ),
        "config_invalid": (
            "a misspelt key, a string where a number belongs, or a value out of range",
            "correct the key the message names, in the file it names (flow status shows which "
            "files were read)",
        ),
        "config_syntax": (
            "a missing quote or bracket, or a key repeated in one table",
            "fix the TOML at the line and column the message gives",
        ),
        "config_not_found": (
            "a relative or mistyped --config path",
            "pass the absolute path of an existing, readable TOML file",
        ),
        "config_unsafe": (
            "an operator config kept in the project (a cloned repository could ship one) or a file"
            " others can write",
            "a config in the project: move it out (e.g. ~/.config/flow/<project>.toml); a file or "
            "folder others can write: chmod go-w it, or keep the config in a folder of your own",
        ),
        "check_unknown": (
            "a typo in flow check NAME or /check NAME",
            "use one of the names flow status lists under configured_checks",
        ),
        "not_trusted": (
            "flow run/check or the MCP tools started without --trusted",
            "review the [checks.*] commands in your operator config, then add --trusted",
        ),
        "backend_error": (
            "an unusual failure of the model server",
            "read the message and the server's log",
        ),
        "editor_error": (
            "the Rose editor bridge failed",
            "see the editor_* codes and restart Neovim with Rose if needed",
        ),
        "script_exhausted": (
            "a test's ScriptedBackend ran out of replies",
            "give the script as many replies as the run makes model requests",
        ),
        "usage_error": (
            "an unknown option or a missing argument",
            "see flow --help or flow COMMAND --help",
        ),
        "internal_error": (
            "a bug in Flow",
            "report it with the traceback printed on stderr and the command you ran",
        ),
        "interrupted": (
            "Ctrl-C or SIGTERM while the command worked",
            "nothing to fix; run the command again when you want; flow runs and flow undo show and"
            " undo what a run left",
        ),
        "invalid_arguments": (
            "an MCP client sent arguments that do not match the tool's inputSchema",
            "send the arguments the tool's inputSchema describes (tools/list shows it)",
        ),
        "cancelled": (
            "the MCP client sent notifications/cancelled or closed stdin during the run",
            "nothing to fix; call the tool again when you want",
        ),
        "rollback_incomplete": (
            "a cancelled run created files through the editor bridge, which cannot delete them",
            "review the files the message names and remove those you do not want",
        ),
        "check_failed": (
            "the project's tests or linter found a problem",
            "read the check's output in the report (checks[].output_tail) and fix the code, "
            "or run flow check NAME to reproduce",
        ),
        "check_timeout": (
            "a slow or hanging command, or a timeout written in seconds",
            "raise checks.NAME.timeout (milliseconds) or make the command faster",
        ),
        "check_limit": (
            "the check's processes together used more memory than sandbox.memory_mib, more "
            "processes than sandbox.processes, more CPU time than sandbox.cpu_seconds, or "
            "wrote more than sandbox.disk_mib (a runaway test, a fork bomb, a log that fills "
            "the disk)",
            "fix the test if it runs away; otherwise raise the named [sandbox] limit",
        ),
        "check_missing": (
            "the tool is not installed in the project's environment, or cmd[0] is misspelt",
            "install it, or correct checks.NAME.cmd[0]",
        ),
        "check_refused": (
            "an unsaved buffer in the editor",
            "save or discard the buffer, then run the check again",
        ),
        "check_interrupted": (
            "Ctrl-C, SIGTERM or a cancel while the check ran",
            "nothing to fix; run it again",
        ),
        "check_error": (
            "a file without execute permission, a wrong interpreter line, or a resource limit",
            "make cmd[0] an executable program and check its first line",
        ),
        "check_executable_changed": (
            "the program a check runs was replaced or re-linked after the config was loaded (a "
            "package upgrade, or something writing into the project)",
            "look at the program; if the change is expected, start Flow again",
        ),
        "check_evidence": (
            "the check exited 0 but its JUnit results are missing or unparsable, hold no test or "
            "a failure, or a baseline test was removed, renamed or newly skipped (a test file "
            "that ends the run early, or tests deleted to make the run pass)",
            "read evidence_problems in the check's result; restore the baseline tests and fix "
            "the code instead",
        ),
        "tool_unknown": (
            "the model asked for a tool its role is not given",
            "nothing to fix in the project; a stronger model or a clearer task helps",
        ),
        "tool_invalid_arguments": (
            "the model sent arguments of the wrong type or left one out",
            "nothing to fix in the project; the model is told and may try again",
        ),
        "weak_evidence": (
            "a check of kind test runs a runner Flow cannot read (not pytest, no {junit_xml}), "
            'or sets results = "exit_status"; a test file that ends the runner with status 0 '
            "then passes it",
            "run the tests with pytest (Flow adds its own --junitxml), or put {junit_xml} where "
            'the runner writes JUnit XML and set results = "junit"',
        ),
        "changes_what_runs": (
            "the model created a module named like a standard-library or installed module (or "
            "one the workspace already has), declared an encoding other than UTF-8, wrote a "
            ".pth or sitecustomize file (each changes what an import or the interpreter runs), "
            "or wrote where linters do not look (rule lint_excluded)",
            "nothing to fix in Flow: the write was refused and the run went on; the rule's "
            'reasons are in docs/architecture.md, section "Writes that change what runs"',
        ),
        "edit_no_match": (
            "the model's old_text differs from the file (whitespace, stale copy)",
            "nothing to fix; the model is told the closest line and may read the file again",
        ),
        "edit_ambiguous": (
            "the model's old_text occurs several times",
            "nothing to fix; the model is told every matching line and may give more context",
        ),
        "search_bad_regex": (
            "the model wrote an invalid regular expression",
            "nothing to fix; the model is told and may search literally",
        ),
        "search_timeout": (
            "a regular expression with catastrophic backtracking, or a huge file",
            "nothing to fix; the model is told to simplify the pattern",
        ),
        "not_verified": (
            "the model's change did not pass a required check, was not covered by a static "
            "analyser, or the reviewer did not approve",
            "read the reasons and the check output; fix by hand, or run again with a clearer "
            "task or a stronger model (flow undo removes what the run left)",
        ),
        "sandbox_unavailable": (
            "bwrap is not installed, or this machine forbids unprivileged user namespaces "
            "(some containers, kernel.unprivileged_userns_clone = 0)",
            "install the bubblewrap package (Debian/Ubuntu: apt-get install bubblewrap), or "
            'set sandbox.mode = "auto" to run checks unjailed with a warning',
        ),
        "search_unavailable": (
            "the helper process for regular-expression search could not start (process or "
            "memory limits)",
            "nothing to fix in the project; the model is told to search literally",
        ),
        "budget_time": (
            "a slow model, a large task, or agent.max_seconds set low",
            "raise agent.max_seconds, use a faster model, or give a narrower task",
        ),
        "preflight_model_missing": (
            "a model name that is not installed on the server (a typo, or not pulled yet)",
            "choose one of the installed models the message lists (--model NAME, or the model "
            "settings of the operator config), or install it (ollama pull NAME)",
        ),
        "prompt_too_long": (
            "the server was started with a smaller context window than Flow assumed, or the "
            "task and its tool output grew past it",
            "set the role's context window (context_tokens) to the server's, lower "
            "agent.max_context_chars, or start the server with a larger context",
        ),
        "no_checks": (
            "an operator config without [checks.NAME] tables",
            'add at least one required check, e.g. [checks.tests] cmd = ["python", "-m", "pytest",'
            ' "-q"]',
        ),
        "budget_iterations": (
            "a task too large for the model, or a model that keeps calling tools",
            "split the task, use a stronger model, or raise agent.max_iterations",
        ),
        "budget_tool_calls": (
            "a long exploration or repeated failing calls",
            "raise agent.max_tool_calls or give a narrower task",
        ),
        "context_budget": (
            "large tool results or a long task in a small budget",
            "raise agent.max_context_chars or give a narrower task",
        ),
        "review_invalid": (
            "the reviewer model did not answer with the review JSON",
            "use a model that follows structured output, or retry",
        ),
        "apply_conflict": (
            "the workspace changed while the isolated run worked",
            "look at the patch with flow show ID --diff and apply it by hand, or run again",
        ),
        "apply_refused": (
            "flow apply on a run that was not isolated or was applied already",
            "check flow runs; only an isolated, unapplied run can be applied",
        ),
        "isolate_failed": (
            "git worktree failed (a locked repository, no commits) or the copy hit a limit",
            "run without --isolate, or fix the repository state the message names",
        ),
        "run_not_found": (
            "a mistyped or ambiguous run id",
            "flow runs lists the ids; give more characters of the id",
        ),
        "run_store_full": (
            "a change larger than the run record may hold",
            "raise [runs] max_run_bytes or make smaller changes",
        ),
        "run_store_unusable": (
            "XDG_STATE_HOME points into the project or to a folder you cannot write",
            "set XDG_STATE_HOME to a private folder outside the project",
        ),
        "workspace_busy": (
            "a second run (or an undo or apply) started on a workspace a run is writing",
            'wait for it, use --isolate, or set [runs] when_busy = "wait" or "isolate"',
        ),
        "undo_conflict": (
            "a file the run changed was edited afterwards",
            "look at the file; flow undo ID --force undoes anyway",
        ),
        "undo_failed": (
            "the run record was damaged or a file could not be written safely",
            "look at the message; the files were left as they were",
        ),
        "undo_nothing": (
            "the run changed nothing, was never applied, or was undone already",
            "nothing to do; flow runs shows each run's state",
        ),
        "preflight_check_missing": (
            "a required check's program is not installed or cmd[0] is misspelt",
            "install it or correct checks.NAME.cmd[0]",
        ),
        "preflight_empty_task": (
            'flow run "" or an empty MCP task',
            "say what to change, e.g. flow run --trusted 'Fix the failing parser tests'",
        ),
        "preflight_no_required_check": (
            "no check has required = true",
            "add a [checks.NAME] table with cmd and required = true",
        ),
        "preflight_tree_too_large": (
            "a workspace with more files than [runs] watch_max_files (a vendored tree, data)",
            "raise [runs] watch_max_files, or keep the bulk in a generated folder",
        ),
        "preflight_workspace_missing": (
            "a typo in workspace_dir or --workspace, or the folder was removed",
            "pass an existing directory with --workspace or fix workspace_dir",
        ),
        "check_timeout_short": (
            "a timeout written in seconds (timeout = 60)",
            "write milliseconds: timeout = 60000 for a minute",
        ),
        "backend_unreachable": (
            "the model server is not running or listens elsewhere",
            "start Ollama (ollama serve), or the bundled model's server (flow-serve-smollm2), "
            "or fix base_url",
        ),
        "backend_timeout": (
            "a slow model, a large prompt, or a server that stopped answering",
            "raise the backend's timeout (seconds) or use a smaller model",
        ),
        "backend_http": (
            "a wrong base_url (a missing /v1 on OpenAI-compatible servers) or a server-side error",
            "check base_url and the server's log",
        ),
        "model_not_found": (
            "the model is not pulled or the name is misspelt",
            "pull it (ollama pull NAME) or choose an installed model (flow tui: /models)",
        ),
        "backend_malformed": (
            "a server that is not the API the backend expects (an Ollama URL with backend = "
            "openai, or the reverse)",
            "set backend and base_url to match the server",
        ),
        "response_too_large": (
            "a model that rambles past the reply size cap",
            "lower the model's reply token limit or raise the cap",
        ),
        "redirect_refused": (
            "base_url points at a proxy or a URL that redirects",
            "use the server's direct loopback URL",
        ),
        "remote_refused": (
            "base_url names a host other than this machine",
            "use a loopback URL, or set allow_remote = true if you trust that server",
        ),
        "backend_closed": (
            "code that used a backend after closing it",
            "create a new backend or runtime",
        ),
        "request_unencodable": (
            "tool results or arguments that JSON cannot carry",
            "nothing to fix in the project; the turn is reported and the run goes on",
        ),
        "text_tool_call": (
            "a model without native tool calling wrote the call as text",
            "nothing to fix; Flow recovers explicit calls; a tool-capable model avoids it",
        ),
        "arguments_as_string": (
            "a model that encodes arguments twice",
            "nothing to fix; Flow decodes them and tells the model",
        ),
        "unknown_tool": (
            "the model invented a tool name",
            "nothing to fix; the model is told the tools it has",
        ),
        "empty_reply": (
            "a model that answered nothing",
            "nothing to fix; the model is asked again; a stronger model helps",
        ),
        "reasoning_only": (
            "a thinking model that spent its reply on reasoning (Ollama's think option, or a "
            "reasoning template) and gave no answer, often cut by max_reply_tokens",
            "nothing to fix for one turn (the model is asked again); if it repeats, raise "
            "max_reply_tokens or set think = false in [models.options.ROLE]",
        ),
        "reply_too_large": (
            "a model that rambles",
            "lower the reply token limit or use a model that answers briefly",
        ),
        "context_overflow": (
            "the prompt and the reply together filled the model's context window",
            "raise the window (context_tokens, or the server's context size, e.g. llama.cpp's "
            "--ctx-size), or give a narrower task",
        ),
        "baseline_failing": (
            "a lint or type check run over a whole project that has old findings (ruff on a "
            "real repository often reports dozens before any change)",
            "scope checks.NAME.cmd to the files the task is about, fix the old findings first, "
            "or run with --allow-failing-baseline (agent.allow_failing_baseline = true) so only "
            "findings the run adds count",
        ),
        "baseline_passing": (
            "a test check that does not exercise the problem, or a task already done",
            "add a test that fails now and point the test check at it; the run still goes on",
        ),
        "reply_cap": (
            "a reply longer than max_reply_tokens (a whole file written at once, or a model "
            "that rambles); the window was not full",
            "raise max_reply_tokens in [models.options.ROLE] or the backend's options table; "
            "raising the window does not help",
        ),
        "schema_echo": (
            "a small model that copies the schema's descriptions instead of filling values "
            "(common below 1B parameters, and with a chat template that drops tool definitions)",
            "use a larger or tool-trained model, or turn on guided calls where the server "
            "supports them; the report's tool_calls show the copied text",
        ),
        "repeated_call": (
            "a model stuck in a loop, calling the same tool with the same arguments",
            "give a narrower task naming the file, use a stronger model, or raise "
            "agent.max_repeated_calls",
        ),
        "no_progress": (
            "a model whose calls fail, repeat, or break the tool format turn after turn",
            "read the role's errors in the report; use a stronger model, name the file in the "
            "task, or raise agent.max_idle_turns",
        ),
        "call_cut_off": (
            "the reply hit the length limit in the middle of a tool call",
            "raise the model's reply token limit; the model is told and may try again",
        ),
        "ambiguous_call": (
            "a model without structured tool calls wrote a call as text whose value held the "
            "wrapper's own tags (</parameter>, </function>, </tool_call>), so its end was unclear",
            "nothing to fix for one turn (the model is told and may send it again); a server "
            "with structured tool calls, or guided decoding, avoids it",
        ),
        "invalid_unicode": (
            "a model that emitted broken surrogate pairs",
            "nothing to fix; the text was repaired and the run goes on",
        ),
        "editor_socket_invalid": (
            "a wrong --nvim path, or Neovim not started with Rose",
            "start Neovim with Rose and pass the absolute socket path it prints",
        ),
        "editor_socket_tcp": (
            "--nvim given host:port",
            "pass Rose's private Unix socket path instead",
        ),
        "editor_socket_public": (
            "a socket with group/other permission bits",
            "let Rose create it in a 0700 directory of yours, or chmod go-rwx it",
        ),
        "editor_socket_dir_unsafe": (
            "the socket lies in a shared or world-writable directory",
            "use a 0700 directory you own (Rose's default)",
        ),
        "editor_socket_peer": (
            "the socket belongs to another user's process, or was swapped",
            "start Rose yourself and connect to its own socket",
        ),
        "editor_unavailable": (
            "Neovim exited, the socket closed, or flow-rose is not installed",
            "start Neovim with Rose again, or install the editor extra",
        ),
        "editor_timeout": (
            "Neovim was busy or blocked (a prompt waiting for input)",
            "answer or close what blocks Neovim; raise --editor-timeout if it is just slow",
        ),
        "editor_timeout_invalid": (
            "--editor-timeout outside the allowed range",
            "give a value from 0.1 to 660 seconds",
        ),
        "editor_protocol": (
            "a Rose version that does not match this Flow",
            "install matching versions of Rose and Flow",
        ),
        "editor_workspace_mismatch": (
            "Neovim and Flow opened different project folders",
            "start both in the same absolute workspace",
        ),
        "editor_freshness_missing": (
            "an old Rose without the freshness API",
            "update Rose",
        ),
        "editor_refused": (
            "an unsaved or read-only buffer for that file",
            "save or close the buffer, then run again",
        ),
        "editor_tool_unknown": (
            "a tool name Rose does not offer",
            "update Rose, or use a tool it lists",
        ),
        "editor_tool_denied": (
            "a read-only role asked for an editing or running tool",
            "nothing to fix; the model is told",
        ),
        "editor_tool_error": (
            "Rose could not do what the tool asked",
            "read Rose's message in the report",
        ),
        "editor_arguments_invalid": (
            "malformed tool arguments for an editor tool",
            "nothing to fix; the model is told",
        ),
        "io_error": (
            "a disk, permission or filesystem error",
            "read the message; check free space and permissions",
        ),
        "path_invalid": (
            "the model wrote an odd path (backslashes, control characters)",
            "nothing to fix; the model is told",
        ),
        "path_outside": (
            "the model tried to reach a file outside the project",
            "nothing to fix; Flow refused it and the run goes on",
        ),
        "git_path": (
            "the model tried to touch .git",
            "nothing to fix; Flow never lets a model write git metadata",
        ),
        "protected": (
            "the model tried to write a file that Flow protects (operator config, check programs, "
            "files other tools run)",
            "nothing to fix; change such files yourself if needed",
        ),
        "generated_path": (
            "the model tried to write inside .venv, node_modules or another generated folder",
            "nothing to fix; Flow never writes there",
        ),
        "symlink": (
            "the path goes through a symbolic link",
            "nothing to fix; Flow never follows links in the project",
        ),
        "hardlink": (
            "the file has more than one hard link",
            "nothing to fix; Flow refuses to write through a shared inode",
        ),
        "not_regular_file": (
            "the path names a FIFO, socket or device",
            "nothing to fix; only regular files are read or written",
        ),
        "is_directory": (
            "the model named a folder where a file was needed",
            "nothing to fix; the model is told",
        ),
        "not_directory": (
            "a path component is a file",
            "nothing to fix; the model is told",
        ),
        "not_found": (
            "the model named a file that does not exist",
            "nothing to fix; the model is told and may list files",
        ),
        "too_large": (
            "a file larger than the workspace's size cap",
            "raise the cap if you want Flow to read such files",
        ),
        "not_text": (
            "a binary file or another encoding",
            "nothing to fix; Flow reads UTF-8 text only",
        ),
        "root_invalid": (
            "a workspace path that is not an existing absolute directory",
            "pass an existing absolute directory",
        ),
        "root_stale": (
            "the project folder was moved or replaced while Flow ran",
            "start Flow again on the folder",
        ),
        "closed": (
            "code that used a workspace after closing it",
            "open a new workspace",
        ),
    }
)
