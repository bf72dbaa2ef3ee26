"""Raw wire tests: the real server on pipes, one line at a time.

After each scenario every stdout line must be a JSON-RPC 2.0 message, and the server must be
alive (answering ``ping``) or gone with the documented exit code. Protocol logic (lifecycle,
malformed input, framing, tool errors) is served in this process (``start_inproc``: the same
``run_server`` on a thread, over pipes); what belongs to a process (stdout takeover, signals,
exit codes, stderr) runs ``python -m flow_mcp`` (``start_server``).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from flow_mcp_harness import (
    DEADLINE_S,
    INIT_PARAMS,
    RawServer,
    ServerFactory,
    server_env,
    without_diff,
)

import flow_mcp
from flow_testing.procs import alive, group_members


def assert_alive(server: RawServer, rid: Any = "alive?") -> None:
    assert server.request(rid, "ping") == {"jsonrpc": "2.0", "id": rid, "result": {}}


def error_of(reply: dict[str, Any]) -> tuple[Any, int]:
    assert "error" in reply, reply
    assert isinstance(reply["error"]["message"], str)
    assert reply["error"]["message"]
    return reply["id"], reply["error"]["code"]


# --------------------------------------------------------------------------- lifecycle


def test_initialize_result_and_initialized(start_inproc: ServerFactory) -> None:
    server = start_inproc()
    reply = server.request(1, "initialize", INIT_PARAMS)
    result = reply["result"]
    assert reply["id"] == 1
    assert result["protocolVersion"] == "2025-11-25"
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"]["name"] == "flow"
    assert result["serverInfo"]["version"] == flow_mcp.__version__
    assert isinstance(result.get("instructions"), str)
    server.notify("notifications/initialized")
    tools = server.request(2, "tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == ["flow_status", "flow_check", "flow_run"]
    assert server.finish() == 0


@pytest.mark.parametrize(
    ("requested", "answered"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ],
)
def test_version_negotiation(start_inproc: ServerFactory, requested: str, answered: str) -> None:
    server = start_inproc()
    reply = server.request(7, "initialize", {**INIT_PARAMS, "protocolVersion": requested})
    assert reply["result"]["protocolVersion"] == answered
    assert server.finish() == 0


def test_requests_before_initialization_get_errors(start_inproc: ServerFactory) -> None:
    server = start_inproc()
    assert_alive(server, "ping-first")  # ping is served in every state
    assert error_of(server.request("early", "tools/list")) == ("early", -32600)
    call = {"name": "flow_status", "arguments": {}}
    assert error_of(server.request(3, "tools/call", call)) == (3, -32600)
    assert "result" in server.request(4, "initialize", INIT_PARAMS)
    # Answered initialize, but the client has not sent notifications/initialized yet: served.
    assert "tools" in server.request(5, "tools/list")["result"]
    server.notify("notifications/initialized")
    assert "result" in server.request(6, "tools/list")
    assert error_of(server.request(7, "initialize", INIT_PARAMS)) == (7, -32600)
    assert server.finish() == 0


def test_initialize_with_bad_params(start_inproc: ServerFactory) -> None:
    server = start_inproc()
    assert error_of(server.request(1, "initialize", {"protocolVersion": 20251125})) == (1, -32602)
    assert error_of(server.request(2, "initialize", ["2025-11-25"])) == (2, -32602)
    assert "result" in server.request(3, "initialize", INIT_PARAMS)
    assert server.finish() == 0


def test_unknown_methods_answer_promptly(start_inproc: ServerFactory) -> None:
    server = start_inproc()
    assert error_of(server.request("d", "server/discover", {})) == ("d", -32601)
    server.initialize()
    assert error_of(server.request(9, "resources/list")) == (9, -32601)
    assert error_of(server.request(10, "prompts/list")) == (10, -32601)
    assert_alive(server)
    assert server.finish() == 0


# --------------------------------------------------------------------------- malformed input


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', (None, -32700)),
        (b"not json at all", (None, -32700)),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"\xff\xfe"}', (None, -32700)),
        (b'"hello"', (None, -32600)),
        (b"42", (None, -32600)),
        (b"null", (None, -32600)),
        (b"[]", (None, -32600)),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', (None, -32600)),
        (b'{"jsonrpc":"1.0","id":5,"method":"ping"}', (5, -32600)),
        (b'{"id":5,"method":"ping"}', (5, -32600)),
        (b'{"jsonrpc":"2.0","id":6}', (6, -32600)),
        (b'{"jsonrpc":"2.0","id":"s","method":5}', ("s", -32600)),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', (None, -32600)),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', (None, -32600)),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', (None, -32600)),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', (None, -32600)),
        (b'{"jsonrpc":"2.0","id":8,"method":"ping","params":[1]}', (8, -32602)),
        (b'{"jsonrpc":"2.0","id":9,"method":"ping","params":"x"}', (9, -32602)),
    ],
)
def test_malformed_messages_get_errors_and_the_session_survives(
    start_inproc: ServerFactory, raw: bytes, expected: tuple[Any, int]
) -> None:
    server = start_inproc()
    server.initialize()
    server.send_raw(raw + b"\n")
    assert error_of(server.recv()) == expected
    assert_alive(server)
    assert server.finish() == 0


def test_notifications_never_get_an_answer(start_inproc: ServerFactory) -> None:
    server = start_inproc()
    server.notify("notifications/initialized")  # before initialize: ignored
    server.initialize()
    server.notify("notifications/something/new", {"x": 1})
    server.notify("notifications/cancelled", {"requestId": 1, "reason": "test"})
    server.notify("notifications/progress", {"progressToken": "t", "progress": 1})
    server.notify("ping")  # a request method sent as a notification: still no answer
    server.notify("tools/call", {"name": "nope"})
    server.send({"jsonrpc": "2.0", "id": 77, "result": {}})  # a stray response: ignored
    server.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
    # The very next line answers this ping: nothing was written for the lines above.
    line = server.recv_line()
    assert line is not None
    assert json.loads(line) == {"jsonrpc": "2.0", "id": "after", "result": {}}
    assert server.finish() == 0
    assert len(server.lines) == 2  # the initialize result and the ping


def test_blank_lines_and_crlf_are_tolerated(start_inproc: ServerFactory) -> None:
    server = start_inproc()
    server.send_raw(b"\n\r\n   \n")
    server.send_raw(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode() + b"\r\n")
    assert server.recv() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert server.finish() == 0


def test_content_length_framing_gets_a_parse_error_not_a_hang(
    start_inproc: ServerFactory,
) -> None:
    server = start_inproc()
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    server.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    reply = server.recv()  # answered while the body still waits for a newline
    assert error_of(reply) == (None, -32700)
    assert "Content-Length" in reply["error"]["message"]
    assert server.alive()
    assert server.finish() == 0


def test_oversized_frame_gets_an_error_then_the_session_closes(
    start_server: ServerFactory,
) -> None:
    server = start_server()
    server.initialize()
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'
    big += b"a" * flow_mcp.MAX_FRAME_BYTES + b'"}}\n'
    with contextlib.suppress(BrokenPipeError):  # the server stops reading past the limit
        server.send_raw(big)
    reply = server.recv()
    assert error_of(reply) == (None, -32600)
    assert str(flow_mcp.MAX_FRAME_BYTES) in reply["error"]["message"]
    server.read_to_eof()
    assert server.wait() == 1
    server.assert_stdout_pure()


def test_a_frame_just_under_the_limit_is_served(start_inproc: ServerFactory) -> None:
    server = start_inproc()
    head = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'
    tail = b'"}}\n'
    fill = flow_mcp.MAX_FRAME_BYTES - len(head) - len(tail)
    server.send_raw(head + b"a" * fill + tail)
    assert server.recv() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert server.finish() == 0


# --------------------------------------------------------------------------- tools/call errors


def test_unknown_tool_and_malformed_params_are_protocol_errors(
    start_inproc: ServerFactory,
) -> None:
    server = start_inproc()
    server.initialize()
    assert error_of(server.request(1, "tools/call", {"name": "flow_delete"})) == (1, -32602)
    assert error_of(server.request(2, "tools/call", "flow_status")) == (2, -32602)
    assert error_of(server.request(3, "tools/call", {"arguments": {}})) == (3, -32602)
    assert error_of(server.request(4, "tools/call", {"name": 5})) == (4, -32602)
    bad_args = {"name": "flow_status", "arguments": ["x"]}
    assert error_of(server.request("five", "tools/call", bad_args)) == ("five", -32602)
    assert_alive(server)
    assert server.finish() == 0


@pytest.mark.parametrize(
    ("tool", "arguments", "needle"),
    [
        ("flow_run", {}, "missing required argument 'task'"),
        ("flow_run", {"task": 5}, "must be a string"),
        ("flow_run", {"task": ""}, "must not be empty"),
        ("flow_run", {"task": "x", "force": True}, "unexpected argument 'force'"),
        ("flow_status", {"verbose": True}, "unexpected argument 'verbose'"),
        ("flow_check", {"name": ["a"]}, "must be a string"),
        ("flow_check", {"only": "a"}, "unexpected argument 'only'"),
    ],
)
def test_argument_validation_failures_are_tool_errors(
    start_inproc: ServerFactory, tool: str, arguments: dict[str, Any], needle: str
) -> None:
    server = start_inproc()
    server.initialize()
    reply = server.request(1, "tools/call", {"name": tool, "arguments": arguments})
    result = reply["result"]
    assert result["isError"] is True
    report = result["structuredContent"]
    assert report["ok"] is False
    assert report["status"] == "error"
    assert report["errors"][0]["code"] == "invalid_arguments"
    assert needle in report["errors"][0]["message"]
    assert json.loads(result["content"][1]["text"]) == without_diff(report)
    assert server.finish() == 0


# --------------------------------------------------------------------------- tools/call


def test_flow_status_over_the_wire(start_inproc: ServerFactory, workspace: Path) -> None:
    server = start_inproc()
    server.initialize()
    result = server.request(1, "tools/call", {"name": "flow_status"})["result"]
    report = result["structuredContent"]
    assert report["kind"] == "status"
    assert result["isError"] is (not report["ok"])
    assert [block["type"] for block in result["content"]] == ["text", "text"]
    assert result["content"][0]["text"].startswith("flow status: ok")
    assert json.loads(result["content"][1]["text"]) == without_diff(report)
    assert report["workspace"] == str(workspace)
    assert server.finish() == 0


def test_weak_evidence_is_in_the_tool_result(start_inproc: ServerFactory, workspace: Path) -> None:
    # A test check Flow reads no results from: its pass rests on the exit status alone.
    server = start_inproc(checks={"unit": [sys.executable, "-m", "unittest"]}, kind="test")
    server.initialize()
    result = server.request(1, "tools/call", {"name": "flow_status"})["result"]
    report = result["structuredContent"]
    assert report["weak_evidence"] == ["unit"]
    assert [w["code"] for w in report["warnings"]] == ["weak_evidence"]
    assert server.finish() == 0


def test_untrusted_check_is_an_error_report(start_inproc: ServerFactory) -> None:
    server = start_inproc()
    server.initialize()
    result = server.request(1, "tools/call", {"name": "flow_check", "arguments": {}})["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["ok"] is False
    [error] = result["structuredContent"]["errors"]
    assert error["code"] == "not_trusted"
    # A message for the person at the client: what to do, no internal references.
    assert "start Flow again with --trusted" in error["message"]
    assert "[checks.*]" in error["message"]
    assert "seed" not in error["message"].lower()
    assert server.finish() == 0


def test_unknown_check_name_is_an_error_report(start_inproc: ServerFactory) -> None:
    server = start_inproc("--trusted")
    server.initialize()
    call = {"name": "flow_check", "arguments": {"name": "no-such-check"}}
    result = server.request(1, "tools/call", call)["result"]
    assert result["isError"] is True
    report = result["structuredContent"]
    assert report["ok"] is False
    assert report["errors"], report
    assert server.finish() == 0


def test_progress_says_each_check_in_its_report_status_word(start_inproc: ServerFactory) -> None:
    # The progress text comes from the event's typed fields: a check whose executable is gone
    # ends "missing" (the report's status word, not a bare failed), and the final words are
    # the report's own status.
    server = start_inproc("--trusted", checks={"gone": ["/nonexistent/flow-no-such-tool"]})
    server.initialize()
    params = {"name": "flow_check", "arguments": {}, "_meta": {"progressToken": "tok"}}
    result = server.request(1, "tools/call", params)["result"]
    [check] = result["structuredContent"]["checks"]
    assert check["status"] == "missing"
    assert server.finish() == 0
    notes = [json.loads(line) for line in server.lines if b"notifications/progress" in line]
    words = [
        n["params"]["message"] for n in notes if "(still running," not in n["params"]["message"]
    ]
    assert words == ["check gone: running", "check gone: missing"]


CHATTY = (
    "import os, subprocess, sys\n"
    "print('CHATTY-PRINT not json')\n"
    "sys.stdout.flush()\n"
    "os.write(1, b'CHATTY-FD1 {broken\\n')\n"
    "subprocess.run(['sh', '-c', 'echo CHATTY-GRANDCHILD'])\n"
    "sys.stderr.write('CHATTY-STDERR\\n')\n"
)


def test_a_chatty_check_never_reaches_stdout(start_server: ServerFactory) -> None:
    server = start_server("--trusted", checks={"chatty": [sys.executable, "-c", CHATTY]})
    server.initialize()
    call = {"name": "flow_check", "arguments": {"name": "chatty"}}
    result = server.request(1, "tools/call", call)["result"]
    report = result["structuredContent"]
    assert report["kind"] == "check"
    assert [c["name"] for c in report["checks"]] == ["chatty"]
    assert report["checks"][0]["status"] == "passed", report
    assert result["isError"] is False
    assert_alive(server)
    assert server.finish() == 0
    # Each output line is a whole JSON-RPC message; the check's words appear only inside the
    # report's output_tail (as JSON string content), never as lines of their own.
    assert all(line.startswith(b'{"jsonrpc":"2.0"') for line in server.lines)
    assert "CHATTY-PRINT" in report["checks"][0]["output_tail"]


STRAY_WRITER = """
import os, subprocess, sys
import flow_core
import flow_mcp

original = flow_core.Runtime.status

def noisy_status(self):
    print("STRAY-PRINT from a library")
    os.write(1, b"STRAY-FD1 write\\n")
    subprocess.run(["sh", "-c", "echo STRAY-CHILD"])
    return original(self)

flow_core.Runtime.status = noisy_status
sys.exit(flow_mcp.main(sys.argv[1:]))
"""


def test_stray_writes_to_fd1_during_a_tool_go_to_stderr(tmp_path: Path, workspace: Path) -> None:
    """A library that prints, writes to fd 1 or starts a child that does, while a tool runs."""
    import subprocess

    from flow_mcp_harness import server_env, write_config

    cfg = write_config(tmp_path, workspace, "http://127.0.0.1:9")

    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "flow_status"}},
    ]
    with (tmp_path / "stray-err.log").open("wb") as errlog:
        proc = subprocess.run(
            [sys.executable, "-c", STRAY_WRITER, "--config", str(cfg)],
            input=b"".join(json.dumps(m).encode() + b"\n" for m in lines),
            stdout=subprocess.PIPE,
            stderr=errlog,
            env=server_env(tmp_path),
            timeout=DEADLINE_S,
            check=False,
        )
    out = proc.stdout
    assert proc.returncode == 0
    replies = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in replies] == [1, 2]
    assert "result" in replies[1], replies[1]
    err = (tmp_path / "stray-err.log").read_text()
    for marker in ("STRAY-PRINT", "STRAY-FD1", "STRAY-CHILD"):
        assert marker in err
        assert marker.encode() not in out


# --------------------------------------------------------------------------- ending


def test_eof_before_anything_exits_zero(start_server: ServerFactory) -> None:
    server = start_server()
    assert server.finish() == 0
    assert server.lines == []


def test_eof_mid_session_exits_zero(start_server: ServerFactory) -> None:
    server = start_server()
    server.initialize()
    assert_alive(server)
    server.send_raw(b'{"jsonrpc":"2.0","id":99,"method":"pi')  # cut off by EOF
    server.close_stdin()
    reply = server.recv()
    assert error_of(reply) == (None, -32700)
    server.read_to_eof()
    assert server.wait() == 0
    server.assert_stdout_pure()


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 130), (signal.SIGINT, 130)])
def test_signal_while_idle(start_server: ServerFactory, signum: int, code: int) -> None:
    server = start_server()
    server.initialize()
    server.proc.send_signal(signum)
    server.read_to_eof()
    assert server.wait() == code
    server.assert_stdout_pure()


HANGING_CHECK = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
fd = os.open(sys.argv[1], os.O_WRONLY)
os.write(fd, f"{os.getpid()} {child.pid}\\n".encode())
os.close(fd)
time.sleep(600)
"""


