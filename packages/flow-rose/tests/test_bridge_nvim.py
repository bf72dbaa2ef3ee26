"""RoseBridge against a real headless Neovim running the rose.tools test double."""

from __future__ import annotations

import concurrent.futures
import os
import select
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from flow_core import EditorBridge, EditorError
from flow_rose import READ_ONLY_EDITOR_TOOLS, RoseBridge
from flow_rose._connection import CALL_LUA, SCHEMAS_LUA

pytestmark = pytest.mark.nvim

ALLOWED = {
    "editor_context",
    "editor_diagnostics",
    "editor_symbols",
    "editor_references",
    "editor_lint",
    "editor_check",
    "editor_scip",
    "editor_debug",
}


@pytest.fixture
def bridge(editor: Any) -> Iterator[RoseBridge]:
    b = RoseBridge.connect(editor.socket, workspace=editor.workspace, timeout=20.0)
    try:
        yield b
    finally:
        b.close()


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _worker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "flow-rose-editor"]


# -- attach, schemas, roles ---------------------------------------------------------------------


def test_attach_discovers_and_filters_schemas(editor: Any, bridge: RoseBridge) -> None:
    assert isinstance(bridge, EditorBridge)
    assert bridge.workspace() == os.path.realpath(editor.workspace)
    schemas = bridge.tool_schemas()
    names = [s["name"] for s in schemas]
    # The double also offers editor_exec, flow_run, file_read and file_write: never exposed.
    assert set(names) == ALLOWED
    for s in schemas:
        assert set(s) == {"name", "description", "inputSchema", "readOnly"}
        assert s["readOnly"] is (s["name"] in READ_ONLY_EDITOR_TOOLS)
        assert isinstance(s["inputSchema"], dict)
        assert isinstance(s["inputSchema"]["properties"], dict)
    debug = next(s for s in schemas if s["name"] == "editor_debug")
    assert debug["inputSchema"]["properties"]["action"]["enum"] == ["status"]
    # Copies: mutating what we got does not change the bridge.
    schemas[0]["name"] = "changed"
    assert bridge.tool_schemas()[0]["name"] != "changed"


def test_role_tool_sets(bridge: RoseBridge) -> None:
    read_only = {"editor_context", "editor_diagnostics", "editor_symbols"} | {
        "editor_references",
        "editor_scip",
        "editor_debug",
    }
    for role in ("planner", "reviewer"):
        assert {s["name"] for s in bridge.tool_schemas_for(role)} == read_only
        with pytest.raises(EditorError) as excinfo:
            bridge.call_tool("editor_lint", {"paths": []}, role=role)
        assert excinfo.value.code == "editor_tool_denied"
        with pytest.raises(EditorError) as excinfo:
            bridge.call_tool("editor_check", {}, role=role)
        assert excinfo.value.code == "editor_tool_denied"
    assert {s["name"] for s in bridge.tool_schemas_for("coder")} == ALLOWED
    assert bridge.call_tool("editor_check", {}, role="coder")["status"] == "ok"
    assert bridge.call_tool("editor_symbols", {"path": "a.py"}, role="reviewer") == {
        "path": "a.py",
        "symbols": [],
    }


def test_file_tools_and_unlisted_tools_are_not_model_tools(editor: Any, bridge: RoseBridge) -> None:
    for name, code in [
        ("file_write", "editor_tool_denied"),
        ("file_read", "editor_tool_denied"),
        ("editor_exec", "editor_tool_unknown"),
        ("flow_run", "editor_tool_unknown"),
    ]:
        with pytest.raises(EditorError) as excinfo:
            bridge.call_tool(name, {"path": "x", "text": "y"})
        assert excinfo.value.code == code, name
    assert not editor.path("x").exists()


