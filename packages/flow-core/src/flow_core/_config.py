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

Every problem is a ``ConfigError`` whose message names the file, the dotted key and the fix.
Codes: ``config_invalid`` (bad value, unknown key, missing workspace), ``config_syntax``
(TOML syntax, not UTF-8), ``config_not_found`` (explicit file missing or unreadable).
"""

from __future__ import annotations

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

from flow_core._backends._http import loopback_problem
from flow_core._errors import ConfigError
from flow_core._protocols import ROLES
from flow_core._report import CheckKind

__all__ = [
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


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _check_base_url(url: str, allow_remote: bool, table: str) -> str:
    problem = loopback_problem(url, allow_remote=allow_remote)
    if problem is not None:
        raise ValueError(f"{problem} (set {table}.allow_remote = true only for a server you trust)")
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
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    cmd: tuple[str, ...] = Field(min_length=1)
    timeout: int = Field(default=60_000, gt=0)
    required: bool = True
    kind: CheckKind = "check"
    filetypes: tuple[str, ...] = ()
    executable: str | None = None

    @field_validator("cmd", "filetypes", mode="before")
    @classmethod
    def _list_to_tuple(cls, v: Any) -> Any:
        # TOML arrays arrive as lists; strict mode would refuse them for a tuple.
        return tuple(v) if isinstance(v, list) else v

    @field_validator("cmd")
    @classmethod
    def _argv(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for i, arg in enumerate(v):
            if arg == "":
                raise ValueError(f"argument {i} is an empty string")
            if "\x00" in arg:
                raise ValueError(f"argument {i} contains a NUL character")
        return v

    @field_validator("filetypes")
    @classmethod
    def _filetypes(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if any(not ft.strip() for ft in v):
            raise ValueError("filetypes may not contain an empty string")
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


class FlowConfig(BaseModel):
    """The whole operator configuration.

    Attributes:
        workspace_dir: absolute path of an existing directory, written as a root key before any
            table (seed: "Approve checks, then run").
        backend: ``"ollama"`` (default) or ``"openai"``.
        ollama / openai / models / agent: the tables of the same names.
        checks: named checks, ``[checks.NAME]``; names are letters, digits, ``_ . -``.
        protected: workspace-relative paths of operator config files inside the workspace;
            the file tools refuse them. Computed by ``load_config``.

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
    protected: tuple[str, ...] = ()

    @field_validator("workspace_dir", mode="before")
    @classmethod
    def _workspace_str(cls, v: Any) -> Any:
        return Path(v) if isinstance(v, str) else v

    @field_validator("workspace_dir")
    @classmethod
    def _workspace(cls, v: Path) -> Path:
        if not v.is_absolute():
            raise ValueError(f"{str(v)!r} is relative; write an absolute path")
        if not v.exists():
            raise ValueError(f"{str(v)!r} does not exist")
        if not v.is_dir():
            raise ValueError(f"{str(v)!r} is not a directory")
        return Path(os.path.normpath(v))

    @field_validator("protected", mode="before")
    @classmethod
    def _protected_tuple(cls, v: Any) -> Any:
        return tuple(v) if isinstance(v, list) else v

    @field_validator("checks")
    @classmethod
    def _check_names(cls, v: dict[str, CheckConfig]) -> dict[str, CheckConfig]:
        for name in v:
            if not _CHECK_NAME.match(name):
                raise ValueError(
                    f"check name {name!r} must start with a letter or digit and use only "
                    "letters, digits, '_', '.', '-' (at most 64 characters)"
                )
        return v

    @model_validator(mode="after")
    def _record_executables(self, info: ValidationInfo) -> FlowConfig:
        ctx = info.context if isinstance(info.context, Mapping) else {}
        path_env = ctx.get("PATH", os.environ.get("PATH"))
        resolved = {
            name: check.model_copy(
                update={
                    "executable": resolve_executable(check.cmd[0], self.workspace_dir, path_env)
                }
            )
            for name, check in self.checks.items()
        }
        # Frozen model: set the computed field once, during validation.
        object.__setattr__(self, "checks", resolved)
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
            if table == "checks" and "executable" in body:
                raise ConfigError(
                    f"{path}: {where}.executable: Flow records the executable itself at load; "
                    "fix: remove this key and put the program in cmd[0]",
                )
    if "protected" in data:
        raise ConfigError(
            f"{path}: protected: Flow computes the protected files itself; fix: remove this key",
        )


def _type_name(value: Any) -> str:
    return {
        str: "a string",
        int: "an integer",
        float: "a float",
        bool: "a boolean",
        list: "an array",
        dict: "a table",
    }.get(type(value), type(value).__name__)


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


_EXPECTED = {
    "tuple": "an array",
    "list": "an array",
    "int": "an integer",
    "bool": "true or false",
    "float": "a number",
    "string": "a string",
    "dict": "a table",
    "model": "a table",
    "path": "a string",
}

_FIXES = {
    "extra_forbidden": "remove it or correct its spelling",
    "missing": "add it",
    "literal_error": "use one of the allowed values",
    "greater_than": "use a larger value",
    "greater_than_equal": "use a larger value",
    "too_short": "give at least one element",
    "string_too_short": "give a non-empty string",
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
    return ", ".join(k for k in model.model_fields if k not in ("executable", "protected"))


def _translate(
    err: ValidationError, origin: Mapping[str, str], last_source: str | None
) -> ConfigError:
    lines: list[str] = []
    for e in err.errors(include_url=False):
        loc = tuple(e["loc"])
        dotted = ".".join(str(p) for p in loc) or "(root)"
        where = _origin_of(dotted, origin) or last_source or "configuration"
        kind = e["type"]
        msg = e["msg"].removeprefix("Value error, ")
        if kind == "extra_forbidden":
            fix = f"remove it or correct its spelling (allowed here: {_allowed_keys(loc)})"
            msg = "unknown key"
        elif kind == "missing" and dotted == "workspace_dir":
            fix = (
                'add workspace_dir = "/absolute/path" at the top of the config file, '
                "before any [table], or pass --workspace"
            )
        elif dotted == "workspace_dir":
            if kind == "is_instance_of":
                msg = f"expected a string, not {_type_name(e.get('input'))}"
            fix = "write the absolute path of an existing directory, or pass --workspace"
        elif kind.endswith(("_type", "_parsing")):
            got = _type_name(e.get("input"))
            want = _EXPECTED.get(kind.removesuffix("_type").removesuffix("_parsing"))
            msg = f"expected {want}" if want else msg
            fix = f"write {want or 'a value of the expected type'}, not {got}"
        elif dotted in ("ollama.base_url", "openai.base_url"):
            fix = "use a loopback URL such as http://127.0.0.1:PORT"
        else:
            fix = _FIXES.get(kind, "correct the value")
        lines.append(f"{where}: {dotted}: {msg}; fix: {fix}")
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
        raise _translate(err, origin, sources[-1] if sources else None) from err
    protected = _protected(sources, cfg.workspace_dir)
    if protected:
        cfg = cfg.model_copy(update={"protected": protected})
    return LoadedConfig(config=cfg, sources=sources)
