"""Verification: named checks, coverage keys and the gate that judges a cycle.

Names are loaded on first use (PEP 562, through ``flow_core._lazy.lazy_door``): importing one
light submodule, such as the table of files other tools run or obey (``_toolfiles``) that the
config needs at load, does not start the check runner (``_checks``: subprocess, signals, the
jail).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flow_core._lazy import lazy_door

if TYPE_CHECKING:
    from flow_core.verify._checks import (
        kill_all_process_groups as kill_all_process_groups,
        run_check as run_check,
    )
    from flow_core.verify._filetypes import (
        DOC_KEY as DOC_KEY,
        TOOL_CONFIG_KEY as TOOL_CONFIG_KEY,
        is_tool_config as is_tool_config,
        language_key as language_key,
    )
    from flow_core.verify._gate import (
        STATIC_KINDS as STATIC_KINDS,
        GateFacts as GateFacts,
        evaluate_gate as evaluate_gate,
    )
    from flow_core.verify._toolfiles import protected_reason as protected_reason
else:
    __all__, __getattr__, __dir__, _EXPORTS = lazy_door(
        __name__,
        {
            "flow_core.verify._checks": ("kill_all_process_groups", "run_check"),
            "flow_core.verify._filetypes": (
                "DOC_KEY",
                "TOOL_CONFIG_KEY",
                "is_tool_config",
                "language_key",
            ),
            "flow_core.verify._gate": ("STATIC_KINDS", "GateFacts", "evaluate_gate"),
            "flow_core.verify._toolfiles": ("protected_reason",),
        },
        globals(),
    )