def _read_fifo(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            assert sel.select(DEADLINE_S), "the check never reported its pid"
        return os.read(fd, 200).decode()
    finally:
        os.close(fd)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 130), (signal.SIGINT, 130)])
def test_signal_mid_check_kills_the_check_process_group(
    start_server: ServerFactory, tmp_path: Path, signum: int, code: int
) -> None:
    fifo = tmp_path / "pids.fifo"
    os.mkfifo(fifo)
    server = start_server(
        "--trusted",
        checks={"hang": [sys.executable, "-c", HANGING_CHECK, str(fifo)]},
        sandbox_mode="off",  # the FIFO lies outside the workspace
    )
    server.initialize()
    server.send(
        {
            "jsonrpc": "2.0",
            "id": "long",
            "method": "tools/call",
            "params": {"name": "flow_check", "arguments": {"name": "hang"}},
        }
    )
    pids = [int(p) for p in _read_fifo(fifo).split()]
    assert all(alive(p) for p in pids)
    server.proc.send_signal(signum)
    server.read_to_eof()
    assert server.wait() == code
    server.assert_stdout_pure()
    # The busy request is still answered, with the runtime's "interrupted" report.
    answers = [json.loads(line) for line in server.lines if b'"id":"long"' in line]
    assert len(answers) == 1, server.lines
    assert answers[0]["result"]["isError"] is True
    assert answers[0]["result"]["structuredContent"]["status"] == "interrupted"
    assert group_members(pids[0]) == []
    assert [p for p in pids if alive(p)] == []
    assert "interrupted" in server.stderr()