def test_editor_debug_is_status_only(editor: Any, bridge: RoseBridge) -> None:
    for action in ("launch", "probe"):
        with pytest.raises(EditorError) as excinfo:
            bridge.call_tool("editor_debug", {"action": action})
        assert excinfo.value.code == "editor_tool_denied"
    assert bridge.call_tool("editor_debug", {})["state"] == "idle"
    assert bridge.call_tool("editor_debug", {"action": "status", "extra": 1})["state"] == "idle"
    # Rose saw only status requests.
    assert editor.get_global("rose_test_debug_actions") == ["status", "status"]


def test_tool_not_offered_by_rose_is_unknown(editor: Any) -> None:
    editor.set_global("rose_test_no_lint", True)
    with RoseBridge.connect(editor.socket, workspace=editor.workspace, timeout=20) as b:
        assert "editor_lint" not in {s["name"] for s in b.tool_schemas()}
        with pytest.raises(EditorError) as excinfo:
            b.call_tool("editor_lint", {"paths": ["a.py"]})
        assert excinfo.value.code == "editor_tool_unknown"
        result = b.lint(["a.py"])
        assert (result.status, result.verified) == ("unavailable", False)


def test_only_the_two_fixed_lua_expressions_are_sent(editor: Any, proxy: Any) -> None:
    editor.load("a.py", "one\n")
    with RoseBridge.connect(proxy.path, workspace=editor.workspace, timeout=20) as b:
        b.tool_schemas()
        b.call_tool("editor_context", {})
        b.call_tool("editor_debug", {"action": "status"})
        with pytest.raises(EditorError):
            b.call_tool("editor_debug", {"action": "launch"})
        b.read_file("a.py")
        b.write_file("a.py", "two\n")
        b.freshness()
        b.lint(["a.py"])
    deadline = time.monotonic() + 10
    while len(proxy.messages) < 8 and time.monotonic() < deadline:
        time.sleep(0.01)  # the relay thread records asynchronously
    assert proxy.messages, "the proxy saw no traffic"
    messages = list(proxy.messages)
    # pynvim announces itself once with a client-info notification when it connects (no Lua,
    # no command, no keys); everything after it is one of the two fixed Lua requests.
    assert messages[0][0] == 2
    assert _text(messages[0][1]) == "nvim_set_client_info"
    called: list[str] = []
    for msg in messages[1:]:
        assert msg[0] == 0, msg  # requests only
        _, _, method, params = msg
        assert _text(method) == "nvim_exec_lua", msg
        code, args = params
        assert code in (SCHEMAS_LUA, CALL_LUA), code
        if code == SCHEMAS_LUA:
            assert args == []
        else:
            name, arguments = args
            assert isinstance(name, str)
            assert isinstance(arguments, dict)
            called.append(name)
    assert messages[1][3] == [SCHEMAS_LUA, []]
    assert called == [
        "editor_context",  # attach: workspace and freshness
        "editor_context",
        "editor_debug",
        "file_read",
        "file_write",
        "editor_context",
        "editor_lint",
    ]


def test_a_lua_error_in_rose_is_a_protocol_error_and_the_bridge_stays_usable(
    editor: Any, bridge: RoseBridge
) -> None:
    editor.set_global("rose_test_raise", True)
    with pytest.raises(EditorError) as excinfo:
        bridge.call_tool("editor_symbols", {"path": "a.py"})
    assert excinfo.value.code == "editor_protocol"
    assert "failed on purpose" in excinfo.value.message
    lint = bridge.lint(["a.py"])
    assert (lint.status, lint.verified) == ("error", False)
    editor.set_global("rose_test_raise", False)
    assert bridge.call_tool("editor_symbols", {"path": "a.py"})["symbols"] == []


def test_one_worker_thread_owns_the_connection(editor: Any) -> None:
    before = len(_worker_threads())
    b = RoseBridge.connect(editor.socket, workspace=editor.workspace, timeout=20)
    assert len(_worker_threads()) == before + 1
    b.freshness()
    b.close()
    b.close()  # idempotent
    assert len(_worker_threads()) == before
    with pytest.raises(EditorError) as excinfo:
        b.freshness()
    assert excinfo.value.code == "editor_unavailable"


