"""The verified runtime (stub: filled in by issue 3)."""

from __future__ import annotations

from collections.abc import Sequence

from flow_core._config import FlowConfig
from flow_core._protocols import ChatBackend, EditorBridge, EventSink
from flow_core._report import Report


class Runtime:
    """Plan → code → verify → review under host-enforced budgets. Filled in by issue 3."""

    def __init__(
        self,
        config: FlowConfig,
        *,
        trusted: bool = False,
        backend: ChatBackend | None = None,
        editor: EditorBridge | None = None,
        on_event: EventSink | None = None,
        config_sources: Sequence[str] = (),
    ) -> None:
        self.config = config
        self.trusted = trusted

    def status(self) -> Report:
        raise NotImplementedError

    def check(self, name: str | None = None) -> Report:
        raise NotImplementedError

    def run(self, task: str) -> Report:
        raise NotImplementedError

    def list_models(self) -> list[str]:
        raise NotImplementedError

    def interrupt(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError
