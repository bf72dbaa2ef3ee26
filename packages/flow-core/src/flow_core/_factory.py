"""One way to build Flow for a process: the CLI, the TUI and the MCP server all come here.

After ``load_config``, ``config_status`` answers ``status`` from the config alone (no runtime,
no run store opened, no backend: ``flow status`` stays a cold start of the config and the
report; ``run_store_root`` checks where the store lives without loading it), and
``open_runtime`` wires a ``Runtime`` the same way for every front end: the loaded config and
its sources, the trust flag, a progress sink, an attached editor, and the user's run store
(``$XDG_STATE_HOME/flow/runs``), refused when it lies inside the workspace.
Source of the shape: ``docs/architecture.md``, section "Runtime".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from flow_core._protocols import EditorBridge, EventSink
    from flow_core._report import Report
    from flow_core.config import FlowConfig, LoadedConfig
    from flow_core.run import Runtime
    from flow_core.store import RunStore

__all__ = ["config_status", "open_runtime", "run_store_root", "user_run_store"]


def run_store_root(config: FlowConfig) -> Path:
    """Where the user's run store for ``config``'s workspace lives, checked as
    ``user_run_store`` checks it, with nothing opened and the store's code not loaded
    (``store/_where.py``; ``flow status``).

    Raises:
        StoreError: ``run_store_unusable`` when it lies inside the workspace.
    """
    from flow_core.store._where import store_root_outside

    return store_root_outside(config.workspace_dir)


def user_run_store(config: FlowConfig) -> RunStore:
    """The user's run store for ``config``'s workspace.

    Raises:
        StoreError: ``run_store_unusable`` when it lies inside the workspace.
    """
    from flow_core.store._store import RunStore

    return RunStore.for_workspace(config.workspace_dir, config.runs)


def config_status(
    config: FlowConfig, *, trusted: bool, sources: Sequence[str], remembered: bool = False
) -> Report:
    """The ``status`` report: the configuration only, no model request, no command.

    ``ok`` is false, and ``warnings`` says why, when no run could be verified as configured
    (``run/_preflight.py``); likely mistakes that leave ``ok`` true are warnings too.
    ``remembered`` (the ``flow status`` command) lets ``sandbox`` come from a usable bubblewrap
    probe remembered under unchanged conditions (``verify/_probe_cache.py``); otherwise it is
    probed in this process and nothing is written.
    """
    from flow_core.run._preflight import config_hints, preflight
    from flow_core.run._reporting import status_report

    report = status_report(config, trusted=trusted, sources=sources, remembered=remembered)
    warnings = preflight(config, task=None, trusted=trusted)
    hints = config_hints(config)
    if warnings or hints:
        update: dict[str, Any] = {"warnings": [*warnings, *hints]}
        if warnings:
            update["ok"] = False
        report = report.model_copy(update=update)
    return report


def open_runtime(
    loaded: LoadedConfig,
    *,
    trusted: bool,
    on_event: EventSink | None = None,
    editor: EditorBridge | None = None,
) -> Runtime:
    """A ``Runtime`` for ``loaded``, recording every run in the user's run store.

    Args:
        loaded: what ``load_config`` returned.
        trusted: the ``--trusted`` flag.
        on_event: progress sink (the CLI's live view, the TUI, the MCP progress relay).
        editor: an attached editor bridge (flow-rose), owned by the runtime from here on.

    Raises:
        StoreError: ``run_store_unusable`` (the store lies inside the workspace).
    """
    from flow_core.run._runtime import Runtime

    return Runtime(
        loaded,
        trusted=trusted,
        editor=editor,
        on_event=on_event,
        store=user_run_store(loaded.config),
    )
