"""Verification: named checks, coverage keys and the gate that judges a cycle.

Names are loaded on first use (PEP 562): importing one light submodule, such as the table of
files other tools run or obey (``_toolfiles``) that the config needs at load, does not start
the check runner (``_checks``: subprocess, signals, the jail).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {
    "kill_all_process_groups": "_checks",
    "run_check": "_checks",
    "DOC_KEY": "_filetypes",
    "TOOL_CONFIG_KEY": "_filetypes",
    "is_tool_config": "_filetypes",
    "language_key": "_filetypes",
    "STATIC_KINDS": "_gate",
    "GateFacts": "_gate",
    "evaluate_gate": "_gate",
    "protected_reason": "_toolfiles",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
