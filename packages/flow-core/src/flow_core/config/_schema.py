"""Operator configuration: pydantic models and the TOML loader.

The operator, not the model, decides which server Flow talks to, which commands count as
checks and how large a run may grow. The rules below come from the seed's sections "Approve
checks, then run" and "Trust and security" and from DESIGN.md ("flow-core → Config").

Sources, in order (a later one wins key by key):

1. the user file ``$XDG_CONFIG_HOME/flow/config.toml`` (``~/.config/flow/config.toml`` when
   ``XDG_CONFIG_HOME`` is unset, empty or relative), read only when it exists;
2. the explicit ``config_file`` (``--config FILE``), which must exist;
3. overrides: ``workspace`` (``--workspace``) and ``model`` (``--model``).

A file inside the workspace is never read unless it is the explicit one. Tables merge key by
key; ``[checks.NAME]`` tables merge by name, and a later definition of a name replaces the
earlier one whole (an argv is never stitched together from two files).

Every problem is a ``ConfigError`` whose message names the file, the dotted key and the fix,
in the TOML file's own terms (array, table, string, integer, boolean), never pydantic's.
Codes: ``config_invalid`` (bad value, unknown key, missing workspace), ``config_syntax``
(TOML syntax, not UTF-8), ``config_not_found`` (explicit file missing or unreadable).

Protected files: the operator config files that lie inside the workspace, and the workspace
files that make an MCP client or coding agent launch programs (``DEFAULT_PROTECTED``), stay
readable but are never writable through Flow's file tools. A coder that could rewrite
``.mcp.json`` could change what the next client start launches, ``--trusted`` included.
"""

from __future__ import annotations

import datetime
import os
import re
import shutil
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from flow_core._errors import ConfigError
from flow_core._protocols import ROLES
from flow_core._report import CheckKind
from flow_core.models._http import url_problem

__all__ = [
    "DEFAULT_PROTECTED",
    "AgentConfig",
    "CheckConfig",
    "CheckKind",
    "FlowConfig",
    "LoadedConfig",
    "ModelsConfig",
    "OllamaConfig",
    "OpenAIConfig",
    "load_config",
    "user_config_path",
]

#: Largest operator config file read, in bytes.
MAX_CONFIG_BYTES = 1_000_000

_CHECK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_TABLES = ("ollama", "openai", "models", "agent", "checks")
#: Root keys: TOML puts a key written after a [table] header into that table.
_ROOT_KEYS = ("workspace_dir", "backend")

#: Workspace files that make an MCP client or coding agent launch programs when it next
#: starts in the project. The file tools may read them but never write them, whatever the
#: configuration says (compared after NFC normalisation and case folding, by flow-safeio).
DEFAULT_PROTECTED: tuple[str, ...] = (
    ".mcp.json",  # Claude Code: project-scope MCP servers (command + args)
    ".vscode/mcp.json",  # VS Code: workspace MCP servers
    ".cursor/mcp.json",  # Cursor: project MCP servers
    ".gemini/settings.json",  # Gemini CLI: project settings, mcpServers
    ".claude/settings.json",  # Claude Code: project settings, hooks run shell commands
    ".claude/settings.local.json",  # Claude Code: the same, personal and uncommitted
    ".roo/mcp.json",  # Roo Code: project MCP servers
    ".amazonq/mcp.json",  # Amazon Q: workspace MCP servers
    "opencode.json",  # opencode: project config, MCP servers and commands
    ".vscode/tasks.json",  # VS Code: tasks (shell commands, some run on folder open)
    ".nvim.lua",  # Neovim 'exrc' files run when the project is opened
    ".exrc",
    ".envrc",  # direnv: shell code run on entering the directory
    ".pre-commit-config.yaml",  # hooks run on git commit
    ".github/workflows",  # CI workflows (a directory: everything under it)
)

