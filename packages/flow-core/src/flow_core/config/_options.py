"""Model options: ``[ollama.options]``, ``[openai.options]`` and ``[models.options.ROLE]``.

The operator sets sampling, the reply's length and the context window once per backend and,
where a role needs something else, per role (a role's table replaces only the keys it sets).
Each backend sends them in its own wire form (``flow_core.models``):

=====================  ===================================  =================================
key                    Ollama ``/api/chat``                 OpenAI-compatible (llama.cpp)
=====================  ===================================  =================================
``context_tokens``     ``options.num_ctx``                  not sent (the server's ``n_ctx``)
``temperature``        ``options.temperature``              ``temperature``
``seed``               ``options.seed``                     ``seed``
``max_reply_tokens``   ``options.num_predict``              ``max_tokens``
``keep_alive``         top-level ``keep_alive``             not sent
``cache_prompt``       not sent                             ``cache_prompt`` (llama.cpp)
``think``              top-level ``think``                  bool: ``chat_template_kwargs.``
                                                            ``enable_thinking``; a level:
                                                            ``reasoning_effort``
``guided``             a reply schema in ``format``         a reply schema in
                                                            ``response_format``
=====================  ===================================  =================================

``context_tokens`` is also the window Flow fits each prompt into: the role's character budget
is ``(context_tokens - max_reply_tokens) * CHARS_PER_TOKEN`` unless ``agent.max_context_chars``
is set. Unset, the window is asked from the server where it says (Ollama ``/api/show``,
llama.cpp ``/props``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CHARS_PER_TOKEN", "DEFAULT_REPLY_TOKENS", "ModelOptions", "merged_options"]

#: Characters per token assumed when a window in tokens becomes a budget in characters; low
#: on purpose (read_file output, numbered lines of code, measured 2.1 with SmolLM2's
#: vocabulary; prose runs about 4), so the estimate errs on the safe side of the window.
CHARS_PER_TOKEN = 2.0
#: The reply's token limit when none is configured: finite, so a model that never stops
#: cannot fill the window, and reserved out of the window for every request.
DEFAULT_REPLY_TOKENS = 1024


class ModelOptions(BaseModel):
    """One set of model options; every key optional (unset: the backend's or server's).

    Attributes:
        context_tokens: the context window in tokens (> 0).
        temperature: sampling temperature (0 to 2).
        sampler_seed: TOML key ``seed``, the sampler's random seed, for repeatable runs.
        max_reply_tokens: the most tokens one reply may have (default ``DEFAULT_REPLY_TOKENS``).
        keep_alive: Ollama only: how long the model stays loaded (``"10m"``, ``"-1"``, ``"0"``).
        cache_prompt: llama.cpp only: reuse the KV cache of the previous request's prefix.
        think: a thinking model's reasoning on (true), off (false) or at a level (``"low"``,
            ``"medium"``, ``"high"``); the reasoning comes apart from the answer.
        guided: constrain each reply to one of the role's tool calls or a final answer
            (``"on"``), not (``"off"``, the default), or where a probe finds the server
            honours a reply schema (``"auto"``); never sent as such (``run/_guided.py``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    context_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0, le=2, allow_inf_nan=False)
    sampler_seed: int | None = Field(default=None, alias="seed")
    max_reply_tokens: int | None = Field(default=None, gt=0)
    keep_alive: str | int | None = None
    cache_prompt: bool | None = None
    think: bool | Literal["low", "medium", "high"] | None = None
    guided: Literal["auto", "on", "off"] | None = None


def merged_options(base: ModelOptions, override: ModelOptions | None) -> dict[str, Any]:
    """The keys set in ``base``, replaced by those set in ``override`` (role over backend)."""
    out = base.model_dump(exclude_none=True, by_alias=True)
    if override is not None:
        out.update(override.model_dump(exclude_none=True, by_alias=True))
    out.setdefault("max_reply_tokens", DEFAULT_REPLY_TOKENS)
    return out
