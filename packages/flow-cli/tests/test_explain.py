"""``flow explain``: every error line ends with a code that ``flow explain`` explains.

``flow explain`` runs in process (``env.invoke``); the commands whose error lines are read, and
the unknown code's exit status, run as real processes (``env.flow``).
"""

from __future__ import annotations

import re
import sys

import pytest

CODE_AT_END = re.compile(r"\[([a-z][a-z0-9_]+)\]$")


def test_explain_prints_meaning_cause_and_fix(env) -> None:
    result = env.invoke("explain", "check_timeout")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "check_timeout  (failure: exit code 1)"
    assert lines[1].startswith("meaning: the check ran past its timeout")
    assert lines[2].startswith("cause:   ")
    assert lines[3].startswith("fix:     ")


def test_explain_takes_the_code_as_printed_in_brackets(env) -> None:
    assert env.invoke("explain", "[not_trusted]").code == 0


def test_unknown_code_exits_2_with_close_matches(env) -> None:
    result = env.flow("explain", "check_timout")  # exit 2 as the OS sees it, nothing on stdout
    assert result.code == 2
    assert result.stdout == ""
    assert "did you mean check_timeout" in result.stderr
    assert result.stderr.rstrip().endswith("[usage_error]")


def test_explain_without_a_code_lists_every_code(env) -> None:
    import flow_core

    result = env.invoke("explain")
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
        assert env.invoke("explain", code).code == 0, code


# -- every fix names things that exist ---------------------------------------------------------

#: Options of other programs that Flow's fixes name (llama.cpp's servers, pytest, ruff).
_OTHER_PROGRAMS_OPTIONS = frozenset(
    {"--chat_format", "--ctx-size", "--junitxml", "--junitfile", "--output-format"}
)


def _fix_texts() -> list[str]:
    """Every catalogue meaning, cause and fix, and every source string that gives a fix."""
    import ast
    from pathlib import Path

    import flow_core

    texts = []
    for code in flow_core.ERROR_CODES:
        found = flow_core.explain_error(code)
        assert found is not None
        assert found.meaning, code
        assert found.cause, code
        assert found.fix, code
        texts += [found.meaning, found.cause, found.fix]
    packages = Path(__file__).resolve().parents[2]
    for path in sorted(packages.glob("*/src/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
            if is_text and re.search(r"\bfix\b", node.value):
                texts.append(node.value)
    return texts


def test_every_fix_names_only_commands_options_and_programs_that_exist() -> None:
    import tomllib
    from pathlib import Path

    import click

    from flow_cli._cli import cli
    from flow_mcp._server import build_parser

    commands: dict[str, click.Command] = dict(cli.commands)  # type: ignore[attr-defined]
    options = {o for cmd in [cli, *commands.values()] for p in cmd.params for o in p.opts}
    options |= {o for action in build_parser()._actions for o in action.option_strings}
    scripts = set()
    for pyproject in Path(__file__).resolve().parents[2].glob("*/pyproject.toml"):
        scripts |= set(tomllib.loads(pyproject.read_text()).get("project", {}).get("scripts", {}))
    for text in _fix_texts():
        for option in re.findall(r"(?<![\w-])--[a-z][a-z0-9_-]*", text):
            assert option in options | _OTHER_PROGRAMS_OPTIONS, f"{option} in {text!r}"
        for sub in re.findall(r"\bflow ([a-z][a-z-]*)\b", text):
            assert sub in commands, f"flow {sub} in {text!r}"
        for script in re.findall(r"\b(flow-[a-z0-9-]+[a-z0-9])\b", text):
            if script not in {"flow-core", "flow-cli", "flow-mcp", "flow-rose", "flow-safeio"}:
                assert script in scripts, f"{script} in {text!r}"


# -- the fixes of the errors users meet, through the command that produced them ----------------


def _openai_config(tmp_path, workspace, checks: str) -> object:
    path = tmp_path / "openai.toml"
    path.write_text(
        f'workspace_dir = "{workspace}"\nbackend = "openai"\n'
        '[openai]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\ntimeout = 5\n'
        f"[agent]\nmax_iterations = 2\nmax_cycles = 1\n{checks}"
    )
    return path


@pytest.mark.parametrize(
    "case",
    ["no_such_option", "missing_config", "group_writable_config", "wrong_model", "no_server"],
)
def test_each_error_line_ends_with_its_code_and_says_the_right_fix(
    env, h, tmp_path, workspace, fake_ollama, case: str
) -> None:
    checks = h.check_table("ok", [sys.executable, "-c", "print(1)"])
    cfg = h.operator_config(tmp_path / "op.toml", workspace, checks=checks)
    if case == "no_such_option":
        result, code, says = env.flow("check", "--bogus"), "usage_error", ["--bogus"]
    elif case == "missing_config":
        result = env.flow("runs", "--config", str(tmp_path / "nope.toml"))
        code, says = "config_not_found", ["nope.toml"]
    elif case == "group_writable_config":
        cfg.chmod(0o664)  # outside the project, but others can change it
        result, code = env.flow("status", "--config", str(cfg)), "config_unsafe"
        says = [f"chmod go-w {cfg}"]
    elif case == "wrong_model":
        fake = fake_ollama(lambda request: ("ok", []), models=["fake-model"])
        cfg = h.operator_config(tmp_path / "op.toml", workspace, base_url=fake.url, checks=checks)
        result = env.flow("run", "--config", str(cfg), "--model", "nope", "--trusted", "do it")
        code, says = "preflight_model_missing", ["--model", "fake-model"]
    else:
        cfg = _openai_config(tmp_path, workspace, checks)
        result = env.flow("run", "--config", str(cfg), "--trusted", "do it")
        code, says = "backend_unreachable", ["flow-serve-smollm2"]
    assert result.code in (1, 2), result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith(("flow: ", "Error: "))]
    assert lines, result.stderr
    for line in lines:
        assert CODE_AT_END.search(line), f"no [code] at the end of: {line!r}"
    line = next((line for line in lines if line.endswith(f"[{code}]")), result.stderr)
    for words in says:
        assert words in line, line
    assert "move it out of the project" not in line
    assert env.invoke("explain", code).code == 0
