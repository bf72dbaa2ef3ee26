"""flow-core: Flow's verified planner → coder → reviewer runtime.

Config, model backends, file tools, named checks, the verification gate and reports, shared by
the CLI, the TUI, the MCP server and custom agents.

The public door is lazy: ``import flow_core`` loads only this module, and each name below is
imported from the module that defines it the first time it is used (PEP 562 module
``__getattr__``), so a command loads only what it uses (``flow status`` loads no model backend,
no file tool and no check runner). ``from flow_core import X`` and ``flow_core.__all__`` work as
before. The door is one table (module -> names) handed to ``flow_core._lazy.lazy_door``;
``__all__`` derives from it, and type checkers read the matching imports below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flow_core.__about__ import __version__ as __version__
from flow_core._lazy import lazy_door

if TYPE_CHECKING:
    from flow_core._catalogue import (
        EDITOR_ERROR_CODES as EDITOR_ERROR_CODES,
        ERROR_CATEGORIES as ERROR_CATEGORIES,
        ERROR_CODES as ERROR_CODES,
        EXIT_CODES as EXIT_CODES,
        ErrorCategory as ErrorCategory,
        ErrorCode as ErrorCode,
        Explanation as Explanation,
        error_category as error_category,
        explain_error as explain_error,
    )
    from flow_core._errors import (
        BackendError as BackendError,
        ConfigError as ConfigError,
        EditorError as EditorError,
        FlowError as FlowError,
        NotTrustedError as NotTrustedError,
        UnknownCheckError as UnknownCheckError,
    )
    from flow_core._factory import (
        config_status as config_status,
        open_runtime as open_runtime,
        run_store_root as run_store_root,
        user_run_store as user_run_store,
    )
    from flow_core._outcome import (
        Invocation as Invocation,
        error_report as error_report,
        exit_code_for as exit_code_for,
        is_error as is_error,
    )
    from flow_core._protocols import (
        EDITOR_TIMEOUT_DEFAULT as EDITOR_TIMEOUT_DEFAULT,
        EDITOR_TIMEOUT_MAX as EDITOR_TIMEOUT_MAX,
        EDITOR_TIMEOUT_MIN as EDITOR_TIMEOUT_MIN,
        ROLES as ROLES,
        ChatBackend as ChatBackend,
        ChatMessage as ChatMessage,
        ChatResponse as ChatResponse,
        EditorBridge as EditorBridge,
        EditorFreshness as EditorFreshness,
        EditorLintResult as EditorLintResult,
        Event as Event,
        EventSink as EventSink,
        Role as Role,
        ToolCall as ToolCall,
        describe_event as describe_event,
    )
    from flow_core._report import (
        Budget as Budget,
        Budgets as Budgets,
        CheckResult as CheckResult,
        CheckSpec as CheckSpec,
        CoverageEntry as CoverageEntry,
        CycleRecord as CycleRecord,
        ErrorInfo as ErrorInfo,
        GateConditions as GateConditions,
        Report as Report,
        Review as Review,
        RoleUsage as RoleUsage,
        Timings as Timings,
        ToolCallRecord as ToolCallRecord,
        Verification as Verification,
        report_json_schema as report_json_schema,
    )
    from flow_core._signals import (
        STOP_SIGNALS as STOP_SIGNALS,
        Interrupts as Interrupts,
    )
    from flow_core._stdio import (
        StdioTakeover as StdioTakeover,
    )
    from flow_core._xdg import (
        state_dir as state_dir,
    )
    from flow_core.config._load import (
        load_config as load_config,
        user_config_path as user_config_path,
    )
    from flow_core.config._schema import (
        AgentConfig as AgentConfig,
        CheckConfig as CheckConfig,
        FlowConfig as FlowConfig,
        LoadedConfig as LoadedConfig,
        ModelsConfig as ModelsConfig,
        OllamaConfig as OllamaConfig,
        OpenAIConfig as OpenAIConfig,
    )
    from flow_core.models import (
        make_backend as make_backend,
    )
    from flow_core.models._http import (
        BACKEND_ERROR_CODES as BACKEND_ERROR_CODES,
    )
    from flow_core.models._parse import (
        REPLY_ISSUE_CODES as REPLY_ISSUE_CODES,
        ParsedReply as ParsedReply,
        ReplyIssue as ReplyIssue,
        parse_reply as parse_reply,
    )
    from flow_core.models.ollama import (
        OllamaBackend as OllamaBackend,
    )
    from flow_core.models.openai import (
        OpenAIBackend as OpenAIBackend,
    )
    from flow_core.models.scripted import (
        ScriptedBackend as ScriptedBackend,
        ScriptedReply as ScriptedReply,
        ScriptedRequest as ScriptedRequest,
    )
    from flow_core.prompts import (
        list_prompts as list_prompts,
        load_prompt as load_prompt,
    )
    from flow_core.run import (
        REVIEW_SCHEMA as REVIEW_SCHEMA,
    )
    from flow_core.run._runtime import (
        Runtime as Runtime,
    )
    from flow_core.tools._policy import (
        EDITOR_TOOL_NAMES as EDITOR_TOOL_NAMES,
        FILE_TOOL_NAMES as FILE_TOOL_NAMES,
        READ_ONLY_TOOL_NAMES as READ_ONLY_TOOL_NAMES,
        role_tools as role_tools,
    )
    from flow_core.verify._checks import (
        kill_all_process_groups as kill_all_process_groups,
        run_check as run_check,
    )
    from flow_core.verify._filetypes import (
        language_key as language_key,
    )
    from flow_core.verify._gate import (
        GateFacts as GateFacts,
        evaluate_gate as evaluate_gate,
    )
else:
    # Hidden from type checkers on purpose: a module __getattr__ would make every misspelt
    # name type-check as Any; they read the explicit re-exports above instead.
    #: Every public name, under the module that defines it. ``tests/test_public_api.py`` checks that
    #: this table and the imports above (which type checkers read) name the same modules.
    __all__, __getattr__, __dir__, _EXPORTS = lazy_door(
        __name__,
        {
            "flow_core._catalogue": (
                "EDITOR_ERROR_CODES",
                "ERROR_CATEGORIES",
                "ERROR_CODES",
                "EXIT_CODES",
                "ErrorCategory",
                "ErrorCode",
                "Explanation",
                "error_category",
                "explain_error",
            ),
            "flow_core._errors": (
                "BackendError",
                "ConfigError",
                "EditorError",
                "FlowError",
                "NotTrustedError",
                "UnknownCheckError",
            ),
            "flow_core._factory": (
                "config_status",
                "open_runtime",
                "run_store_root",
                "user_run_store",
            ),
            "flow_core._outcome": (
                "Invocation",
                "error_report",
                "exit_code_for",
                "is_error",
            ),
            "flow_core._protocols": (
                "EDITOR_TIMEOUT_DEFAULT",
                "EDITOR_TIMEOUT_MAX",
                "EDITOR_TIMEOUT_MIN",
                "ROLES",
                "ChatBackend",
                "ChatMessage",
                "ChatResponse",
                "EditorBridge",
                "EditorFreshness",
                "EditorLintResult",
                "Event",
                "EventSink",
                "Role",
                "ToolCall",
                "describe_event",
            ),
            "flow_core._report": (
                "Budget",
                "Budgets",
                "CheckResult",
                "CheckSpec",
                "CoverageEntry",
                "CycleRecord",
                "ErrorInfo",
                "GateConditions",
                "Report",
                "Review",
                "RoleUsage",
                "Timings",
                "ToolCallRecord",
                "Verification",
                "report_json_schema",
            ),
            "flow_core._signals": (
                "STOP_SIGNALS",
                "Interrupts",
            ),
            "flow_core._stdio": ("StdioTakeover",),
            "flow_core._xdg": ("state_dir",),
            "flow_core.config._load": (
                "load_config",
                "user_config_path",
            ),
            "flow_core.config._schema": (
                "AgentConfig",
                "CheckConfig",
                "FlowConfig",
                "LoadedConfig",
                "ModelsConfig",
                "OllamaConfig",
                "OpenAIConfig",
            ),
            "flow_core.models": ("make_backend",),
            "flow_core.models._http": ("BACKEND_ERROR_CODES",),
            "flow_core.models._parse": (
                "REPLY_ISSUE_CODES",
                "ParsedReply",
                "ReplyIssue",
                "parse_reply",
            ),
            "flow_core.models.ollama": ("OllamaBackend",),
            "flow_core.models.openai": ("OpenAIBackend",),
            "flow_core.models.scripted": (
                "ScriptedBackend",
                "ScriptedReply",
                "ScriptedRequest",
            ),
            "flow_core.prompts": (
                "list_prompts",
                "load_prompt",
            ),
            "flow_core.run": ("REVIEW_SCHEMA",),
            "flow_core.run._runtime": ("Runtime",),
            "flow_core.tools._policy": (
                "EDITOR_TOOL_NAMES",
                "FILE_TOOL_NAMES",
                "READ_ONLY_TOOL_NAMES",
                "role_tools",
            ),
            "flow_core.verify._checks": (
                "kill_all_process_groups",
                "run_check",
            ),
            "flow_core.verify._filetypes": ("language_key",),
            "flow_core.verify._gate": (
                "GateFacts",
                "evaluate_gate",
            ),
        },
        globals(),
        eager=["__version__"],
    )
