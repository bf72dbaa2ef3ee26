"""Operator configuration: the pydantic models (``FlowConfig`` and its tables).

The operator, not the model, decides which server Flow talks to, which commands count as
checks and how large a run may grow (``docs/architecture.md``, "Config"). Loading the TOML files
is ``flow_core.config._load``; turning validation errors into TOML terms is
``flow_core.config._messages``; finding each check's executable is
``flow_core.config._executables``.

Protected files: the operator config files that lie inside the workspace, and the workspace
files that make an MCP client or coding agent launch programs (``DEFAULT_PROTECTED``), stay
readable but are never writable through Flow's file tools. A coder that could rewrite
``.mcp.json`` could change what the next client start launches, ``--trusted`` included.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from flow_core._report import CheckKind
from flow_core._roles import ROLES
from flow_core._urls import url_problem
from flow_core.config._executables import resolve_checks
from flow_core.config._options import ModelOptions, merged_options
from flow_core.config._protected import DEFAULT_PROTECTED, protected_paths
from flow_core.config._runs import RunsConfig
from flow_core.config._sandbox import SandboxConfig

#: The argv placeholder of a ``results = "junit"`` check: Flow puts the private results path
#: there (``verify/_junit.py``).
JUNIT_PLACEHOLDER = "{junit_xml}"

#: ``tool_results``: how tool results reach the model (``flow_core.models._delivery``).
ToolResults = Literal["auto", "native", "user"]

__all__ = [
    "DEFAULT_PROTECTED",
    "AgentConfig",
    "CheckConfig",
    "CheckKind",
    "FlowConfig",
    "LoadedConfig",
    "ModelOptions",
    "ModelsConfig",
    "OllamaConfig",
    "OpenAIConfig",
    "resolve_checks",
]

_CHECK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)


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
            ``allow_remote`` (``docs/architecture.md``, "Trust").
        model: the default model for every role without its own ``[models]`` entry.
        timeout: seconds one HTTP request may take in all (connecting, waiting, reading the
            whole reply); > 0.
        tool_results: how tool results reach the model: ``"native"`` (the tool role),
            ``"user"`` (a delimited user message) or ``"auto"`` (default: decided per model
            from ``/api/show``; ``flow_core.models._delivery``).
        options: ``[ollama.options]``, model options (``flow_core.config._options``).
    """

    # allow_remote comes first so that the base_url validator can see it.
    allow_remote: bool = False
    base_url: str = "http://127.0.0.1:11434"
    model: str = Field(default="qwen2.5-coder:7b", min_length=1)
    timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False)
    tool_results: ToolResults = "auto"
    options: ModelOptions = Field(default_factory=ModelOptions)

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
        timeout: seconds one HTTP request may take in all; > 0.
        tool_results: ``"native"``, ``"user"`` or ``"auto"`` (default: decided per model
            before its first tool result, from the server's prompt token count for a probe
            with and without a tool result; ``flow_core.models._delivery``).
        options: ``[openai.options]``, model options (``flow_core.config._options``).
    """

    allow_remote: bool = False
    base_url: str = "http://127.0.0.1:8080/v1"
    model: str = ""
    timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False)
    tool_results: ToolResults = "auto"
    options: ModelOptions = Field(default_factory=ModelOptions)

    @field_validator("base_url")
    @classmethod
    def _loopback(cls, v: str, info: ValidationInfo) -> str:
        return _check_base_url(v, bool(info.data.get("allow_remote", False)), "openai")


class RoleOptions(_Strict):
    """``[models.options.ROLE]``: model options for one role, over the backend's."""

    planner: ModelOptions | None = None
    coder: ModelOptions | None = None
    reviewer: ModelOptions | None = None


class ModelsConfig(_Strict):
    """``[models]``: a model per role; ``None`` means the selected backend's ``model``.

    ``options`` (``[models.options.coder]`` ...) overrides the backend's model options for one
    role, key by key.
    """

    planner: str | None = Field(default=None, min_length=1)
    coder: str | None = Field(default=None, min_length=1)
    reviewer: str | None = Field(default=None, min_length=1)
    options: RoleOptions = Field(default_factory=RoleOptions)


class AgentConfig(_Strict):
    """``[agent]``: budgets the host enforces (``docs/architecture.md``, "Budgets").

    Attributes:
        max_iterations: model turns per role invocation.
        max_cycles: coder → verification → reviewer cycles.
        max_tool_calls: tool calls across the whole run.
        max_context_chars: characters of one context sent to the model.
        max_seconds: the run's wall-clock limit in seconds (``budget_time``); unset: none.
        max_repeated_calls: identical tool calls a role may make with no change in between
            (``repeated_call`` beyond it; ``run/_stall.py``).
        max_idle_turns: turns in a row without a new successful tool call before a role ends
            (``no_progress``).
        allow_failing_baseline: go on when a required static check fails on the untouched
            tree, judging it by new findings only (``run/_baseline.py``).
        allow_test_edits: the operator's consent that test files the model changed or added
            count as evidence, each test only when it fails on the baseline tree and passes
            on the changed tree (fail-to-pass; ``run/_fail_to_pass.py``); without it they
            decide nothing (``docs/architecture.md``, "The evidence run").
    """

    max_iterations: int = Field(default=6, ge=1)
    max_cycles: int = Field(default=2, ge=1)
    max_tool_calls: int = Field(default=64, ge=1)
    max_context_chars: int = Field(default=100_000, ge=1)
    max_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    max_repeated_calls: int = Field(default=2, ge=1)
    max_idle_turns: int = Field(default=3, ge=1)
    allow_failing_baseline: bool = False
    allow_test_edits: bool = False


