"""Operator configuration (pydantic), loaded from TOML (stub: filled in by issue 3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel


class FlowConfig(BaseModel):
    """The whole operator configuration. Filled in by issue 3."""


@dataclass(frozen=True)
class LoadedConfig:
    """A validated config and the files it came from (absolute paths, in load order)."""

    config: FlowConfig
    sources: list[str]


def load_config(
    *,
    config_file: str | Path | None = None,
    workspace: str | Path | None = None,
    model: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Load the user file, then ``config_file``, then the overrides. Raises ``ConfigError``."""
    raise NotImplementedError
