"""load_config: sources, merge order, overrides, protected files, and every error class."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from flow_core import (
    ChatBackend,
    CheckConfig,
    ConfigError,
    FlowConfig,
    OllamaBackend,
    load_config,
    make_backend,
    user_config_path,
)
from flow_core.config import DEFAULT_PROTECTED

EXAMPLE = """\
workspace_dir = "{ws}"

[ollama]
base_url = "http://127.0.0.1:11434"
model = "qwen2.5-coder:7b"
timeout = 120 # seconds

[models]
planner = "planner-model"
coder = "coder-model"

[agent]
max_iterations = 6
max_cycles = 2
max_tool_calls = 64
max_context_chars = 100000

[checks.tests]
cmd = [".venv/bin/python", "-m", "pytest", "-q"]
timeout = 60000
required = true
kind = "test"
filetypes = ["python"]

[checks.lint]
cmd = ["ruff", "check", "."]
timeout = 30000
kind = "lint"
filetypes = ["python", ".pyi"]
"""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "project"
    d.mkdir()
    return d


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment whose user config dir is empty and whose PATH holds a fake ruff."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    ruff = bindir / "ruff"
    ruff.write_text("#!/bin/sh\n")
    ruff.chmod(0o755)
    return {
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "PATH": str(bindir),
    }


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def op_file(tmp_path: Path, text: str, name: str = "flow-operator.toml") -> Path:
    return write(tmp_path / "ops" / name, text)


def error_of(**kw: object) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        load_config(**kw)  # type: ignore[arg-type]
    return err.value


# --- the full example and defaults- -----------------------------------------------------------


def test_full_example_loads(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    venv_python = write(ws / ".venv" / "bin" / "python", "#!/bin/sh\n")
    venv_python.chmod(0o755)
    f = op_file(tmp_path, EXAMPLE.format(ws=ws))
    loaded = load_config(config_file=f, environ=env)
    cfg = loaded.config
    assert loaded.sources == [str(f)]
    assert cfg.workspace_dir == ws
    assert cfg.backend == "ollama"
    assert cfg.ollama.timeout == 120.0
    assert cfg.model_for("planner") == "planner-model"
    assert cfg.model_for("coder") == "coder-model"
    assert cfg.model_for("reviewer") == "qwen2.5-coder:7b"
    assert cfg.agent.max_context_chars == 100_000
    tests, lint = cfg.checks["tests"], cfg.checks["lint"]
    assert tests.cmd == (".venv/bin/python", "-m", "pytest", "-q")
    assert (tests.timeout, tests.kind, tests.required, tests.filetypes) == (
        60_000,
        "test",
        True,
        ("python",),
    )
    assert tests.executable == str(venv_python)  # relative to the workspace, symlinks kept
    assert lint.executable == env["PATH"] + "/ruff"  # found on PATH
    assert (lint.required, lint.filetypes) == (True, ("python", ".pyi"))
    # The check's program inside the workspace joins the protected files, and so do the names
    # that would shadow `-m pytest` from the workspace root; ruff (on PATH) does not.
    assert cfg.protected == (*DEFAULT_PROTECTED, ".venv/bin/python", "pytest.py", "pytest")


def test_defaults(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    cfg = load_config(
        config_file=op_file(tmp_path, f'workspace_dir = "{ws}"\n'), environ=env
    ).config
    assert cfg.ollama.base_url == "http://127.0.0.1:11434"
    assert cfg.ollama.model == "qwen2.5-coder:7b"
    assert cfg.ollama.timeout == 120
    assert cfg.ollama.allow_remote is False
    assert cfg.openai.base_url == "http://127.0.0.1:8080/v1"
    assert (cfg.agent.max_iterations, cfg.agent.max_cycles, cfg.agent.max_tool_calls) == (6, 2, 64)
    assert cfg.checks == {}
    check = CheckConfig(cmd=("true",))
    assert (check.timeout, check.required, check.kind, check.filetypes) == (
        60_000,
        True,
        "check",
        (),
    )


def test_missing_executable_is_not_a_config_error(
    tmp_path: Path, ws: Path, env: dict[str, str]
) -> None:
    f = op_file(
        tmp_path,
        f'workspace_dir = "{ws}"\n[checks.a]\ncmd = ["no-such-tool"]\n'
        '[checks.b]\ncmd = ["bin/missing", "x"]\n',
    )
    checks = load_config(config_file=f, environ=env).config.checks
    assert checks["a"].executable is None
    assert checks["b"].executable is None


def test_check_snapshot_is_frozen(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    cfg = load_config(config_file=op_file(tmp_path, EXAMPLE.format(ws=ws)), environ=env).config
    with pytest.raises(ValidationError):
        cfg.checks["lint"].cmd = ("rm", "-rf", "/")  # type: ignore[misc]
    with pytest.raises(ValidationError):
        cfg.workspace_dir = Path("/")  # type: ignore[misc]
    assert isinstance(cfg.checks["lint"].cmd, tuple)


def test_direct_construction_records_executables(ws: Path) -> None:
    cfg = FlowConfig(workspace_dir=ws, checks={"t": CheckConfig(cmd=("sh", "-c", "true"))})
    assert cfg.checks["t"].executable is not None
    assert os.path.isabs(cfg.checks["t"].executable)


def test_model_for(ws: Path) -> None:
    cfg = FlowConfig.model_validate(
        {"workspace_dir": str(ws), "backend": "openai", "openai": {"model": "smol"}}
    )
    assert cfg.model_for("coder") == "smol"
    with pytest.raises(ValueError, match="unknown role"):
        cfg.model_for("admin")


# --- sources ---------------------------------------------------------------------------------


def test_user_config_path(tmp_path: Path) -> None:
    assert user_config_path({"XDG_CONFIG_HOME": "/x", "HOME": "/h"}) == Path("/x/flow/config.toml")
    assert user_config_path({"HOME": "/h"}) == Path("/h/.config/flow/config.toml")
    assert user_config_path({"XDG_CONFIG_HOME": "", "HOME": "/h"}) == Path(
        "/h/.config/flow/config.toml"
    )
    # the XDG spec says relative values are ignored
    assert user_config_path({"XDG_CONFIG_HOME": "rel", "HOME": "/h"}) == Path(
        "/h/.config/flow/config.toml"
    )


def test_user_file_alone(ws: Path, env: dict[str, str]) -> None:
    user = write(Path(env["XDG_CONFIG_HOME"]) / "flow" / "config.toml", f'workspace_dir = "{ws}"\n')
    loaded = load_config(environ=env)
    assert loaded.sources == [str(user)]
    assert loaded.config.workspace_dir == ws


def test_user_file_under_home_when_xdg_unset(ws: Path, env: dict[str, str]) -> None:
    del env["XDG_CONFIG_HOME"]
    user = write(
        Path(env["HOME"]) / ".config" / "flow" / "config.toml", f'workspace_dir = "{ws}"\n'
    )
    assert load_config(environ=env).sources == [str(user)]


def test_no_user_file_and_no_workspace(env: dict[str, str]) -> None:
    err = error_of(environ=env)
    assert "workspace_dir" in str(err)
    assert "--workspace" in str(err)


def test_order_user_then_explicit_then_overrides(
    tmp_path: Path, ws: Path, env: dict[str, str]
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    user = write(
        Path(env["XDG_CONFIG_HOME"]) / "flow" / "config.toml",
        f'workspace_dir = "{other}"\n'
        '[ollama]\nmodel = "user-model"\ntimeout = 30\n'
        "[agent]\nmax_cycles = 5\nmax_tool_calls = 10\n"
        '[checks.tests]\ncmd = ["pytest"]\nkind = "lint"\nfiletypes = ["python"]\n'
        '[checks.user_only]\ncmd = ["make"]\n',
    )
    explicit = op_file(
        tmp_path,
        f'workspace_dir = "{ws}"\n[ollama]\ntimeout = 90\n[agent]\nmax_cycles = 3\n'
        '[checks.tests]\ncmd = ["pytest", "-q"]\n',
    )
    loaded = load_config(config_file=explicit, environ=env)
    cfg = loaded.config
    assert loaded.sources == [str(user), str(explicit)]
    assert cfg.workspace_dir == ws  # explicit wins
    assert cfg.ollama.model == "user-model"  # kept from the user file (key by key)
    assert cfg.ollama.timeout == 90
    assert (cfg.agent.max_cycles, cfg.agent.max_tool_calls) == (3, 10)
    # a check is replaced whole: nothing of the user's "tests" survives
    assert cfg.checks["tests"] == CheckConfig(cmd=("pytest", "-q"), executable=None)
    assert cfg.checks["user_only"].cmd == ("make",)

    over = load_config(config_file=explicit, environ=env, workspace=other, model="cli-model")
    assert over.config.workspace_dir == other
    for role in ("planner", "coder", "reviewer"):
        assert over.config.model_for(role) == "cli-model"
    assert over.config.ollama.model == "cli-model"
    assert over.config.openai.model == "cli-model"


def test_model_override_beats_models_table(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    f = op_file(tmp_path, EXAMPLE.format(ws=ws))
    cfg = load_config(config_file=f, environ=env, model="m2").config
    assert {cfg.model_for(r) for r in ("planner", "coder", "reviewer")} == {"m2"}


def test_empty_model_override(ws: Path, env: dict[str, str]) -> None:
    assert "--model" in str(error_of(environ=env, workspace=ws, model=" "))


def test_relative_workspace_override_is_resolved_against_cwd(
    ws: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ws)
    assert load_config(environ=env, workspace=".").config.workspace_dir == ws
    monkeypatch.chdir(ws.parent)
    assert load_config(environ=env, workspace="project").config.workspace_dir == ws


def test_workspace_config_files_are_never_read(ws: Path, env: dict[str, str]) -> None:
    write(ws / "config.toml", '[ollama]\nbase_url = "http://203.0.113.9"\nallow_remote = true\n')
    write(ws / ".flow.toml", "this is not toml [")
    write(ws / "flow" / "config.toml", "[agent]\nmax_cycles = 99\n")
    loaded = load_config(environ=env, workspace=ws)
    assert loaded.sources == []
    assert loaded.config.ollama.base_url == "http://127.0.0.1:11434"
    assert loaded.config.agent.max_cycles == 2


def test_explicit_file_must_exist(tmp_path: Path, env: dict[str, str]) -> None:
    err = error_of(config_file=tmp_path / "nope.toml", environ=env)
    assert err.code == "config_not_found"
    assert "nope.toml" in str(err)
    assert "does not exist" in str(err)
    err = error_of(config_file=tmp_path, environ=env)
    assert err.code == "config_not_found"


def test_relative_explicit_file_is_taken_from_cwd(
    tmp_path: Path, ws: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n')
    monkeypatch.chdir(f.parent)
    assert load_config(config_file=f.name, environ=env).sources == [str(f)]


# --- protected operator files ----------------------------------------------------------------


def test_operator_file_inside_workspace_is_refused(ws: Path, env: dict[str, str]) -> None:
    """A --config the model's file tools could write is never loaded (config/_guard.py)."""
    f = write(ws / "flow-operator.toml", f'workspace_dir = "{ws}"\n')
    nested = write(ws / "ops" / "flow.toml", f'workspace_dir = "{ws}"\n')
    for path in (f, nested):
        err = error_of(config_file=path, environ=env)
        assert err.code == "config_unsafe"
        assert "lies inside the workspace" in str(err)
        assert "fix:" in str(err)