# -- buffer-aware file I/O ----------------------------------------------------------------------


def test_write_into_loaded_clean_buffer_updates_buffer_and_disk(
    editor: Any, bridge: RoseBridge
) -> None:
    buf = editor.load("pkg/a.py", "old = 1\n")
    assert editor.option(buf, "modified") is False
    bridge.write_file("pkg/a.py", "new = 2\nmore = 3\n")
    assert editor.path("pkg/a.py").read_text(encoding="utf-8") == "new = 2\nmore = 3\n"
    assert editor.lines(buf) == ["new = 2", "more = 3"]
    assert editor.option(buf, "modified") is False
    assert bridge.read_file("pkg/a.py") == "new = 2\nmore = 3\n"


def test_write_of_an_unloaded_file_goes_to_disk(editor: Any, bridge: RoseBridge) -> None:
    bridge.write_file("docs/new.md", "# Title\n\nnon-ascii: é\n")
    assert editor.path("docs/new.md").read_text(encoding="utf-8") == "# Title\n\nnon-ascii: é\n"
    assert bridge.read_file("docs/new.md") == "# Title\n\nnon-ascii: é\n"


def test_read_of_a_missing_file_is_a_tool_error(bridge: RoseBridge) -> None:
    with pytest.raises(EditorError) as excinfo:
        bridge.read_file("nope.txt")
    assert excinfo.value.code == "editor_tool_error"
    assert "not_found" in excinfo.value.message


def test_write_refused_on_an_unsaved_buffer(editor: Any, bridge: RoseBridge) -> None:
    buf = editor.load("a.py", "saved\n")
    editor.type_into(buf, ["the user is typing this"])
    with pytest.raises(EditorError) as excinfo:
        bridge.write_file("a.py", "from the model\n")
    assert excinfo.value.code == "editor_refused"
    assert "unsaved" in excinfo.value.message
    # The user's text survives untouched, still unsaved; the disk is unchanged.
    assert editor.lines(buf) == ["the user is typing this"]
    assert editor.option(buf, "modified") is True
    assert editor.path("a.py").read_text(encoding="utf-8") == "saved\n"


@pytest.mark.parametrize(("option", "value"), [("readonly", True), ("modifiable", False)])
def test_write_refused_on_a_read_only_buffer(
    editor: Any, bridge: RoseBridge, option: str, value: bool
) -> None:
    buf = editor.load("a.py", "saved\n")
    editor.set_option(buf, option, value)
    with pytest.raises(EditorError) as excinfo:
        bridge.write_file("a.py", "from the model\n")
    assert excinfo.value.code == "editor_refused"
    assert "read-only" in excinfo.value.message
    assert editor.lines(buf) == ["saved"]
    assert editor.path("a.py").read_text(encoding="utf-8") == "saved\n"


# -- workspace --------------------------------------------------------------------------------


def test_workspace_mismatch_refused_at_attach(editor: Any) -> None:
    other = editor.root / "other"
    other.mkdir()
    editor.set_global("rose_workspace", str(other))
    with pytest.raises(EditorError) as excinfo:
        RoseBridge.connect(editor.socket, workspace=editor.workspace, timeout=20)
    assert excinfo.value.code == "editor_workspace_mismatch"


def test_workspace_compared_after_resolving_symlinks(editor: Any) -> None:
    link = editor.root / "link"
    link.symlink_to(editor.workspace)
    with RoseBridge.connect(editor.socket, workspace=link, timeout=20) as b:
        assert b.workspace() == os.path.realpath(editor.workspace)


