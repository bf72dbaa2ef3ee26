"""``HTTPBackend``: what every HTTP ``ChatBackend`` shares, written once.

The constructor checks (``check_backend_settings``, ``check_base_url``), the model options a
request falls back to, the per-model window cache and the per-model tool-result delivery memo.
A subclass says only what is its server's own: how to ask the server for a model's window
(``_server_window``), how ``"auto"`` picks a delivery (``_probe_delivery``) and how it learns
whether tool definitions reach the model (``_probe_tools``). The seam these
methods implement is ``flow_core._protocols.ChatBackend`` (``docs/architecture.md``,
"Backends").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from flow_core._errors import BackendError
from flow_core.models._http import Peer, check_backend_settings, check_base_url

__all__ = ["HTTPBackend", "HTTPSettings"]


@dataclass(frozen=True)
class HTTPSettings:
    """What an HTTP backend is told by its config, as one value; checked once by
    ``HTTPBackend`` (``docs/architecture.md``, "Trust").

    Attributes:
        base_url: the server's URL (Ollama: its root, ``http://127.0.0.1:11434``; OpenAI: the
            API root with its version path, ``http://127.0.0.1:8080/v1``); loopback
            (127.0.0.0/8, ``::1``, ``localhost``) unless ``allow_remote``.
        timeout: seconds for each phase of one HTTP request (connect, write, each read,
            pool); > 0.
        allow_remote: the operator's explicit permission for a non-loopback host.
        max_response_bytes: the most bytes one reply may have (a streamed reply counts every
            line); > 0; more raises ``response_too_large``.
        tool_results: ``"native"``, ``"user"`` or ``"auto"`` (``flow_core.models._delivery``);
            auto decides once per model, before its first request that carries a tool result.
        options: the backend's own model options (``flow_core.config._options``), used when a
            request passes none.
        timeout_key: the config key named, with the seconds, in a ``backend_timeout`` message;
            None: the backend's own (``"ollama.timeout"``, ``"openai.timeout"``).
    """

    base_url: str
    timeout: float
    allow_remote: bool = False
    max_response_bytes: int = 4_000_000
    tool_results: str = "auto"
    options: Mapping[str, Any] | None = None
    timeout_key: str | None = None


class HTTPBackend:
    """The shared half of an HTTP backend (not used alone).

    Args:
        settings: the backend's settings (``HTTPSettings``).

    A subclass names its config section in ``section`` (``"ollama"``): errors name
    ``SECTION.base_url``, and a timeout names ``SECTION.timeout`` unless the settings name
    another key.

    Raises:
        BackendError: ``remote_refused`` or ``backend_malformed`` for the URL.
        ValueError: a non-positive ``timeout`` or ``max_response_bytes``, or an unknown
            ``tool_results``.
    """

    #: The config section the backend's settings come from (``"ollama"``, ``"openai"``).
    section: ClassVar[str]

    def __init__(self, settings: HTTPSettings) -> None:
        check_backend_settings(
            timeout=settings.timeout,
            max_response_bytes=settings.max_response_bytes,
            tool_results=settings.tool_results,
        )
        self.options = dict(settings.options or {})
        self.tool_results = settings.tool_results
        #: The delivery mode decided for each model (``"native"`` or ``"user"``).
        self.delivery: dict[str, str] = {}
        #: Whether tool definitions reach each model's prompt (``tool_definitions_reach``).
        self.tools_reach: dict[str, bool] = {}
        self._windows: dict[str, int | None] = {}
        self.base_url = check_base_url(
            settings.base_url,
            allow_remote=settings.allow_remote,
            setting=f"{self.section}.base_url",
        )
        self.timeout = float(settings.timeout)
        self.timeout_key = settings.timeout_key or f"{self.section}.timeout"
        self.max_response_bytes = settings.max_response_bytes

    #: The server's name in messages and what to do when it cannot be reached (the subclass
    #: sets both in its constructor).
    _server: str
    _fix: str

    @property
    def _peer(self) -> Peer:
        """The server as error messages name it (``stream_request``)."""
        return Peer(self._server, self._fix, self.timeout_key)

    def request_options(self, options: Mapping[str, Any] | None) -> Mapping[str, Any]:
        """``options`` for one request, or the backend's own when None."""
        return self.options if options is None else options

    def context_window(self, model: str, options: Mapping[str, Any] | None = None) -> int | None:
        """The window ``model`` runs with, in tokens: ``context_tokens`` of ``options`` (None:
        the backend's own) when set, else what the server says (asked once per model, see
        the subclass's ``_server_window``); None when the server cannot say."""
        opts = self.request_options(options)
        if isinstance(opts.get("context_tokens"), int):
            return int(opts["context_tokens"])
        if model not in self._windows:
            self._windows[model] = self._server_window(model)
        return self._windows[model]

    def tool_results_in_use(self, model: str) -> str | None:
        """The delivery decided for ``model`` (``tool_delivery``), None before the first
        request that carried a tool result."""
        return self.delivery.get(model)

    def tool_delivery(self, model: str) -> str:
        """How tool results reach ``model``: ``"native"`` or ``"user"``, decided once per model
        (under ``"auto"`` by the subclass's ``_probe_delivery``).

        Raises:
            BackendError: the probe failed (only where the subclass's probe raises).
        """
        mode = self.delivery.get(model)
        if mode is None:
            mode = self.tool_results
            if mode == "auto":
                mode = self._probe_delivery(model)
            self.delivery[model] = mode
        return mode

    def tool_definitions_reach(self, model: str) -> bool:
        """Whether tool definitions reach ``model``'s prompt, asked once per model (the
        subclass's ``_probe_tools``); True when the probe fails (the request then reports
        the real problem)."""
        known = self.tools_reach.get(model)
        if known is None:
            try:
                known = self._probe_tools(model)
            except BackendError:
                known = True
            self.tools_reach[model] = known
        return known

    def _probe_tools(self, model: str) -> bool:
        raise NotImplementedError  # pragma: no cover - each backend probes its own way

    def _server_window(self, model: str) -> int | None:
        raise NotImplementedError  # pragma: no cover - each backend asks its own server

    def _probe_delivery(self, model: str) -> str:
        raise NotImplementedError  # pragma: no cover - each backend probes its own way

    def close(self) -> None:
        raise NotImplementedError  # pragma: no cover - each backend closes its own client

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