def test_user_file_inside_workspace_is_protected(tmp_path: Path, env: dict[str, str]) -> None:
    user = write(Path(env["XDG_CONFIG_HOME"]) / "flow" / "config.toml", "")
    cfg = load_config(environ=env, workspace=tmp_path).config
    assert cfg.protected == (*DEFAULT_PROTECTED, user.relative_to(tmp_path).as_posix())


def test_operator_file_outside_is_not_protected(
    tmp_path: Path, ws: Path, env: dict[str, str]
) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n')
    assert load_config(config_file=f, environ=env).config.protected == DEFAULT_PROTECTED


def test_refused_through_a_symlinked_workspace(
    tmp_path: Path, ws: Path, env: dict[str, str]
) -> None:
    link = tmp_path / "link"
    link.symlink_to(ws)
    f = write(ws / "flow.toml", f'workspace_dir = "{link}"\n')
    assert error_of(config_file=f, environ=env).code == "config_unsafe"
    assert error_of(config_file=link / "flow.toml", environ=env).code == "config_unsafe"


def test_operator_file_writable_by_others_is_refused(
    tmp_path: Path, ws: Path, env: dict[str, str]
) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n')
    f.chmod(0o666)
    err = error_of(config_file=f, environ=env)
    assert err.code == "config_unsafe"
    assert "writable by group and others" in str(err)


