"""The backend seam is declared in full: every backend and wrapper has every member.

``ChatBackend`` (``flow_core/_protocols.py``) names the context window, the tool-result
delivery in use and the request options; nothing reads a backend with ``getattr`` and no
option travels in a context variable (``docs/architecture.md``, "The backend seam").
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from flow_core import ChatBackend, ChatMessage, ChatResponse, ScriptedBackend, ToolCall
from flow_core.models.ollama import OllamaBackend
from flow_core.models.openai import OpenAIBackend
from flow_core.run._journal import _RecordingBackend

#: The protocol's members, read from the protocol itself (a new member is checked too).
MEMBERS = sorted(
    name for name, value in vars(ChatBackend).items() if callable(value) and name[0] != "_"
)
SRC = Path(__file__).resolve().parents[1] / "src" / "flow_core"


def test_the_protocol_declares_window_delivery_and_options() -> None:
    assert {"chat", "context_window", "tool_results_in_use", "list_models", "close"} <= set(MEMBERS)
    assert "options" in inspect.signature(ChatBackend.chat).parameters
    assert "options" in inspect.signature(ChatBackend.context_window).parameters


@pytest.mark.parametrize("cls", [OllamaBackend, OpenAIBackend, ScriptedBackend, _RecordingBackend])
def test_every_implementation_writes_out_every_member(cls: type) -> None:
    # Defined by the class or a Flow base (the HTTP backends share models/_base.HTTPBackend),
    # never inherited from the protocol or left to ``object``.
    own = [k for k in cls.__mro__ if k not in (object, ChatBackend) and k.__module__ != "typing"]
    for name in MEMBERS:
        assert any(name in vars(k) for k in own), f"{cls.__name__} does not define {name}"
        ours = inspect.signature(getattr(cls, name)).parameters
        theirs = inspect.signature(getattr(ChatBackend, name)).parameters
        assert list(ours) == list(theirs), f"{cls.__name__}.{name}"


def test_no_getattr_on_a_backend_and_no_context_variable_for_options() -> None:
    loop = (SRC / "run" / "_loop.py").read_text()
    assert "getattr(" not in loop
    for path in SRC.rglob("*.py"):
        assert "REQUEST_OPTIONS" not in path.read_text(), path


def test_the_recorder_delegates_window_delivery_and_options(tmp_path: Path) -> None:
    from flow_core.config import RunsConfig
    from flow_core.store import RunStore

    inner = ScriptedBackend(
        [ChatResponse("", tool_calls=(ToolCall("c1", "list_files", {}),)), ChatResponse("ok")],
        window=4096,
        tool_results="user",
    )
    store = RunStore(tmp_path / "store", RunsConfig())
    record = store.begin(workspace=str(tmp_path), task="t")
    wrapped = _RecordingBackend(inner, record, {"role": "coder", "cycle": 1})
    assert isinstance(wrapped, ChatBackend)
    assert wrapped.context_window("m", {"context_tokens": 9}) == 4096
    assert wrapped.tool_results_in_use("m") is None
    first = [ChatMessage("user", "hi")]
    wrapped.chat("m", first, options={"temperature": 0.5})
    tool = ChatMessage("tool", "a.py", tool_call_id="c1", name="list_files")
    wrapped.chat("m", [*first, tool], options={"seed": 1})
    assert inner.options == [{"temperature": 0.5}, {"seed": 1}]
    assert wrapped.tool_results_in_use("m") == "user"