class CheckConfig(BaseModel):
    """``[checks.NAME]``: one operator-approved command, run with this exact argv.

    Frozen: the argv snapshot taken at load cannot change during a run (``docs/architecture.md``,
    "Checks").

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
        results: ``"auto"`` (default): Flow reads the test results of a pytest argv, adding
            its own private ``--junitxml`` when the argv has no ``{junit_xml}``; ``"junit"``:
            the check writes JUnit XML to the path Flow puts in place of ``{junit_xml}`` in
            ``cmd`` (required there); ``"exit_status"``: the pass rests on the exit status
            alone (``verify/_results.py``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    cmd: tuple[str, ...]
    timeout: int = Field(default=60_000, gt=0)
    required: bool = True
    kind: CheckKind = "check"
    filetypes: tuple[str, ...] = ()
    executable: str | None = None
    executable_id: tuple[int, int] | None = None
    results: Literal["auto", "junit", "exit_status"] = "auto"

    @model_validator(mode="after")
    def _results_placeholder(self) -> CheckConfig:
        has = any(JUNIT_PLACEHOLDER in arg for arg in self.cmd)
        if self.results == "junit" and not has:
            raise PydanticCustomError(
                "junit_placeholder_missing",
                'results = "junit" needs the placeholder {placeholder} in cmd',
                {"placeholder": JUNIT_PLACEHOLDER},
            )
        if self.results == "exit_status" and has:
            raise PydanticCustomError(
                "junit_results_missing",
                'cmd uses {placeholder} but the check sets results = "exit_status"',
                {"placeholder": JUNIT_PLACEHOLDER},
            )
        return self

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


class FlowConfig(BaseModel):
    """The whole operator configuration.

    Attributes:
        workspace_dir: absolute path of an existing directory, written as a root key before any
            table (``docs/architecture.md``, "Config").
        backend: ``"ollama"`` (default) or ``"openai"``.
        ollama / openai / models / agent / runs / sandbox: the tables of the same names
            (``runs``: ``flow_core.config.RunsConfig``, the run store and isolation;
            ``sandbox``: ``flow_core.config._sandbox.SandboxConfig``, the check jail).
        checks: named checks, ``[checks.NAME]``; names are letters, digits, ``_ . -``.
        protected: workspace-relative paths the file tools may read but never write: always
            ``DEFAULT_PROTECTED`` (files that launch MCP servers or agent hooks), the checks'
            executables that lie inside the workspace, and the operator config files that lie
            inside the workspace (added by ``load_config``).

    Raises:
        pydantic.ValidationError: when built directly with bad values (``load_config`` turns
            these into ``ConfigError``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    workspace_dir: Path
    backend: Literal["ollama", "openai"] = "ollama"
    ollama: OllamaConfig = Field(default_factory=OllamaConfig)
    openai: OpenAIConfig = Field(default_factory=OpenAIConfig)
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    runs: RunsConfig = Field(default_factory=RunsConfig)
    checks: dict[str, CheckConfig] = Field(default_factory=dict)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
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

    def model_post_init(self, context: Any, /) -> None:
        """Pin every check's executable once validation has passed (``resolve_checks``).

        This is the explicit loading step after validation: the field validators above only
        look at values, the executable lookup (``PATH``, the workspace) happens here. The
        ``PATH`` comes from the validation context (``{"PATH": ...}``) or the environment;
        the config files loaded (``{"config_files": [...]}``) join the protected list
        (``flow_core.config._protected.protected_paths``, the one place it is computed).
        """
        ctx = context if isinstance(context, Mapping) else {}
        checks, check_paths = resolve_checks(
            self.checks, self.workspace_dir, ctx.get("PATH", os.environ.get("PATH"))
        )
        protected = protected_paths(
            self.workspace_dir,
            given=self.protected,
            check_paths=check_paths,
            config_files=ctx.get("config_files", ()),
        )
        # Frozen model: set the computed fields once, right after validation.
        object.__setattr__(self, "checks", checks)
        object.__setattr__(self, "protected", protected)

    def options_for(self, role: str) -> dict[str, Any]:
        """The model options a role's requests carry: the selected backend's
        ``[BACKEND.options]`` with ``[models.options.ROLE]`` over them, key by key, and a
        finite ``max_reply_tokens`` (``flow_core.config._options``)."""
        base = self.ollama.options if self.backend == "ollama" else self.openai.options
        return merged_options(base, getattr(self.models.options, role, None))

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
