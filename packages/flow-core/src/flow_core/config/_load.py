"""Loading the operator config: TOML files, merging, overrides, then validation.

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
(TOML syntax, not UTF-8), ``config_not_found`` (explicit file missing or unreadable),
``config_unsafe`` (the explicit file lies inside the workspace or others can write it; see
``config/_guard.py``).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from flow_core._errors import ConfigError
from flow_core._roles import ROLES
from flow_core.config._guard import check_config_location
from flow_core.config._messages import translate, type_name
from flow_core.config._schema import FlowConfig, LoadedConfig

__all__ = ["MAX_CONFIG_BYTES", "load_config", "user_config_path"]

#: Largest operator config file read, in bytes.
MAX_CONFIG_BYTES = 1_000_000

_TABLES = ("ollama", "openai", "models", "agent", "checks", "runs", "sandbox")
#: Root keys: TOML puts a key written after a [table] header into that table.
_ROOT_KEYS = ("workspace_dir", "backend")


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
                f"{path}: {table}: expected a table, got {type_name(value)}; "
                f"fix: write it as a [{table}] table",
            )
        subtables = value.items() if table == "checks" else [("", value)]
        for sub, body in subtables:
            where = f"{table}.{sub}" if sub else table
            if not isinstance(body, dict):
                raise ConfigError(
                    f"{path}: {where}: expected a table, got {type_name(body)}; "
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


def _apply_overrides(
    merged: dict[str, Any],
    origin: dict[str, str],
    *,
    workspace: str | Path | None,
    model: str | None,
) -> None:
    """Apply ``--workspace`` and ``--model`` on top of the merged files (they win).

    Raises:
        ConfigError: ``--model`` is empty.
    """
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


def _config_files(config_file: str | Path | None, env: Mapping[str, str]) -> list[Path]:
    """The files to read, in order: the user file when it exists, then ``config_file``.

    Raises:
        ConfigError: ``config_not_found`` for a user path that is not a file, or an explicit
            file that is missing or not a file.
    """
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
    return files


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
            or an empty argument, and a bad check name; code ``config_unsafe`` for a
            ``config_file`` inside the workspace or writable by others.
    """
    env = os.environ if environ is None else environ
    files = _config_files(config_file, env)

    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for path in files:
        data = _read_toml(path)
        _structure_problems(data, path)
        _merge(merged, origin, data, str(path))

    _apply_overrides(merged, origin, workspace=workspace, model=model)

    sources = [str(p) for p in files]
    try:
        cfg = FlowConfig.model_validate(
            merged, context={"PATH": env.get("PATH"), "config_files": sources}
        )
    except ValidationError as err:
        raise translate(
            err,
            origin,
            sources[-1] if sources else None,
            None if workspace is None else os.fspath(workspace),
        ) from err
    if config_file is not None:
        # The operator file chooses the commands Flow runs: never one the model or another
        # user can write (config/_guard.py).
        check_config_location(config_file, cfg.workspace_dir)
    return LoadedConfig(config=cfg, sources=sources)
