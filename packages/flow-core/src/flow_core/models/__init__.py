"""Model backends: the Ollama native API, a scripted backend, and ``make_backend``.

``httpx`` is imported only when an HTTP client is built (``_http.make_client``), so importing
flow-core, and ``flow status`` (which makes no model request), never import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flow_core.models._base import HTTPSettings
from flow_core.models._http import BACKEND_ERROR_CODES
from flow_core.models._parse import REPLY_ISSUE_CODES, ParsedReply, ReplyIssue, parse_reply
from flow_core.models.ollama import OllamaBackend
from flow_core.models.scripted import ScriptedBackend, ScriptedReply, ScriptedRequest

if TYPE_CHECKING:
    import httpx

    from flow_core._protocols import ChatBackend
    from flow_core.config import FlowConfig, OllamaConfig, OpenAIConfig

__all__ = [
    "BACKEND_ERROR_CODES",
    "REPLY_ISSUE_CODES",
    "HTTPSettings",
    "OllamaBackend",
    "ParsedReply",
    "ReplyIssue",
    "ScriptedBackend",
    "ScriptedReply",
    "ScriptedRequest",
    "http_settings",
    "make_backend",
    "parse_reply",
]


def make_backend(
    config: FlowConfig, *, transport: httpx.BaseTransport | None = None
) -> ChatBackend:
    """Build the backend that ``config.backend`` selects.

    ``"ollama"`` gives an ``OllamaBackend`` for ``[ollama]``; ``"openai"`` gives
    ``flow_core.models.openai.OpenAIBackend`` for ``[openai]``; each is handed that section's
    ``HTTPSettings`` (``http_settings``).

    Args:
        config: a validated ``FlowConfig``.
        transport: an ``httpx`` transport for tests (``httpx.MockTransport``); None for the
            network.

    Raises:
        BackendError: code ``remote_refused`` for a non-loopback URL without ``allow_remote``.
    """
    if config.backend == "ollama":
        return OllamaBackend(http_settings(config.ollama), transport=transport)
    from flow_core.models.openai import OpenAIBackend  # imported only when selected

    return OpenAIBackend(http_settings(config.openai), transport=transport)


def http_settings(section: OllamaConfig | OpenAIConfig) -> HTTPSettings:
    """The ``HTTPSettings`` of one validated config section (``[ollama]`` or ``[openai]``):
    its URL, timeout, remote permission, tool-result delivery and the model options it sets
    (unset ones left out, under their config names)."""
    return HTTPSettings(
        section.base_url,
        timeout=section.timeout,
        allow_remote=section.allow_remote,
        tool_results=section.tool_results,
        options=section.options.model_dump(exclude_none=True, by_alias=True),
    )
