"""flow-core: Flow's verified planner → coder → reviewer runtime.

Config, model backends, file tools, named checks, the verification gate and reports, shared by
the CLI, the TUI, the MCP server and custom agents.
"""

from flow_core.__about__ import __version__
from flow_core._config import FlowConfig, LoadedConfig, load_config
from flow_core._errors import (
    BackendError,
    ConfigError,
    EditorError,
    FlowError,
    NotTrustedError,
    UnknownCheckError,
)
from flow_core._protocols import (
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
from flow_core._runtime import Runtime

__all__ = [
    # errors
    "BackendError",
    # report
    "Budget",
    "Budgets",
    # backends
    "ChatBackend",
    "ChatMessage",
    "ChatResponse",
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
    "LoadedConfig",
    "NotTrustedError",
    "ROLES",
    "Report",
    "Review",
    "Role",
    "RoleUsage",
    # runtime
    "Runtime",
    "Timings",
    "ToolCall",
    "ToolCallRecord",
    "UnknownCheckError",
    "Verification",
    "__version__",
    "load_config",
    "report_json_schema",
]