def test_agent_launcher_files_are_protected_by_default(ws: Path) -> None:
    """Files that make an MCP client or agent launch programs are never writable."""
    assert {".mcp.json", ".vscode/mcp.json", ".cursor", "claude.md"} <= set(DEFAULT_PROTECTED)
    assert FlowConfig(workspace_dir=ws).protected == DEFAULT_PROTECTED
    # A caller that passes its own list cannot drop them.
    cfg = FlowConfig.model_validate({"workspace_dir": str(ws), "protected": ["ops.toml"]})
    assert cfg.protected == (*DEFAULT_PROTECTED, "ops.toml")


# --- errors: each names the file, the dotted key and the fix ---------------------------------


def test_workspace_dir_after_a_table(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    f = op_file(tmp_path, f'[ollama]\nmodel = "m"\nworkspace_dir = "{ws}"\n')
    msg = str(error_of(config_file=f, environ=env))
    assert str(f) in msg
    assert "ollama.workspace_dir" in msg
    assert "move" in msg
    assert "above the first" in msg


def test_workspace_dir_after_a_check_table(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    f = op_file(tmp_path, f'[checks.t]\ncmd = ["x"]\nworkspace_dir = "{ws}"\n')
    msg = str(error_of(config_file=f, environ=env))
    assert "checks.t.workspace_dir" in msg
    assert "above the first" in msg


def test_backend_after_a_table(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n[agent]\nbackend = "openai"\n')
    msg = str(error_of(config_file=f, environ=env))
    assert "agent.backend" in msg
    assert "above the first" in msg


def test_toml_syntax_error_names_file_and_line(tmp_path: Path, env: dict[str, str]) -> None:
    f = op_file(tmp_path, 'workspace_dir = "/tmp"\n\n[agent\nmax_cycles = 2\n')
    err = error_of(config_file=f, environ=env)
    assert err.code == "config_syntax"
    assert str(f) in str(err)
    assert "line 3" in str(err)


def test_not_utf8(tmp_path: Path, env: dict[str, str]) -> None:
    f = tmp_path / "latin1.toml"
    f.write_bytes('workspace_dir = "/tmp/caf\xe9"\n'.encode("latin-1"))
    err = error_of(config_file=f, environ=env)
    assert err.code == "config_syntax"
    assert "UTF-8" in str(err)


@pytest.mark.parametrize(
    ("body", "key", "hint"),
    [
        ("colour = 1\n", "colour", "unknown key"),
        ('[ollama]\nmodle = "x"\n', "ollama.modle", "base_url, model, timeout"),
        ("[agent]\nmax_turns = 3\n", "agent.max_turns", "max_iterations"),
        ('[checks.t]\ncmd = ["x"]\nargs = ["-q"]\n', "checks.t.args", "unknown key"),
        ("[plugins]\nx = 1\n", "plugins", "unknown key"),
    ],
)
def test_unknown_keys(
    tmp_path: Path, ws: Path, env: dict[str, str], body: str, key: str, hint: str
) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n' + body)
    msg = str(error_of(config_file=f, environ=env))
    assert f"{f}: {key}: " in msg
    assert hint in msg
    assert "fix:" in msg


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ('[agent]\nmax_iterations = "6"\n', "agent.max_iterations"),
        ("[agent]\nmax_cycles = 2.5\n", "agent.max_cycles"),
        ('[ollama]\nallow_remote = "yes"\n', "ollama.allow_remote"),
        ('[ollama]\ntimeout = "120"\n', "ollama.timeout"),
        ("[ollama]\nmodel = 7\n", "ollama.model"),
        ('[checks.t]\ncmd = "pytest -q"\n', "checks.t.cmd"),
        ('[checks.t]\ncmd = ["pytest", 1]\n', "checks.t.cmd[1]"),
        ('[checks.t]\ncmd = ["x"]\nrequired = 1\n', "checks.t.required"),
        ('[checks.t]\ncmd = ["x"]\ntimeout = 1.5\n', "checks.t.timeout"),
        ('[checks.t]\ncmd = ["x"]\nfiletypes = "python"\n', "checks.t.filetypes"),
        ('backend = "anthropic"\n', "backend"),
        ('[checks.t]\ncmd = ["x"]\nkind = "unit"\n', "checks.t.kind"),
    ],
)
def test_wrong_types_and_values(
    tmp_path: Path, ws: Path, env: dict[str, str], body: str, key: str
) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n' + body)
    err = error_of(config_file=f, environ=env)
    assert err.code == "config_invalid"
    assert f"{f}: {key}: " in str(err)
    assert "fix:" in str(err)


def test_not_a_table(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    for body, key in (('ollama = "x"\n', "ollama"), ("[checks]\ntests = 1\n", "checks.tests")):
        f = op_file(tmp_path, f'workspace_dir = "{ws}"\n' + body)
        msg = str(error_of(config_file=f, environ=env))
        assert f"{key}: expected a table" in msg


@pytest.mark.parametrize(
    ("workspace", "problem"),
    [("relative/dir", "relative"), ("/no/such/dir/anywhere", "does not exist")],
)
def test_bad_workspace_in_file(
    tmp_path: Path, env: dict[str, str], workspace: str, problem: str
) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{workspace}"\n')
    msg = str(error_of(config_file=f, environ=env))
    assert f"{f}: workspace_dir: " in msg
    assert problem in msg
    assert "absolute path" in msg


def test_workspace_that_is_a_file(tmp_path: Path, env: dict[str, str]) -> None:
    plain = write(tmp_path / "file.txt", "x")
    f = op_file(tmp_path, f'workspace_dir = "{plain}"\n')
    assert "not a directory" in str(error_of(config_file=f, environ=env))
    assert "--workspace" in str(error_of(environ=env, workspace=plain))


@pytest.mark.parametrize(
    ("table", "url"),
    [
        ("ollama", "http://192.168.1.10:11434"),
        ("ollama", "http://ollama.internal:11434"),
        ("openai", "https://api.example.com/v1"),
        ("ollama", "http://0.0.0.0:11434"),
    ],
)
def test_remote_url_needs_allow_remote(
    tmp_path: Path, ws: Path, env: dict[str, str], table: str, url: str
) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n[{table}]\nbase_url = "{url}"\n')
    msg = str(error_of(config_file=f, environ=env))
    assert f"{f}: {table}.base_url: " in msg
    assert "allow_remote" in msg
    allowed = op_file(
        tmp_path, f'workspace_dir = "{ws}"\n[{table}]\nbase_url = "{url}"\nallow_remote = true\n'
    )
    cfg = load_config(config_file=allowed, environ=env).config
    assert getattr(cfg, table).base_url == url


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:11434/", "http://127.8.9.10:1", "http://[::1]:11434", "http://localhost:1"],
)
def test_loopback_urls(tmp_path: Path, ws: Path, env: dict[str, str], url: str) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n[ollama]\nbase_url = "{url}"\n')
    assert load_config(config_file=f, environ=env).config.ollama.base_url == url.rstrip("/")


@pytest.mark.parametrize(
    ("body", "key", "words"),
    [
        ("cmd = []\n", "checks.t.cmd", "argv list is empty"),
        ('cmd = ["pytest", ""]\n', "checks.t.cmd[1]", "empty string"),
        ('cmd = [""]\n', "checks.t.cmd[0]", "empty string"),
        ('cmd = ["a", "b\\u0000"]\n', "checks.t.cmd[1]", "nul character"),
        ("timeout = 1000\n", "checks.t.cmd", "no cmd"),
        ('cmd = ["x"]\ntimeout = 0\n', "checks.t.timeout", "greater than 0"),
        ('cmd = ["x"]\ntimeout = -5\n', "checks.t.timeout", "greater than 0"),
        ('cmd = ["x"]\nfiletypes = ["py", ""]\n', "checks.t.filetypes[1]", "empty"),
    ],
)
def test_bad_checks(
    tmp_path: Path, ws: Path, env: dict[str, str], body: str, key: str, words: str
) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n[checks.t]\n' + body)
    msg = str(error_of(config_file=f, environ=env))
    assert f"{f}: {key}: " in msg
    assert words in msg.lower()


# --- wording: the key, the fix, the TOML file's own terms ----------------------------------

#: pydantic's vocabulary, which means nothing to someone editing a TOML file.
PYDANTIC_JARGON = re.compile(
    r"\b(Tuple|tuple|dict|str|int|bool|NoneType|Input should|Field required|"
    r"after validation|Value error|[a-z]+_type|[a-z]+_parsing|literal_error)\b"
)


def test_empty_argv_says_what_to_write(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n[checks.t]\ncmd = []\n')
    msg = str(error_of(config_file=f, environ=env))
    assert msg.startswith(f"{f}: checks.t.cmd: the argv list is empty; fix: ")
    assert "give the executable and its arguments" in msg
    assert 'cmd = [".venv/bin/python", "-m", "pytest", "-q"]' in msg
    assert not PYDANTIC_JARGON.search(msg), msg
    assert "item" not in msg


def test_empty_argument_names_its_index(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n[checks.t]\ncmd = ["pytest", ""]\n')
    msg = str(error_of(config_file=f, environ=env))
    assert msg.startswith(f"{f}: checks.t.cmd[1]: ")
    assert "empty string" in msg
    assert "fix: remove it or write the argument" in msg
    assert "correct the value" not in msg


@pytest.mark.parametrize(
    "body",
    [
        '[agent]\nmax_iterations = "6"\n',
        "[agent]\nmax_cycles = 2.5\n",
        "[agent]\nmax_cycles = 0\n",
        '[ollama]\nallow_remote = "yes"\n',
        '[ollama]\ntimeout = "120"\n',
        "[ollama]\ntimeout = 0\n",
        "[ollama]\ntimeout = inf\n",
        "[ollama]\nmodel = 7\n",
        '[ollama]\nmodel = ""\n',
        '[models]\ncoder = ""\n',
        "[models]\nplanner = [1]\n",
        '[checks.t]\ncmd = "pytest -q"\n',
        '[checks.t]\ncmd = ["pytest", 1]\n',
        '[checks.t]\ncmd = ["x"]\nrequired = 1\n',
        '[checks.t]\ncmd = ["x"]\ntimeout = 1.5\n',
        '[checks.t]\ncmd = ["x"]\nfiletypes = "python"\n',
        '[checks.t]\ncmd = ["x"]\nfiletypes = [1]\n',
        '[checks.t]\ncmd = ["x"]\nkind = "unit"\n',
        "[checks.t]\ntimeout = 1000\n",
        '[checks.t]\ncmd = ["x"]\nbogus = 1\n',
        'backend = "anthropic"\n',
        "backend = 1\n",
        "[ollama]\nmodel = 1979-05-27\n",
    ],
)
def test_messages_use_toml_terms_and_carry_a_fix(
    tmp_path: Path, ws: Path, env: dict[str, str], body: str
) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n' + body)
    msg = str(error_of(config_file=f, environ=env))
    assert msg.startswith(f"{f}: ")
    assert "; fix: " in msg
    assert not PYDANTIC_JARGON.search(msg), msg


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('[agent]\nmax_iterations = "6"\n', "expected an integer, got a string"),
        ('[ollama]\nallow_remote = "yes"\n', "expected a boolean (true or false)"),
        ('[checks.t]\ncmd = "pytest -q"\n', "expected an array, got a string"),
        ("[models]\nplanner = [1]\n", "expected a string, got an array"),
        ('backend = "anthropic"\n', '"anthropic" is not one of "ollama" or "openai"'),
        ("[agent]\nmax_cycles = 0\n", "must be at least 1, not 0"),
        ("[ollama]\ntimeout = 0\n", "fix: write a number of seconds greater than 0"),
        ('[checks.t]\ncmd = ["x"]\ntimeout = 0\n', "number of milliseconds greater than 0"),
        ('[checks.t]\ncmd = ["x"]\nbogus = 1\n', "unknown key"),
    ],
)
def test_common_mistakes_in_toml_words(
    tmp_path: Path, ws: Path, env: dict[str, str], body: str, words: str
) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n' + body)
    assert words in str(error_of(config_file=f, environ=env))


def test_non_http_url_does_not_suggest_allow_remote(
    tmp_path: Path, ws: Path, env: dict[str, str]
) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n[ollama]\nbase_url = "ftp://127.0.0.1/"\n')
    msg = str(error_of(config_file=f, environ=env))
    assert msg.startswith(f"{f}: ollama.base_url: ")
    assert "only http and https" in msg
    assert "allow_remote" not in msg
    assert 'fix: write the server\'s URL, e.g. base_url = "http://127.0.0.1:11434"' in msg


def test_relative_workspace_in_file_is_said_once(tmp_path: Path, env: dict[str, str]) -> None:
    f = op_file(tmp_path, 'workspace_dir = "relative/dir"\n')
    msg = str(error_of(config_file=f, environ=env))
    assert msg.startswith(f"{f}: workspace_dir: 'relative/dir' is a relative path; fix: ")
    assert msg.count("absolute") == 1
    assert msg.count("relative path") == 1


def test_relative_workspace_override_that_does_not_exist(
    tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    msg = str(error_of(environ=env, workspace="relproj"))
    assert msg.startswith("--workspace: the directory 'relproj' does not exist")
    assert "resolved against the current directory" in msg
    assert str(tmp_path / "relproj") in msg
    assert "fix: pass the path of an existing project directory to --workspace" in msg
    # The flag is what is wrong: no "or pass --workspace", no file key.
    assert "or pass --workspace" not in msg
    assert "workspace_dir" not in msg


def test_absolute_workspace_override_that_does_not_exist(
    tmp_path: Path, env: dict[str, str]
) -> None:
    missing = tmp_path / "nope"
    msg = str(error_of(environ=env, workspace=missing))
    assert msg.startswith(f"--workspace: the directory {str(missing)!r} does not exist; fix: ")
    assert "resolved against" not in msg


def test_direct_construction_errors_read_well(ws: Path) -> None:
    with pytest.raises(ValidationError) as err:
        CheckConfig(cmd=())
    assert "the argv list is empty" in str(err.value)
    with pytest.raises(ValidationError) as err:
        CheckConfig(cmd=("pytest", ""))
    assert "cmd[1] is an empty string" in str(err.value)
    with pytest.raises(ValidationError) as err:
        FlowConfig.model_validate({"workspace_dir": "rel"})
    assert "'rel' is a relative path" in str(err.value)


def test_bad_check_name(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n[checks."my check"]\ncmd = ["x"]\n')
    assert "check name 'my check'" in str(error_of(config_file=f, environ=env))


@pytest.mark.parametrize(
    "key", ["max_iterations", "max_cycles", "max_tool_calls", "max_context_chars"]
)
def test_budgets_at_least_one(tmp_path: Path, ws: Path, env: dict[str, str], key: str) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n[agent]\n{key} = 0\n')
    assert f"agent.{key}: " in str(error_of(config_file=f, environ=env))


def test_backend_timeout_positive(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n[ollama]\ntimeout = 0\n')
    assert "ollama.timeout" in str(error_of(config_file=f, environ=env))


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("protected = []\n", "protected"),
        ('[checks.t]\ncmd = ["x"]\nexecutable = "/bin/sh"\n', "executable"),
    ],
)
def test_computed_keys_are_refused(
    tmp_path: Path, ws: Path, env: dict[str, str], body: str, key: str
) -> None:
    f = op_file(tmp_path, f'workspace_dir = "{ws}"\n' + body)
    msg = str(error_of(config_file=f, environ=env))
    assert key in msg
    assert "remove" in msg


def test_error_names_the_file_that_set_the_key(
    tmp_path: Path, ws: Path, env: dict[str, str]
) -> None:
    user = write(Path(env["XDG_CONFIG_HOME"]) / "flow" / "config.toml", "[agent]\nmax_cycles = 0\n")
    explicit = op_file(tmp_path, f'workspace_dir = "{ws}"\n')
    msg = str(error_of(config_file=explicit, environ=env))
    assert msg.startswith(f"{user}: agent.max_cycles: ")


def test_several_errors_are_reported_together(
    tmp_path: Path, ws: Path, env: dict[str, str]
) -> None:
    f = op_file(
        tmp_path, f'workspace_dir = "{ws}"\n[agent]\nmax_cycles = 0\nmax_tool_calls = "x"\n'
    )
    msg = str(error_of(config_file=f, environ=env))
    assert "agent.max_cycles" in msg
    assert "agent.max_tool_calls" in msg


# --- backend dispatch ------------------------------------------------------------------------


def test_make_backend_ollama(ws: Path) -> None:
    cfg = FlowConfig(workspace_dir=ws)
    transport = httpx.MockTransport(lambda r: httpx.Response(200, json={"models": [{"name": "x"}]}))
    backend = make_backend(cfg, transport=transport)
    assert isinstance(backend, OllamaBackend)
    assert isinstance(backend, ChatBackend)
    assert backend.list_models() == ["x"]
    backend.close()


def test_make_backend_openai(ws: Path) -> None:
    cfg = FlowConfig.model_validate({"workspace_dir": str(ws), "backend": "openai"})
    transport = httpx.MockTransport(lambda r: httpx.Response(500))
    if importlib.util.find_spec("flow_core.models.openai") is None:
        with pytest.raises(ConfigError, match="not available"):
            make_backend(cfg, transport=transport)
    else:
        backend = make_backend(cfg, transport=transport)
        assert isinstance(backend, ChatBackend)
        backend.close()


def test_loading_config_does_not_import_httpx(tmp_path: Path, ws: Path) -> None:
    f = op_file(tmp_path, EXAMPLE.format(ws=ws))
    code = (
        "import sys, flow_core\n"
        f"flow_core.load_config(config_file={str(f)!r}, environ={{}})\n"
        "assert 'httpx' not in sys.modules, 'httpx was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_check_executables_outside_the_workspace_are_not_protected(tmp_path: Path) -> None:
    from flow_core import FlowConfig

    cfg = FlowConfig(workspace_dir=tmp_path, checks={"t": {"cmd": [sys.executable, "-V"]}})
    assert cfg.checks["t"].executable_id is not None
    assert not any(p.endswith("python") or "python3" in p for p in cfg.protected)


def test_executable_id_cannot_be_written_in_a_file(tmp_path: Path, env: dict[str, str]) -> None:
    cfg = tmp_path / "flow.toml"
    cfg.write_text(
        f'workspace_dir = "{tmp_path}"\n[checks.t]\ncmd = ["true"]\nexecutable_id = [1, 2]\n'
    )
    with pytest.raises(ConfigError, match=r"checks\.t\.executable_id: Flow records"):
        load_config(config_file=cfg, environ=env)


def test_what_an_approved_check_runs_is_protected(tmp_path: Path) -> None:
    """The script an interpreter check runs and the virtualenv of an in-workspace executable
    are protected; the files a check is pointed at are not."""
    from flow_core import FlowConfig

    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "lint.sh").write_text("exit 0\n")
    (tmp_path / "tools" / "run_tests.py").write_text("print('ok')\n")
    (tmp_path / "app.py").write_text("x = 1\n")
    venv = tmp_path / "env" / "bin"
    venv.mkdir(parents=True)
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    os.symlink(sys.executable, venv / "python")
    cfg = FlowConfig(
        workspace_dir=tmp_path,
        checks={
            "lint": {"cmd": ["/bin/sh", "tools/lint.sh"]},
            "tests": {"cmd": [sys.executable, "-u", "tools/run_tests.py", "app.py"]},
            "compile": {"cmd": [sys.executable, "-m", "py_compile", "app.py"]},
            "venv": {"cmd": ["env/bin/python", "-m", "pytest"]},
        },
    )
    assert {"tools/lint.sh", "tools/run_tests.py", "env/bin/python", "env"} <= set(cfg.protected)
    # python -m py_compile / -m pytest: a ./py_compile.py or ./pytest/ would replace the tool
    assert {"py_compile.py", "py_compile", "pytest.py", "pytest"} <= set(cfg.protected)
    assert "app.py" not in cfg.protected  # what a check examines stays editable