#: A base_url example per backend table, for fixes.
_URL_EXAMPLES = {"ollama": "http://127.0.0.1:11434", "openai": "http://127.0.0.1:8080/v1"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _check_base_url(url: str, allow_remote: bool, table: str) -> str:
    found = url_problem(url, allow_remote=allow_remote)
    if found is not None:
        code, problem = found
        # Only a non-loopback host is fixed by allow_remote; a bad scheme or shape is not.
        kind = "base_url_remote" if code == "remote_refused" else "base_url_invalid"
        raise PydanticCustomError(kind, "{problem}", {"problem": problem, "table": table})
    return url.rstrip("/")


class OllamaConfig(_Strict):
    """``[ollama]``: the Ollama server (native API).

    Attributes:
        allow_remote: allow a ``base_url`` whose host is not loopback (default false).
        base_url: ``http(s)://host:port``; loopback (127.0.0.0/8, ::1, localhost) unless
            ``allow_remote`` (seed: "Trust and security").
        model: the default model for every role without its own ``[models]`` entry.
        timeout: seconds for one HTTP request (connect, read, write, pool); > 0.
    """

    # allow_remote comes first so that the base_url validator can see it.
    allow_remote: bool = False
    base_url: str = "http://127.0.0.1:11434"
    model: str = Field(default="qwen2.5-coder:7b", min_length=1)
    timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False)

    @field_validator("base_url")
    @classmethod
    def _loopback(cls, v: str, info: ValidationInfo) -> str:
        return _check_base_url(v, bool(info.data.get("allow_remote", False)), "ollama")


class OpenAIConfig(_Strict):
    """``[openai]``: an OpenAI-compatible server (llama.cpp, vLLM, LM Studio).

    Attributes:
        allow_remote: allow a non-loopback ``base_url`` (default false).
        base_url: the API root including ``/v1``; loopback unless ``allow_remote``.
        model: default model ("" lets the server pick; many single-model servers ignore it).
        timeout: seconds for one HTTP request; > 0.
    """

    allow_remote: bool = False
    base_url: str = "http://127.0.0.1:8080/v1"
    model: str = ""
    timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False)

    @field_validator("base_url")
    @classmethod
    def _loopback(cls, v: str, info: ValidationInfo) -> str:
        return _check_base_url(v, bool(info.data.get("allow_remote", False)), "openai")


class ModelsConfig(_Strict):
    """``[models]``: a model per role; ``None`` means the selected backend's ``model``."""

    planner: str | None = Field(default=None, min_length=1)
    coder: str | None = Field(default=None, min_length=1)
    reviewer: str | None = Field(default=None, min_length=1)


class AgentConfig(_Strict):
    """``[agent]``: budgets the host enforces (seed: "Approve checks, then run").

    Attributes:
        max_iterations: model turns per role invocation.
        max_cycles: coder → verification → reviewer cycles.
        max_tool_calls: tool calls across the whole run.
        max_context_chars: characters of one context sent to the model.
    """

    max_iterations: int = Field(default=6, ge=1)
    max_cycles: int = Field(default=2, ge=1)
    max_tool_calls: int = Field(default=64, ge=1)
    max_context_chars: int = Field(default=100_000, ge=1)


