"""``flow explain``: every error line ends with a code that ``flow explain`` explains."""

from __future__ import annotations

import re
import sys

import pytest

CODE_AT_END = re.compile(r"\[([a-z][a-z0-9_]+)\]$")


def test_explain_prints_meaning_cause_and_fix(env) -> None:
    result = env.flow("explain", "check_timeout")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "check_timeout  (failure: exit code 1)"
    assert lines[1].startswith("meaning: the check ran past its timeout")
    assert lines[2].startswith("cause:   ")
    assert lines[3].startswith("fix:     ")


def test_explain_takes_the_code_as_printed_in_brackets(env) -> None:
    assert env.flow("explain", "[not_trusted]").code == 0


def test_unknown_code_exits_2_with_close_matches(env) -> None:
    result = env.flow("explain", "check_timout")
    assert result.code == 2
    assert result.stdout == ""
    assert "did you mean check_timeout" in result.stderr
    assert result.stderr.rstrip().endswith("[usage_error]")


def test_explain_without_a_code_lists_every_code(env) -> None:
    import flow_core

    result = env.flow("explain")
    assert result.code == 0
    listed = {line.split()[0] for line in result.stdout.splitlines()}
    assert listed == set(flow_core.ERROR_CODES)


@pytest.mark.parametrize(
    "case",
    ["not_trusted", "config_invalid", "empty_task", "check_failed", "unknown_check"],
)
def test_error_lines_on_stderr_end_with_a_code_that_explain_knows(
    env, h, tmp_path, workspace, case: str
) -> None:
    fail = [sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"]
    cfg = h.operator_config(tmp_path / "op.toml", workspace, checks=h.check_table("t", fail))
    if case == "not_trusted":
        result = env.flow("check", "--config", str(cfg))
    elif case == "config_invalid":
        bad = tmp_path / "bad.toml"
        bad.write_text(f'workspace_dir = "{workspace}"\nsurprise = 1\n')
        result = env.flow("status", "--config", str(bad))
    elif case == "empty_task":
        result = env.flow("run", "  ", "--config", str(cfg), "--trusted")
    elif case == "check_failed":
        result = env.flow("check", "--config", str(cfg), "--trusted")
    else:
        result = env.flow("check", "nope", "--config", str(cfg), "--trusted")
    assert result.code in (1, 2), result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("flow: ")]
    assert lines, result.stderr
    codes = []
    for line in lines:
        found = CODE_AT_END.search(line)
        assert found, f"no [code] at the end of: {line!r}"
        codes.append(found.group(1))
    for code in set(codes):
        assert env.flow("explain", code).code == 0, code