# --------------------------------------------------------------------------- startup


def test_bad_config_exits_2_before_serving(start_server: ServerFactory, tmp_path: Path) -> None:
    server = start_server("--config", str(tmp_path / "missing.toml"), config=False)
    assert server.finish() == 2
    assert server.lines == []
    assert "configuration error" in server.stderr()


@pytest.mark.parametrize("value", ["0", "0.05", "661", "abc"])
def test_editor_timeout_out_of_range_is_a_usage_error(
    start_server: ServerFactory, value: str
) -> None:
    server = start_server("--editor-timeout", value)
    assert server.finish() == 2
    assert "--editor-timeout" in server.stderr()


def test_nvim_without_flow_rose_names_the_extra(tmp_path: Path, workspace: Path) -> None:
    import subprocess

    from flow_mcp_harness import server_env, write_config

    cfg = write_config(tmp_path, workspace, "http://127.0.0.1:9")
    code = (
        "import sys; sys.modules['flow_rose'] = None\n"
        "import flow_mcp; sys.exit(flow_mcp.main(sys.argv[1:]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "--config", str(cfg), "--nvim", str(tmp_path / "s")],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env=server_env(tmp_path),
        timeout=DEADLINE_S,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert b"pip install 'flow-mcp[editor]'" in proc.stderr


def test_relative_workspace_that_does_not_exist_names_the_flag(tmp_path: Path) -> None:
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "flow_mcp", "--workspace", "relproj"],
        cwd=tmp_path,
        env=server_env(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    err = proc.stderr
    assert "--workspace: the directory 'relproj' does not exist" in err
    assert "resolved against the current directory" in err
    assert str(tmp_path / "relproj") in err
    assert "or pass --workspace" not in err


def test_help_lists_the_options() -> None:
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "flow_mcp", "--help"],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=False,
    )
    assert proc.returncode == 0
    for option in ("--workspace", "--trusted", "--config", "--model", "--nvim", "--editor-timeout"):
        assert option in proc.stdout
    assert "resolved against the current directory" in " ".join(proc.stdout.split())