def test_workspace_mismatch_after_attach_fails_file_ops(editor: Any, bridge: RoseBridge) -> None:
    editor.load("a.py", "saved\n")
    other = editor.root / "other"
    other.mkdir()
    editor.set_global("rose_workspace", str(other))
    with pytest.raises(EditorError) as excinfo:
        bridge.write_file("a.py", "x\n")
    assert excinfo.value.code == "editor_workspace_mismatch"
    with pytest.raises(EditorError) as excinfo:
        bridge.read_file("a.py")
    assert excinfo.value.code == "editor_workspace_mismatch"
    with pytest.raises(EditorError) as excinfo:
        bridge.freshness()
    assert excinfo.value.code == "editor_workspace_mismatch"
    # Nothing was written anywhere: no fallback to a direct disk write.
    assert editor.path("a.py").read_text(encoding="utf-8") == "saved\n"
    assert not (other / "a.py").exists()


# -- freshness ----------------------------------------------------------------------------------


def test_freshness_lists_every_dirty_buffer_and_tracks_changes(
    editor: Any, bridge: RoseBridge
) -> None:
    a = editor.load("a.py", "a\n")
    editor.load("b.py", "b\n")
    editor.user.command("buffer " + str(editor.load("c.py", "c\n")))  # c.py is current
    first = bridge.freshness()
    assert first.dirty_buffers == ()
    assert bridge.freshness() == first  # nothing happened: same token
    editor.type_into(a, ["a changed"])  # a non-current buffer
    second = bridge.freshness()
    assert second.dirty_buffers == ("a.py",)
    assert second.snapshot != first.snapshot


@pytest.mark.parametrize("missing", ["api", "dirty_buffers", "snapshot", "freshness"])
def test_missing_freshness_field_fails_closed(
    editor: Any, bridge: RoseBridge, missing: str
) -> None:
    editor.set_global("rose_test_omit", missing)
    with pytest.raises(EditorError) as excinfo:
        bridge.freshness()
    assert excinfo.value.code == "editor_freshness_missing"
    assert missing in excinfo.value.message


def test_missing_freshness_at_attach_refuses_the_bridge(editor: Any) -> None:
    editor.set_global("rose_test_omit", "snapshot")
    with pytest.raises(EditorError) as excinfo:
        RoseBridge.connect(editor.socket, workspace=editor.workspace, timeout=20)
    assert excinfo.value.code == "editor_freshness_missing"


def test_other_freshness_api_version_fails_closed(editor: Any, bridge: RoseBridge) -> None:
    editor.set_global("rose_test_freshness_api", 2)
    with pytest.raises(EditorError) as excinfo:
        bridge.freshness()
    assert excinfo.value.code == "editor_freshness_missing"


# -- native lint --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("configured", "status", "verified", "files"),
    [
        (None, "unavailable", False, ("a.py",)),  # no LSP
        (
            {"status": "ok", "verified": True, "error_count": 0, "stale": False},
            "ok",
            True,
            ("a.py",),
        ),
        (  # cached, empty diagnostics: a snapshot, not a lint run
            {"status": "ok", "verified": False, "error_count": 0, "stale": False},
            "ok",
            False,
            ("a.py",),
        ),
        (
            {"status": "ok", "verified": True, "error_count": 2, "stale": False},
            "ok",
            False,
            ("a.py",),
        ),
        (
            {"status": "ok", "verified": True, "error_count": 0, "stale": True},
            "ok",
            False,
            ("a.py",),
        ),
        (  # a field missing: fails closed
            {"status": "ok", "verified": True, "error_count": 0},
            "error",
            False,
            (),
        ),
        (  # coverage only for files that were asked for
            {
                "status": "ok",
                "verified": True,
                "error_count": 0,
                "stale": False,
                "files": ["zzz.py"],
            },
            "ok",
            False,
            (),
        ),
        ({"status": "weird", "verified": True}, "error", False, ()),
    ],
)
def test_lint_result_mapping(
    editor: Any,
    bridge: RoseBridge,
    configured: dict[str, Any] | None,
    status: str,
    verified: bool,
    files: tuple[str, ...],
) -> None:
    if configured is not None:
        editor.set_global("rose_test_lint", configured)
    result = bridge.lint(["a.py"])
    assert (result.status, result.verified, result.files) == (status, verified, files)
    if configured is not None and "error_count" in configured and status == "ok":
        assert result.error_count == configured["error_count"]


