"""Every tool result reaches the bundled model, proved by the server's own token counts.

llama-cpp-python's ``chatml-function-calling`` renders a ``tool`` message as an empty line and
plain ``chatml`` drops it. With ``tool_results = "auto"`` Flow probes each model name and sends
results as delimited user messages where needed. Here the same conversation is sent with a
one-word result and with a real file's text as the result: the server's ``prompt_tokens``
must grow by at least the file's own token count (the server's tokenizer, ``/extras/tokenize``
where it has one). ``"native"`` on the same server is the negative control: the count does
not grow, the model never saw the file.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import modelserver
import pytest

from flow_core import ChatMessage, ToolCall
from flow_core.models import HTTPSettings
from flow_core.models.openai import OpenAIBackend

#: A real file, about 2 KB: the e2e sample's sources, twice.
_SAMPLE = Path(__file__).resolve().parent / "sample_project"


def _content() -> str:
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(_SAMPLE.glob("*.py")))
    return text * 2


def _history(result: str) -> list[ChatMessage]:
    call = ToolCall("call_1", "read_file", {"path": "calc.py"})
    return [
        ChatMessage("system", "You are a coding assistant."),
        ChatMessage("user", "Read calc.py and say what add() returns."),
        ChatMessage("assistant", "", tool_calls=(call,)),
        ChatMessage("tool", result, tool_call_id="call_1", name="read_file"),
    ]


def _tokens(server: modelserver.ModelServer, text: str) -> int:
    """The server's own token count for ``text`` (else a low estimate: 6 chars a token)."""
    try:
        reply = httpx.post(
            server.root_url + "/extras/tokenize",
            json={"input": text, "model": server.model},
            timeout=60,
            trust_env=False,
        )
        if reply.status_code == 200:
            return len(reply.json()["tokens"])
    except (httpx.HTTPError, ValueError, KeyError):
        pass
    return len(text) // 6


def _growth(backend: OpenAIBackend, model: str, content: str) -> int:
    short = backend.chat(model, _history("ok"))
    long = backend.chat(model, _history(content))
    assert short.prompt_tokens is not None
    assert long.prompt_tokens is not None
    return long.prompt_tokens - short.prompt_tokens


@pytest.mark.parametrize("alias", ["model", "chat_model"])
def test_every_tool_result_reaches_the_bundled_model(
    model_server: modelserver.ModelServer, alias: str
) -> None:
    model = getattr(model_server, alias)
    content = _content()
    expected = _tokens(model_server, content)
    assert expected > 100
    options = {"max_reply_tokens": 1, "seed": 7, "temperature": 0.0}
    with_auto = OpenAIBackend(HTTPSettings(model_server.base_url, timeout=300, options=options))
    grown = _growth(with_auto, model, content)
    assert grown >= 0.9 * expected, (with_auto.delivery, grown, expected)
    assert with_auto.delivery[model] == "user"
    with_auto.close()

    # Negative control: the server's template loses the result when sent in the tool role.
    native = OpenAIBackend(
        HTTPSettings(model_server.base_url, timeout=300, options=options, tool_results="native")
    )
    assert _growth(native, model, content) < 0.1 * expected
    native.close()
