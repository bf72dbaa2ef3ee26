"""Shared fixtures for flow-core tests (kept small: several engineers add tests here)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from flow_core import FlowConfig
from flow_core.verify._sandbox import probe_bwrap

# Vendored third-party code used as test input (with its own upstream tests): never collected.
collect_ignore_glob = ["fixtures/vendored/*"]


@pytest.fixture
def flow_config(tmp_path: Path) -> Callable[..., FlowConfig]:
    """Build a validated ``FlowConfig`` for a workspace under ``tmp_path``.

    Call it with ``checks={name: {...}}`` and optional ``agent={...}`` overrides.
    """
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)

    def make(
        checks: Mapping[str, Mapping[str, Any]] | None = None,
        agent: Mapping[str, Any] | None = None,
        **extra: Any,
    ) -> FlowConfig:
        data: dict[str, Any] = {"workspace_dir": str(ws), "checks": dict(checks or {})}
        if agent:
            data["agent"] = dict(agent)
        data.update(extra)
        return FlowConfig.model_validate(data)

    return make


@pytest.fixture
def jail_ok() -> None:
    """Jailed tests need a usable bubblewrap: fail in CI without one, skip elsewhere."""
    probe = probe_bwrap()
    if probe.usable:
        return
    if os.environ.get("CI"):
        pytest.fail(f"bubblewrap must be usable in CI: {probe.reason}")
    pytest.skip(f"bubblewrap is unusable here: {probe.reason}")