# -- failures: timeout, Neovim killed -------------------------------------------------------------


def test_request_timeout_is_honoured(editor: Any) -> None:
    b = RoseBridge.connect(editor.socket, workspace=editor.workspace, timeout=0.5)
    try:
        editor.set_global("rose_test_block_ms", 20000)
        start = time.monotonic()
        with pytest.raises(EditorError) as excinfo:
            b.call_tool("editor_context", {})
        elapsed = time.monotonic() - start
        assert excinfo.value.code == "editor_timeout"
        assert "0.5 s" in excinfo.value.message
        assert 0.5 <= elapsed < 5.0
        # The connection is closed for good; later calls fail at once.
        start = time.monotonic()
        with pytest.raises(EditorError) as excinfo:
            b.freshness()
        assert excinfo.value.code == "editor_unavailable"
        assert time.monotonic() - start < 1.0
    finally:
        b.close()
    assert not _worker_threads()


def _wait_for_marker(fd: int, seconds: float) -> bytes:
    ready, _, _ = select.select([fd], [], [], seconds)
    assert ready, "the double never reached its blocking point"
    return os.read(fd, 100)


def test_neovim_killed_mid_request_is_a_clear_error_not_a_hang(editor: Any) -> None:
    b = RoseBridge.connect(editor.socket, workspace=editor.workspace, timeout=120)
    marker = editor.root / "marker"
    os.mkfifo(marker)
    fd = os.open(marker, os.O_RDONLY | os.O_NONBLOCK)
    try:
        editor.set_global("rose_test_block_marker", str(marker))
        editor.set_global("rose_test_block_ms", 60000)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(b.write_file, "a.py", "x\n")
            assert _wait_for_marker(fd, 20) == b"blocked\n"
            start = time.monotonic()
            editor.kill()
            with pytest.raises(EditorError) as excinfo:
                pending.result(timeout=20)
            assert time.monotonic() - start < 10
        assert excinfo.value.code == "editor_unavailable"
        with pytest.raises(EditorError) as excinfo:
            b.freshness()
        assert excinfo.value.code == "editor_unavailable"
        assert not editor.path("a.py").exists()
    finally:
        os.close(fd)
        b.close()


def test_neovim_gone_while_idle_is_a_clear_error(editor: Any) -> None:
    b = RoseBridge.connect(editor.socket, workspace=editor.workspace, timeout=30)
    try:
        editor.kill()
        start = time.monotonic()
        with pytest.raises(EditorError) as excinfo:
            b.freshness()
        assert excinfo.value.code == "editor_unavailable"
        assert time.monotonic() - start < 10
    finally:
        b.close()


def test_connect_to_a_dead_socket_is_unavailable(editor: Any) -> None:
    editor.kill()  # the socket file may stay behind with nobody listening
    if not editor.socket.exists():
        pytest.skip("this Neovim removed its socket on exit")
    with pytest.raises(EditorError) as excinfo:
        RoseBridge.connect(editor.socket, workspace=editor.workspace, timeout=5)
    assert excinfo.value.code == "editor_unavailable"


def test_public_socket_directory_refused_before_connecting(editor: Any, proxy: Any) -> None:
    os.chmod(editor.root, 0o755)
    try:
        with pytest.raises(EditorError) as excinfo:
            RoseBridge.connect(proxy.path, workspace=editor.workspace, timeout=5)
        assert excinfo.value.code == "editor_socket_public"
        assert proxy.messages == []  # nothing reached Neovim
    finally:
        os.chmod(editor.root, 0o700)