def test_nvim_with_an_unusable_socket_exits_2(start_server: ServerFactory, tmp_path: Path) -> None:
    server = start_server("--nvim", str(tmp_path / "no-such.sock"))
    assert server.finish() == 2
    assert server.lines == []
    assert "editor bridge error" in server.stderr()


def test_started_on_a_terminal_it_says_what_it_is_on_stderr(tmp_path: Path) -> None:
    """A person who types ``flow-mcp`` sees what it is instead of a silent wait."""
    import pty
    import subprocess

    workspace = tmp_path / "ws"
    workspace.mkdir()
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "flow_mcp", "--workspace", str(workspace)],
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(tmp_path),
    )
    os.close(secondary)
    try:
        os.write(primary, b"\x04")  # Ctrl-D on the terminal: end of input, so it never hangs
        assert proc.wait(timeout=DEADLINE_S) == 0
        line = proc.stderr.readline() if proc.stderr else b""
        assert b"this is an MCP server" in line
        assert b"claude mcp add" in line
        assert proc.stdout is not None
        assert proc.stdout.read() == b""  # stdout stays protocol-only
    finally:
        os.close(primary)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def test_started_by_a_client_it_prints_no_hint(tmp_path: Path) -> None:
    import subprocess

    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "flow_mcp", "--workspace", str(workspace)],
        input=b"",
        capture_output=True,
        env=server_env(tmp_path),
        timeout=DEADLINE_S,
        check=False,
    )
    assert proc.returncode == 0
    assert b"MCP server" not in proc.stderr
