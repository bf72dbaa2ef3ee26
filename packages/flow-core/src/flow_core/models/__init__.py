"""Model backends: the Ollama native API, a scripted backend, and ``make_backend``.

``httpx`` is imported only when an HTTP client is built (``_http.make_client``), so importing
flow-core, and ``flow status`` (which makes no model request), never import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flow_core.models._http import BACKEND_ERROR_CODES
from flow_core.models._parse import REPLY_ISSUE_CODES, ParsedReply, ReplyIssue, parse_reply
from flow_core.models.ollama import OllamaBackend
from flow_core.models.scripted import ScriptedBackend, ScriptedReply, ScriptedRequest

if TYPE_CHECKING:
    import httpx

    from flow_core._protocols import ChatBackend
    from flow_core.config import FlowConfig

__all__ = [
    "BACKEND_ERROR_CODES",
    "REPLY_ISSUE_CODES",
    "OllamaBackend",
    "ParsedReply",
    "ReplyIssue",
    "ScriptedBackend",
    "ScriptedReply",
    "ScriptedRequest",
    "make_backend",
    "parse_reply",
]


def make_backend(
    config: FlowConfig, *, transport: httpx.BaseTransport | None = None
) -> ChatBackend:
    """Build the backend that ``config.backend`` selects.

    ``"ollama"`` gives an ``OllamaBackend`` for ``[ollama]``; ``"openai"`` gives
    ``flow_core.models.openai.OpenAIBackend`` for ``[openai]``, constructed as
    ``OpenAIBackend(base_url, timeout=seconds, allow_remote=bool, transport=transport)``.

    Args:
        config: a validated ``FlowConfig``.
        transport: an ``httpx`` transport for tests (``httpx.MockTransport``); None for the
            network.

    Raises:
        BackendError: code ``remote_refused`` for a non-loopback URL without ``allow_remote``.
    """
    if config.backend == "ollama":
        return OllamaBackend(
            config.ollama.base_url,
            timeout=config.ollama.timeout,
            allow_remote=config.ollama.allow_remote,
            transport=transport,
            tool_results=config.ollama.tool_results,
            options=config.ollama.options.model_dump(exclude_none=True, by_alias=True),
        )
    from flow_core.models.openai import OpenAIBackend  # imported only when selected

    return OpenAIBackend(
        config.openai.base_url,
        timeout=config.openai.timeout,
        allow_remote=config.openai.allow_remote,
        transport=transport,
        tool_results=config.openai.tool_results,
        options=config.openai.options.model_dump(exclude_none=True, by_alias=True),
    )