class CheckConfig(BaseModel):
    """``[checks.NAME]``: one operator-approved command, run with this exact argv.

    Frozen: the argv snapshot taken at load cannot change during a run (DESIGN: "Check argv is
    snapshotted at load").

    Attributes:
        cmd: the argv; non-empty, no empty strings or NUL characters. ``cmd[0]`` containing
            ``/`` is relative to the workspace (or absolute); otherwise it is looked up on
            ``PATH``.
        timeout: milliseconds before the process group is killed; > 0.
        required: whether the verification gate needs it to pass.
        kind: test, lint, typecheck, diagnostics, build or check.
        filetypes: language names (``"python"``), extensions (``".py"``) or ``"*"``.
        executable: absolute path of ``cmd[0]`` found at load (symlinks kept, so a virtualenv's
            interpreter stays itself), or ``None`` when not found. Computed by ``FlowConfig``;
            a missing executable fails the check when it runs, it is not a config error.
        executable_id: ``(st_dev, st_ino)`` of the file ``executable`` names (symlinks followed)
            at load: the executable's pinned identity. A check whose executable no longer has
            this identity when it runs is refused (``check_executable_changed``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    cmd: tuple[str, ...]
    timeout: int = Field(default=60_000, gt=0)
    required: bool = True
    kind: CheckKind = "check"
    filetypes: tuple[str, ...] = ()
    executable: str | None = None
    executable_id: tuple[int, int] | None = None

    @field_validator("cmd", "filetypes", mode="before")
    @classmethod
    def _list_to_tuple(cls, v: Any) -> Any:
        # TOML arrays arrive as lists; strict mode would refuse them for a tuple.
        return tuple(v) if isinstance(v, list) else v

    @field_validator("cmd")
    @classmethod
    def _argv(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v:
            raise PydanticCustomError("empty_argv", "the argv list is empty")
        for i, arg in enumerate(v):
            if arg == "":
                raise PydanticCustomError(
                    "empty_argument", "cmd[{index}] is an empty string", {"index": i}
                )
            if "\x00" in arg:
                raise PydanticCustomError(
                    "nul_argument", "cmd[{index}] contains a NUL character", {"index": i}
                )
        return v

    @field_validator("filetypes")
    @classmethod
    def _filetypes(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for i, ft in enumerate(v):
            if not ft.strip():
                raise PydanticCustomError(
                    "empty_filetype", "filetypes[{index}] is an empty string", {"index": i}
                )
        return v


def resolve_executable(argv0: str, workspace: Path, path_env: str | None) -> str | None:
    """Where ``argv0`` would be found: the rule ``CheckConfig.executable`` records.

    Args:
        argv0: the first element of a check's argv.
        workspace: the absolute workspace directory (relative paths with ``/`` resolve here).
        path_env: the ``PATH`` to search for a bare name (``None``: ``os.defpath``).

    Returns:
        An absolute, normalised path (symlinks not resolved) to an executable regular file, or
        ``None``.
    """
    if "/" in argv0:
        candidate = os.path.normpath(os.path.join(workspace, argv0))
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
        return None
    found = shutil.which(argv0, path=path_env if path_env is not None else os.defpath)
    return os.path.abspath(found) if found else None


def executable_identity(path: str | None) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the file ``path`` names, following symlinks; None if unreadable.

    Recorded at load as ``CheckConfig.executable_id`` and compared again just before the check
    starts (DESIGN: "the resolved executable's identity recorded").
    """
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _inside_workspace(path: str | None, workspace: Path) -> list[str]:
    """Workspace-relative names of ``path`` and of its resolved target that lie inside."""
    if path is None:
        return []
    root = os.path.realpath(workspace)
    out: list[str] = []
    for candidate in (os.path.normpath(path), os.path.realpath(path)):
        for base in (os.path.normpath(workspace), root):
            if os.path.commonpath([base, candidate]) == base and candidate != base:
                rel = Path(os.path.relpath(candidate, base)).as_posix()
                if rel not in out:
                    out.append(rel)
                break
    return out


def _virtualenv_of(path: str | None, workspace: Path) -> list[str]:
    """The workspace-relative virtualenv (a directory with ``pyvenv.cfg``) holding ``path``."""
    if path is None:
        return []
    root = os.path.normpath(workspace)
    here = os.path.dirname(os.path.normpath(path))
    while os.path.commonpath([root, here]) == root and here != root:
        if os.path.isfile(os.path.join(here, "pyvenv.cfg")):
            return [Path(os.path.relpath(here, root)).as_posix()]
        here = os.path.dirname(here)
    return []


#: Interpreters whose first positional argument is the program they run.
_INTERPRETER = re.compile(
    r"(python[0-9.]*|pypy[0-9.]*|sh|bash|dash|zsh|ksh|node|deno|bun|ruby|perl|php|lua[0-9.]*|"
    r"Rscript|tclsh)"
)
#: Options after which an interpreter runs no script file (a module or inline code).
_NO_SCRIPT = frozenset({"-m", "-c", "-e", "--eval"})


