"""flow-core: Flow's verified planner → coder → reviewer runtime.

Config, model backends, file tools, named checks, the verification gate and reports, shared by
the CLI, the TUI, the MCP server and custom agents.
"""

from flow_core.__about__ import __version__
from flow_core._catalogue import ERROR_CODES
from flow_core._errors import (
    BackendError,
    ConfigError,
    EditorError,
    FlowError,
    NotTrustedError,
    UnknownCheckError,
)
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
from flow_core.config import (
    AgentConfig,
    CheckConfig,
    FlowConfig,
    LoadedConfig,
    ModelsConfig,
    OllamaConfig,
    OpenAIConfig,
    load_config,
    user_config_path,
)
from flow_core.models import (
    BACKEND_ERROR_CODES,
    REPLY_ISSUE_CODES,
    OllamaBackend,
    ParsedReply,
    ReplyIssue,
    ScriptedBackend,
    ScriptedReply,
    ScriptedRequest,
    make_backend,
    parse_reply,
)
from flow_core.models.openai import OpenAIBackend
from flow_core.run import REVIEW_SCHEMA, Runtime
from flow_core.skills import list_skills, load_skill
from flow_core.tools import EDITOR_TOOL_NAMES, FILE_TOOL_NAMES, READ_ONLY_TOOL_NAMES, role_tools
from flow_core.verify import (
    GateFacts,
    evaluate_gate,
    kill_all_process_groups,
    language_key,
    run_check,
)

__all__ = [
    "BACKEND_ERROR_CODES",
    "EDITOR_TIMEOUT_DEFAULT",
    "EDITOR_TIMEOUT_MAX",
    "EDITOR_TIMEOUT_MIN",
    "EDITOR_TOOL_NAMES",
    "ERROR_CODES",
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
    "ErrorInfo",
    # events
    "Event",
    "EventSink",
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
    # runtime, checks, gate, tools, skills
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
    "evaluate_gate",
    "kill_all_process_groups",
    "language_key",
    "list_skills",
    "load_config",
    "load_skill",
    "make_backend",
    "parse_reply",
    "report_json_schema",
    "role_tools",
    "run_check",
    "user_config_path",
]
