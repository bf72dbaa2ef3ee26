"""Operator configuration: the models, the TOML loader and check-executable pinning."""

from flow_core.config._executables import executable_identity, resolve_executable
from flow_core.config._load import MAX_CONFIG_BYTES, load_config, user_config_path
from flow_core.config._runs import RunsConfig
from flow_core.config._schema import (
    DEFAULT_PROTECTED,
    AgentConfig,
    CheckConfig,
    CheckKind,
    FlowConfig,
    LoadedConfig,
    ModelsConfig,
    OllamaConfig,
    OpenAIConfig,
)

__all__ = [
    "DEFAULT_PROTECTED",
    "MAX_CONFIG_BYTES",
    "AgentConfig",
    "CheckConfig",
    "CheckKind",
    "FlowConfig",
    "LoadedConfig",
    "ModelsConfig",
    "OllamaConfig",
    "OpenAIConfig",
    "RunsConfig",
    "executable_identity",
    "load_config",
    "resolve_executable",
    "user_config_path",
]