def _script_of(cmd: tuple[str, ...], workspace: Path) -> list[str]:
    """The workspace script an interpreter check runs (``sh tools/lint.sh``), if any.

    For ``python -m MODULE`` it is the names that would shadow the module from the workspace
    root (``MODULE.py``, ``MODULE/``), which the check's working directory puts first on
    ``sys.path``. Only the program is protected, not the files it is pointed at
    (``py_compile app.py`` checks ``app.py``, which the coder must still be able to edit).
    """
    name = os.path.basename(cmd[0])
    if not _INTERPRETER.fullmatch(name):
        return []
    for i, arg in enumerate(cmd[1:], start=1):
        if arg == "-m" and name.startswith(("python", "pypy")) and i + 1 < len(cmd):
            # ``python -m pytest`` with cwd = the workspace imports ./pytest.py or ./pytest/
            # first: a file of that name would replace the tool, so neither may be created.
            top = cmd[i + 1].split(".")[0]
            return [f"{top}.py", top] if top and "/" not in top else []
        if arg in _NO_SCRIPT:
            return []
        if arg.startswith("-"):
            continue
        candidate = os.path.normpath(os.path.join(workspace, arg))
        return _inside_workspace(candidate, workspace) if os.path.isfile(candidate) else []
    return []


class FlowConfig(BaseModel):
    """The whole operator configuration.

    Attributes:
        workspace_dir: absolute path of an existing directory, written as a root key before any
            table (seed: "Approve checks, then run").
        backend: ``"ollama"`` (default) or ``"openai"``.
        ollama / openai / models / agent: the tables of the same names.
        checks: named checks, ``[checks.NAME]``; names are letters, digits, ``_ . -``.
        protected: workspace-relative paths the file tools may read but never write: always
            ``DEFAULT_PROTECTED`` (files that launch MCP servers or agent hooks), the checks'
            executables that lie inside the workspace, and the operator config files that lie
            inside the workspace (added by ``load_config``).

    Raises:
        pydantic.ValidationError: when built directly with bad values (``load_config`` turns
            these into ``ConfigError``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    workspace_dir: Path
    backend: Literal["ollama", "openai"] = "ollama"
    ollama: OllamaConfig = Field(default_factory=OllamaConfig)
    openai: OpenAIConfig = Field(default_factory=OpenAIConfig)
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    checks: dict[str, CheckConfig] = Field(default_factory=dict)
    protected: tuple[str, ...] = DEFAULT_PROTECTED

    @field_validator("workspace_dir", mode="before")
    @classmethod
    def _workspace_str(cls, v: Any) -> Any:
        return Path(v) if isinstance(v, str) else v

    @field_validator("workspace_dir")
    @classmethod
    def _workspace(cls, v: Path) -> Path:
        shown = {"path": repr(str(v))}
        if not v.is_absolute():
            raise PydanticCustomError(
                "workspace_relative", "{path} is a relative path; it must be absolute", shown
            )
        if not v.exists():
            raise PydanticCustomError("workspace_missing", "{path} does not exist", shown)
        if not v.is_dir():
            raise PydanticCustomError("workspace_not_dir", "{path} is not a directory", shown)
        return Path(os.path.normpath(v))

    @field_validator("protected", mode="before")
    @classmethod
    def _protected_tuple(cls, v: Any) -> Any:
        return tuple(v) if isinstance(v, list) else v

    @field_validator("protected")
    @classmethod
    def _protected_defaults(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        # The launcher files stay protected whatever a caller passes.
        return tuple(dict.fromkeys((*DEFAULT_PROTECTED, *v)))

    @field_validator("checks")
    @classmethod
    def _check_names(cls, v: dict[str, CheckConfig]) -> dict[str, CheckConfig]:
        for name in v:
            if not _CHECK_NAME.match(name):
                raise PydanticCustomError(
                    "check_name",
                    "check name {name} must start with a letter or digit and use only "
                    "letters, digits, '_', '.', '-' (at most 64 characters)",
                    {"name": repr(name)},
                )
        return v

    @model_validator(mode="after")
    def _record_executables(self, info: ValidationInfo) -> FlowConfig:
        ctx = info.context if isinstance(info.context, Mapping) else {}
        path_env = ctx.get("PATH", os.environ.get("PATH"))
        resolved: dict[str, CheckConfig] = {}
        inside: list[str] = []
        for name, check in self.checks.items():
            exe = resolve_executable(check.cmd[0], self.workspace_dir, path_env)
            resolved[name] = check.model_copy(
                update={"executable": exe, "executable_id": executable_identity(exe)}
            )
            inside += _inside_workspace(exe, self.workspace_dir)
            inside += _virtualenv_of(exe, self.workspace_dir)
            inside += _script_of(check.cmd, self.workspace_dir)
        # Frozen model: set the computed fields once, during validation. What an approved
        # check runs is protected like operator config: its executable, the virtualenv it
        # lives in, and the script an interpreter is given, when they lie in the workspace.
        # The model cannot rewrite the program an approved check runs.
        object.__setattr__(self, "checks", resolved)
        object.__setattr__(self, "protected", tuple(dict.fromkeys((*self.protected, *inside))))
        return self

    def model_for(self, role: str) -> str:
        """The model name a role uses: ``models.<role>``, else the selected backend's model.

        Args:
            role: ``"planner"``, ``"coder"`` or ``"reviewer"``.

        Raises:
            ValueError: for any other role name.
        """
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        chosen: str | None = getattr(self.models, role)
        if chosen:
            return chosen
        return self.ollama.model if self.backend == "ollama" else self.openai.model


@dataclass(frozen=True)
class LoadedConfig:
    """A validated config and the files it came from (absolute paths, in load order)."""

    config: FlowConfig
    sources: list[str]


def user_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The user config file's path (it may not exist).

    ``$XDG_CONFIG_HOME/flow/config.toml`` when ``XDG_CONFIG_HOME`` is set to an absolute path
    (the XDG Base Directory spec ignores relative values), else ``$HOME/.config/flow/config.toml``.

    Args:
        environ: the environment to read (default ``os.environ``).
    """
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "flow" / "config.toml"
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".config" / "flow" / "config.toml"


