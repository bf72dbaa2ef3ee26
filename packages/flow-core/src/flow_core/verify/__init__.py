"""Verification: named checks, coverage keys and the gate that judges a cycle."""

from flow_core.verify._checks import kill_all_process_groups, run_check
from flow_core.verify._filetypes import (
    DOC_KEY,
    TOOL_CONFIG_KEY,
    is_tool_config,
    language_key,
)
from flow_core.verify._gate import STATIC_KINDS, GateFacts, evaluate_gate
from flow_core.verify._toolfiles import protected_reason

__all__ = [
    "DOC_KEY",
    "STATIC_KINDS",
    "TOOL_CONFIG_KEY",
    "GateFacts",
    "evaluate_gate",
    "is_tool_config",
    "kill_all_process_groups",
    "language_key",
    "protected_reason",
    "run_check",
]
