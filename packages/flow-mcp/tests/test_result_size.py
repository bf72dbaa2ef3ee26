"""Results sized for a client (flow-mcp README, "Results").

The diff appears once, in ``structuredContent``; the text blocks are a summary and the report
without its diff; past ``--max-result-chars`` the diff is cut at a line and ends with a line
naming ``flow show RUN_ID --diff``; the run id is in the summary of every recorded run. The
real server runs ``flow_run`` against the loopback model, whose coder writes the files the
test asks for.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flow_mcp_harness import FakeOllama, RawServer, ServerFactory, without_diff

from flow_testing.model_server import FakeModelServer

#: What the coder writes: four files of 60,000 characters, about 240k characters of diff.
BIG_FILES = {
    f"big{i}.txt": "".join(f"line {n} of file {i}\n" for n in range(3_300)) for i in range(4)
}


def _writer(files: dict[str, str]) -> Any:
    """A scripted model: the planner plans, the coder writes ``files`` in one turn (a call
    each), the reviewer approves."""

    def script(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        messages = body.get("messages", [])
        tools = {t.get("function", {}).get("name") for t in body.get("tools", [])}
        if body.get("format") is not None:
            return json.dumps({"approved": True, "summary": "ok", "findings": []}), []
        if "write_file" in tools:
            if any(m.get("role") == "tool" for m in messages):
                return "Wrote them.", []
            calls = [
                {"name": "write_file", "arguments": {"path": path, "content": content}}
                for path, content in files.items()
            ]
            return "", calls
        return "1. Write the files.", []

    return script


@pytest.fixture
def fake_ollama(request: pytest.FixtureRequest) -> Iterator[FakeOllama]:
    files = getattr(request, "param", BIG_FILES)
    with FakeModelServer(_writer(files), models=["fake-model"]) as server:
        yield server


def _run(server: RawServer) -> tuple[dict[str, Any], int]:
    server.initialize()
    params = {"name": "flow_run", "arguments": {"task": "write the files"}}
    server.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    line = None
    while line is None or "id" not in json.loads(line):
        line = server.recv_line()
        assert line is not None, server.stderr()
    return json.loads(line)["result"], len(line)


def test_a_large_run_result_stays_under_the_cap_and_names_flow_show(
    start_server: ServerFactory, workspace: Path
) -> None:
    server = start_server("--trusted", "--max-result-chars", "20000")
    result, size = _run(server)
    assert server.finish() == 0
    report = result["structuredContent"]
    assert sorted(report["changed_files"]) == sorted(BIG_FILES)  # the run wrote them all
    assert size <= 20_000  # the cap counts the answer line's characters, as the wire carries them
    run_id = report["run_id"]
    assert run_id
    summary, text_report = (block["text"] for block in result["content"])
    assert f"run {run_id}" in summary
    assert f"`flow show {run_id} --diff`" in summary
    assert "line 3000 of file 0" not in summary + text_report  # the diff is not in the text
    assert json.loads(text_report) == without_diff(report)
    diff = report["diff"]
    assert diff.startswith(("--- ", "diff "))
    last = diff.rstrip("\n").rsplit("\n", 1)[-1]
    assert last.startswith("… [diff cut: ")
    assert f"`flow show {run_id} --diff`" in last
    assert all(
        line.startswith(("+", "-", " ", "@", "diff", "…", "new", "index"))
        for line in diff.splitlines()
    )


@pytest.mark.parametrize("fake_ollama", [{"small.txt": "one\ntwo\n"}], indirect=True)
def test_a_small_run_carries_its_whole_diff_once(
    start_server: ServerFactory, workspace: Path
) -> None:
    server = start_server("--trusted")
    result, _ = _run(server)
    assert server.finish() == 0
    report = result["structuredContent"]
    assert "+two" in report["diff"]
    assert "diff cut" not in report["diff"]
    summary, text_report = (block["text"] for block in result["content"])
    assert "+two" not in summary + text_report
    assert f"`flow show {report['run_id']} --diff`" in summary
    assert summary.startswith(f"flow run: {report['status']}; run {report['run_id']}")


def test_the_cap_has_a_floor(start_server: ServerFactory) -> None:
    server = start_server("--max-result-chars", "100")
    assert server.wait() == 2
    assert "--max-result-chars" in server.stderr()
    assert server.stderr().rstrip().endswith("[usage_error]")