# --------------------------------------------------------------------------------------------
# Loading


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as err:
        raise ConfigError(
            f"{path}: cannot read the config file ({err.strerror or err}); "
            "fix: check the path and its permissions",
            code="config_not_found",
        ) from err
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{path}: the config file is larger than {MAX_CONFIG_BYTES} bytes; "
            "fix: point --config at the operator TOML file",
            code="config_invalid",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {err.start}); fix: save the file as UTF-8",
            code="config_syntax",
        ) from err
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        # tomllib's message ends with "(at line L, column C)".
        raise ConfigError(
            f"{path}: TOML syntax error: {err}; fix: correct the TOML at that line",
            code="config_syntax",
        ) from err


def _structure_problems(data: Mapping[str, Any], path: Path) -> None:
    """Shape errors that pydantic would report less helpfully."""
    for table in _TABLES:
        value = data.get(table)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise ConfigError(
                f"{path}: {table}: expected a table, got {_type_name(value)}; "
                f"fix: write it as a [{table}] table",
            )
        subtables = value.items() if table == "checks" else [("", value)]
        for sub, body in subtables:
            where = f"{table}.{sub}" if sub else table
            if not isinstance(body, dict):
                raise ConfigError(
                    f"{path}: {where}: expected a table, got {_type_name(body)}; "
                    f"fix: write it as a [{where}] table with cmd = [...]",
                )
            for key in _ROOT_KEYS:
                if key in body:
                    raise ConfigError(
                        f"{path}: {where}.{key}: {key} is a root key but it landed inside the "
                        f"[{where}] table; fix: move the {key} line above the first [table] "
                        "header of the file",
                    )
            for computed in ("executable", "executable_id"):
                if table == "checks" and computed in body:
                    raise ConfigError(
                        f"{path}: {where}.{computed}: Flow records the executable itself at "
                        "load; fix: remove this key and put the program in cmd[0]",
                    )
    if "protected" in data:
        raise ConfigError(
            f"{path}: protected: Flow computes the protected files itself; fix: remove this key",
        )


def _type_name(value: Any) -> str:
    """The TOML name of a parsed value's type (what the user wrote)."""
    if isinstance(value, datetime.date | datetime.time):
        return "a date or time"
    return {
        str: "a string",
        int: "an integer",
        float: "a float",
        bool: "a boolean",
        list: "an array",
        tuple: "an array",
        dict: "a table",
    }.get(type(value), "a value of another kind")


