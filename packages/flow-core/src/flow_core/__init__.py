"""flow-core: Flow's verified planner → coder → reviewer runtime.

Config, model backends, file tools, named checks, the verification gate and reports, shared by
the CLI, the TUI, the MCP server and custom agents.

The public door is lazy: ``import flow_core`` loads only this module, and each name below is
imported from the module that defines it the first time it is used (PEP 562 module
``__getattr__``), so a command loads only what it uses (``flow status`` loads no model backend,
no file tool and no check runner). ``from flow_core import X`` and ``flow_core.__all__`` work as
before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from flow_core.__about__ import __version__

if TYPE_CHECKING:
    from flow_core._catalogue import (
        EDITOR_ERROR_CODES,
        ERROR_CATEGORIES,
        ERROR_CODES,
        EXIT_CODES,
        ErrorCategory,
        Explanation,
        error_category,
        explain_error,
    )
    from flow_core._errors import (
        BackendError,
        ConfigError,
        EditorError,
        FlowError,
        NotTrustedError,
        UnknownCheckError,
    )
    from flow_core._outcome import error_report, exit_code_for, is_error
    from flow_core._protocols import (
        EDITOR_TIMEOUT_DEFAULT,
        EDITOR_TIMEOUT_MAX,
        EDITOR_TIMEOUT_MIN,
        ROLES,
        ChatBackend,
        ChatMessage,
        ChatResponse,
        EditorBridge,
        EditorFreshness,
        EditorLintResult,
        Event,
        EventSink,
        Role,
        ToolCall,
    )
    from flow_core._report import (
        Budget,
        Budgets,
        CheckResult,
        CheckSpec,
        CoverageEntry,
        CycleRecord,
        ErrorInfo,
        GateConditions,
        Report,
        Review,
        RoleUsage,
        Timings,
        ToolCallRecord,
        Verification,
        report_json_schema,
    )
    from flow_core._signals import Interrupts
    from flow_core._stdio import StdioTakeover
    from flow_core._xdg import state_dir
    from flow_core.config._load import load_config, user_config_path
    from flow_core.config._schema import (
        AgentConfig,
        CheckConfig,
        FlowConfig,
        LoadedConfig,
        ModelsConfig,
        OllamaConfig,
        OpenAIConfig,
    )
    from flow_core.models import make_backend
    from flow_core.models._http import BACKEND_ERROR_CODES
    from flow_core.models._parse import REPLY_ISSUE_CODES, ParsedReply, ReplyIssue, parse_reply
    from flow_core.models.ollama import OllamaBackend
    from flow_core.models.openai import OpenAIBackend
    from flow_core.models.scripted import ScriptedBackend, ScriptedReply, ScriptedRequest
    from flow_core.prompts import list_prompts, load_prompt
    from flow_core.run import REVIEW_SCHEMA
    from flow_core.run._runtime import Runtime
    from flow_core.tools._policy import (
        EDITOR_TOOL_NAMES,
        FILE_TOOL_NAMES,
        READ_ONLY_TOOL_NAMES,
        role_tools,
    )
    from flow_core.verify._checks import kill_all_process_groups, run_check
    from flow_core.verify._filetypes import language_key
    from flow_core.verify._gate import GateFacts, evaluate_gate

#: Every public name and the module that defines it. ``tests/test_public_api.py`` checks that
#: this table and the imports above (which type checkers read) name the same modules.
_EXPORTS: dict[str, str] = {
    "AgentConfig": "flow_core.config._schema",
    "BACKEND_ERROR_CODES": "flow_core.models._http",
    "BackendError": "flow_core._errors",
    "Budget": "flow_core._report",
    "Budgets": "flow_core._report",
    "ChatBackend": "flow_core._protocols",
    "ChatMessage": "flow_core._protocols",
    "ChatResponse": "flow_core._protocols",
    "CheckConfig": "flow_core.config._schema",
    "CheckResult": "flow_core._report",
    "CheckSpec": "flow_core._report",
    "ConfigError": "flow_core._errors",
    "CoverageEntry": "flow_core._report",
    "CycleRecord": "flow_core._report",
    "EDITOR_TIMEOUT_DEFAULT": "flow_core._protocols",
    "EDITOR_TIMEOUT_MAX": "flow_core._protocols",
    "EDITOR_TIMEOUT_MIN": "flow_core._protocols",
    "EDITOR_TOOL_NAMES": "flow_core.tools._policy",
    "EDITOR_ERROR_CODES": "flow_core._catalogue",
    "ERROR_CATEGORIES": "flow_core._catalogue",
    "ERROR_CODES": "flow_core._catalogue",
    "EXIT_CODES": "flow_core._catalogue",
    "ErrorCategory": "flow_core._catalogue",
    "Explanation": "flow_core._catalogue",
    "error_category": "flow_core._catalogue",
    "state_dir": "flow_core._xdg",
    "explain_error": "flow_core._catalogue",
    "error_report": "flow_core._outcome",
    "exit_code_for": "flow_core._outcome",
    "is_error": "flow_core._outcome",
    "EditorBridge": "flow_core._protocols",
    "EditorError": "flow_core._errors",
    "EditorFreshness": "flow_core._protocols",
    "EditorLintResult": "flow_core._protocols",
    "ErrorInfo": "flow_core._report",
    "Event": "flow_core._protocols",
    "EventSink": "flow_core._protocols",
    "FILE_TOOL_NAMES": "flow_core.tools._policy",
    "FlowConfig": "flow_core.config._schema",
    "FlowError": "flow_core._errors",
    "GateConditions": "flow_core._report",
    "GateFacts": "flow_core.verify._gate",
    "Interrupts": "flow_core._signals",
    "LoadedConfig": "flow_core.config._schema",
    "ModelsConfig": "flow_core.config._schema",
    "NotTrustedError": "flow_core._errors",
    "OllamaBackend": "flow_core.models.ollama",
    "OllamaConfig": "flow_core.config._schema",
    "OpenAIBackend": "flow_core.models.openai",
    "OpenAIConfig": "flow_core.config._schema",
    "ParsedReply": "flow_core.models._parse",
    "READ_ONLY_TOOL_NAMES": "flow_core.tools._policy",
    "REPLY_ISSUE_CODES": "flow_core.models._parse",
    "REVIEW_SCHEMA": "flow_core.run",
    "ROLES": "flow_core._protocols",
    "ReplyIssue": "flow_core.models._parse",
    "Report": "flow_core._report",
    "Review": "flow_core._report",
    "Role": "flow_core._protocols",
    "RoleUsage": "flow_core._report",
    "Runtime": "flow_core.run._runtime",
    "ScriptedBackend": "flow_core.models.scripted",
    "ScriptedReply": "flow_core.models.scripted",
    "ScriptedRequest": "flow_core.models.scripted",
    "StdioTakeover": "flow_core._stdio",
    "Timings": "flow_core._report",
    "ToolCall": "flow_core._protocols",
    "ToolCallRecord": "flow_core._report",
    "UnknownCheckError": "flow_core._errors",
    "Verification": "flow_core._report",
    "evaluate_gate": "flow_core.verify._gate",
    "kill_all_process_groups": "flow_core.verify._checks",
    "language_key": "flow_core.verify._filetypes",
    "list_prompts": "flow_core.prompts",
    "load_config": "flow_core.config._load",
    "load_prompt": "flow_core.prompts",
    "make_backend": "flow_core.models",
    "parse_reply": "flow_core.models._parse",
    "report_json_schema": "flow_core._report",
    "role_tools": "flow_core.tools._policy",
    "run_check": "flow_core.verify._checks",
    "user_config_path": "flow_core.config._load",
}


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use, then keep it in this namespace."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flow_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "BACKEND_ERROR_CODES",
    "EDITOR_ERROR_CODES",
    "EDITOR_TIMEOUT_DEFAULT",
    "EDITOR_TIMEOUT_MAX",
    "EDITOR_TIMEOUT_MIN",
    "EDITOR_TOOL_NAMES",
    "ERROR_CATEGORIES",
    "ERROR_CODES",
    "EXIT_CODES",
    "FILE_TOOL_NAMES",
    "READ_ONLY_TOOL_NAMES",
    "REPLY_ISSUE_CODES",
    "REVIEW_SCHEMA",
    "ROLES",
    "AgentConfig",
    # errors
    "BackendError",
    # report
    "Budget",
    "Budgets",
    # backends
    "ChatBackend",
    "ChatMessage",
    "ChatResponse",
    "CheckConfig",
    "CheckResult",
    "CheckSpec",
    "ConfigError",
    "CoverageEntry",
    "CycleRecord",
    # editor seam
    "EditorBridge",
    "EditorError",
    "EditorFreshness",
    "EditorLintResult",
    "ErrorCategory",
    "ErrorInfo",
    # events
    "Event",
    "EventSink",
    "Explanation",
    # config
    "FlowConfig",
    "FlowError",
    "GateConditions",
    "GateFacts",
    "Interrupts",
    "LoadedConfig",
    "ModelsConfig",
    "NotTrustedError",
    "OllamaBackend",
    "OllamaConfig",
    "OpenAIBackend",
    "OpenAIConfig",
    "ParsedReply",
    "ReplyIssue",
    "Report",
    "Review",
    "Role",
    "RoleUsage",
    # runtime, checks, gate, tools, prompts
    "Runtime",
    "ScriptedBackend",
    "ScriptedReply",
    "ScriptedRequest",
    "StdioTakeover",
    "Timings",
    "ToolCall",
    "ToolCallRecord",
    "UnknownCheckError",
    "Verification",
    "__version__",
    "error_category",
    "error_report",
    "evaluate_gate",
    "exit_code_for",
    "explain_error",
    "is_error",
    "kill_all_process_groups",
    "language_key",
    "list_prompts",
    "load_config",
    "load_prompt",
    "make_backend",
    "parse_reply",
    "report_json_schema",
    "role_tools",
    "run_check",
    "state_dir",
    "user_config_path",
]