def _merge(
    merged: dict[str, Any], origin: dict[str, str], data: Mapping[str, Any], source: str
) -> None:
    """Merge ``data`` into ``merged`` key by key, noting which source set each dotted key."""
    for key, value in data.items():
        if key == "checks" and isinstance(value, dict) and isinstance(merged.get(key), dict):
            for name, body in value.items():
                merged[key][name] = body  # a check is replaced whole, never stitched
                origin[f"checks.{name}"] = source
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            for sub, subval in value.items():
                merged[key][sub] = subval
                origin[f"{key}.{sub}"] = source
        else:
            merged[key] = dict(value) if isinstance(value, dict) else value
            origin[key] = source
            if isinstance(value, dict):
                prefix = key
                for sub in value:
                    origin[f"{prefix}.{sub}"] = source


def _origin_of(dotted: str, origin: Mapping[str, str]) -> str | None:
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        found = origin.get(".".join(parts[:n]))
        if found:
            return found
    return None


#: pydantic's type names (from error types such as ``int_type``), in TOML's words.
_EXPECTED = {
    "tuple": "an array",
    "list": "an array",
    "int": "an integer",
    "bool": "a boolean (true or false)",
    "float": "a number",
    "string": "a string",
    "dict": "a table",
    "model": "a table",
    "path": "a string",
    "is_instance_of": "a string",
}

#: Example values for fixes that say "write <type>", by the last key of the location.
_EXAMPLES = {
    "cmd": 'cmd = [".venv/bin/python", "-m", "pytest", "-q"]',
    "filetypes": 'filetypes = ["python", ".pyi"]',
}


def _allowed_keys(loc: tuple[str | int, ...]) -> str:
    model: type[BaseModel] = FlowConfig
    for part in loc[:-1]:
        if model is FlowConfig and part == "checks":
            model = CheckConfig
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            continue
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
    return ", ".join(
        k for k in model.model_fields if k not in ("executable", "executable_id", "protected")
    )


def _toml_value(value: Any) -> str:
    """A value as TOML would spell it, for messages (short)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _short('"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return _short(repr(value))


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _key_text(loc: tuple[str | int, ...]) -> str:
    """``("checks", "t", "cmd", 1)`` → ``checks.t.cmd[1]``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(root)"


def _unit(dotted: str) -> str:
    if dotted.endswith(".timeout"):
        return "milliseconds" if dotted.startswith("checks.") else "seconds"
    return ""


def _explain(e: Mapping[str, Any], loc: tuple[str | int, ...], dotted: str) -> tuple[str, str]:
    """``(problem, fix)`` for one pydantic error, in the TOML file's terms."""
    kind: str = e["type"]
    ctx: Mapping[str, Any] = e.get("ctx") or {}
    got = e.get("input")
    last = str(loc[-1]) if loc and not isinstance(loc[-1], int) else ""
    unit = _unit(dotted)
    if kind == "extra_forbidden":
        return (
            "unknown key",
            f"remove it or correct its spelling (allowed here: {_allowed_keys(loc)})",
        )
    if kind == "missing":
        if last == "cmd":
            return "this check has no cmd", "add the command as an array, e.g. " + _EXAMPLES["cmd"]
        return "this required key is missing", "add it"
    if kind == "empty_argv":
        return "the argv list is empty", (
            "give the executable and its arguments, e.g. " + _EXAMPLES["cmd"]
        )
    if kind == "empty_argument":
        return "this argument is an empty string", "remove it or write the argument"
    if kind == "empty_filetype":
        return "this entry is an empty string", (
            'remove it or write a language ("python"), an extension (".py") or "*"'
        )
    if kind == "nul_argument":
        return "this argument contains a NUL character", (
            "remove the NUL character (\\u0000) from it"
        )
    if kind == "base_url_remote":
        table = str(ctx.get("table", loc[0] if loc else ""))
        return str(ctx.get("problem", e["msg"])), (
            "use a loopback URL such as http://127.0.0.1:PORT, or set "
            f"{table}.allow_remote = true only for a server you trust"
        )
    if kind == "base_url_invalid":
        table = str(ctx.get("table", loc[0] if loc else ""))
        example = _URL_EXAMPLES.get(table, "http://127.0.0.1:PORT")
        return str(ctx.get("problem", e["msg"])), (
            f"write the server's URL, e.g. base_url = {_toml_value(example)}"
        )
    if kind == "check_name":
        return str(e["msg"]), "rename the table, e.g. [checks.tests]"
    if kind.endswith(("_type", "_parsing")) or kind == "is_instance_of":
        want = _EXPECTED.get(kind.removesuffix("_type").removesuffix("_parsing"))
        if want is None:
            return str(e["msg"]), "correct the value"
        problem = f"expected {want}, got {_type_name(got)}"
        fix = f"write {want}"
        if isinstance(got, str) and want not in ("a string", "an array", "a table"):
            fix += " without quotes"
        if last in _EXAMPLES and want == "an array":
            fix += ", e.g. " + _EXAMPLES[last]
        elif unit:
            fix += f" ({unit})"
        return problem, fix
    if kind == "literal_error":
        allowed = str(ctx.get("expected", "")).replace("'", '"')
        return f"{_toml_value(got)} is not one of {allowed}", f"write one of {allowed}"
    if kind in ("greater_than", "greater_than_equal"):
        bound = ctx.get("gt", ctx.get("ge"))
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        words = "greater than" if kind == "greater_than" else "at least"
        what = (
            f"a number of {unit}" if unit else "an integer" if isinstance(got, int) else "a value"
        )
        return (
            f"must be {words} {bound}, not {_toml_value(got)}",
            f"write {what} {'of ' if kind == 'greater_than_equal' else ''}{words} {bound}",
        )
    if kind == "finite_number":
        return f"must be a finite number, not {_toml_value(got)}", (
            f"write a number of {unit or 'units'}, e.g. 120"
        )
    if kind == "string_too_short":
        fix = "write a model name" if last == "model" or dotted.startswith("models.") else ""
        if dotted.startswith("models."):
            fix += ", or remove the key to use the backend's model"
        what = "the model name" if fix else "the value"
        return f"{what} is an empty string", fix or "write a non-empty string"
    if kind == "too_short":
        return "the array is empty", "give at least one element"
    return str(e["msg"]).removeprefix("Value error, "), "correct the value"


def _workspace_line(e: Mapping[str, Any], where: str, workspace_arg: str | None) -> str | None:
    """The message for a bad ``workspace_dir``, worded for where it came from."""
    kind: str = e["type"]
    if where == "--workspace" and kind in ("workspace_missing", "workspace_not_dir"):
        given = workspace_arg if workspace_arg is not None else str(e.get("input"))
        resolved = str(e.get("input"))
        what = "does not exist" if kind == "workspace_missing" else "is not a directory"
        line = f"--workspace: the directory {given!r} {what}"
        if not os.path.isabs(given):
            line += f" (a relative path is resolved against the current directory: {resolved!r})"
        return line + "; fix: pass the path of an existing project directory to --workspace"
    fix = (
        'write the absolute path of an existing directory, e.g. workspace_dir = "/home/you/'
        'project", or pass --workspace DIR'
    )
    if kind == "missing":
        return (
            f"{where}: workspace_dir: no workspace is set; fix: pass --workspace DIR, or add "
            'workspace_dir = "/absolute/path" at the top of the operator config file, before '
            "any [table]"
        )
    if kind == "workspace_relative":
        path = (e.get("ctx") or {}).get("path", "")
        return (
            f"{where}: workspace_dir: {path} is a relative path; fix: write it as an absolute "
            'path, e.g. workspace_dir = "/home/you/project", or pass --workspace DIR'
        )
    if kind in ("workspace_missing", "workspace_not_dir"):
        return f"{where}: workspace_dir: {e['msg']}; fix: {fix}"
    if kind == "is_instance_of":
        return (
            f"{where}: workspace_dir: expected a string, got {_type_name(e.get('input'))}; "
            f"fix: {fix}"
        )
    return None


def _translate(
    err: ValidationError,
    origin: Mapping[str, str],
    last_source: str | None,
    workspace_arg: str | None = None,
) -> ConfigError:
    lines: list[str] = []
    for e in err.errors(include_url=False):
        loc = tuple(e["loc"])
        index = (e.get("ctx") or {}).get("index")
        key = _key_text(loc)
        if isinstance(index, int) and e["type"] in (
            "empty_argument",
            "nul_argument",
            "empty_filetype",
        ):
            key += f"[{index}]"
        where = _origin_of(key, origin) or last_source or "configuration"
        if key == "workspace_dir":
            line = _workspace_line(e, where, workspace_arg)
            if line is not None:
                lines.append(line)
                continue
        problem, fix = _explain(e, loc, key)
        lines.append(f"{where}: {key}: {problem}; fix: {fix}")
    return ConfigError("\n".join(lines) if lines else str(err))


def _protected(sources: list[str], workspace: Path) -> tuple[str, ...]:
    root = os.path.realpath(workspace)
    out: list[str] = []
    for src in sources:
        real = os.path.realpath(src)
        if os.path.commonpath([root, real]) == root and real != root:
            rel = Path(os.path.relpath(real, root)).as_posix()
            if rel not in out:
                out.append(rel)
    return tuple(out)


def load_config(
    *,
    config_file: str | Path | None = None,
    workspace: str | Path | None = None,
    model: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Load the user file, then ``config_file``, then the overrides, and validate the result.

    Args:
        config_file: the explicit operator file (``--config``); a relative path is taken from
            the current directory. It must exist.
        workspace: replaces ``workspace_dir`` (``--workspace``). Unlike ``workspace_dir`` in a
            file, a relative value is accepted here and made absolute against the current
            directory, because people type ``--workspace .`` at a shell.
        model: replaces every role's model and the backends' ``model`` (``--model``).
        environ: environment for ``XDG_CONFIG_HOME``, ``HOME`` and ``PATH``
            (default ``os.environ``).

    Returns:
        The config and the absolute paths of the files read, in order.

    Raises:
        ConfigError: naming the file, the dotted key and the fix, for a missing explicit
            file, TOML syntax errors (with line), unknown keys, wrong types, a relative,
            missing or non-directory workspace, ``workspace_dir`` written after a table,
            a non-loopback ``base_url`` without ``allow_remote``, a check with an empty argv
            or an empty argument, and a bad check name.
    """
    env = os.environ if environ is None else environ
    files: list[Path] = []
    user = user_config_path(env)
    if user.exists():
        if not user.is_file():
            raise ConfigError(
                f"{user}: the user config path exists but is not a file; "
                "fix: remove it or make it a TOML file",
                code="config_not_found",
            )
        files.append(Path(os.path.abspath(user)))
    if config_file is not None:
        explicit = Path(os.path.abspath(config_file))
        if not explicit.is_file():
            what = "is not a file" if explicit.exists() else "does not exist"
            raise ConfigError(
                f"{explicit}: the config file given with --config {what}; "
                "fix: pass the path of an existing operator TOML file",
                code="config_not_found",
            )
        if not any(os.path.samefile(explicit, f) for f in files):
            files.append(explicit)

    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for path in files:
        data = _read_toml(path)
        _structure_problems(data, path)
        _merge(merged, origin, data, str(path))

    if workspace is not None:
        merged["workspace_dir"] = os.path.abspath(os.fspath(workspace))
        origin["workspace_dir"] = "--workspace"
    if model is not None:
        if not model.strip():
            raise ConfigError("--model: the model name is empty; fix: give a model name")
        for table in ("ollama", "openai"):
            merged.setdefault(table, {})
            if isinstance(merged[table], dict):
                merged[table]["model"] = model
                origin[f"{table}.model"] = "--model"
        merged.setdefault("models", {})
        if isinstance(merged["models"], dict):
            for role in ROLES:
                merged["models"][role] = model
                origin[f"models.{role}"] = "--model"

    sources = [str(p) for p in files]
    try:
        cfg = FlowConfig.model_validate(merged, context={"PATH": env.get("PATH")})
    except ValidationError as err:
        raise _translate(
            err,
            origin,
            sources[-1] if sources else None,
            None if workspace is None else os.fspath(workspace),
        ) from err
    inside = _protected(sources, cfg.workspace_dir)
    if inside:
        protected = tuple(dict.fromkeys((*cfg.protected, *inside)))
        cfg = cfg.model_copy(update={"protected": protected})
    return LoadedConfig(config=cfg, sources=sources)
