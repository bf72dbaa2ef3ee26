"""Validation errors in the TOML file's terms: file, dotted key, problem and fix.

pydantic reports locations as tuples and types in Python's words; an operator reads
``checks.tests.cmd[1]: this argument is an empty string; fix: ...`` with the file that set the
key. Every message uses TOML's names (array, table, string, integer, boolean).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from flow_core._errors import ConfigError
from flow_core.config._schema import CheckConfig, FlowConfig

__all__ = ["translate", "type_name"]

#: A base_url example per backend table, for fixes.
_URL_EXAMPLES = {"ollama": "http://127.0.0.1:11434", "openai": "http://127.0.0.1:8080/v1"}


def type_name(value: Any) -> str:
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
    """``(problem, fix)`` for one pydantic error, in the TOML file's terms.

    One flat branch per pydantic error type (read and grepped better than a table of small
    closures); the errors about a key's shape or a check's own rules are in ``_shape``.
    """
    kind: str = e["type"]
    ctx: Mapping[str, Any] = e.get("ctx") or {}
    got = e.get("input")
    last = str(loc[-1]) if loc and not isinstance(loc[-1], int) else ""
    unit = _unit(dotted)
    shape = _shape(e, loc, last)
    if shape is not None:
        return shape
    if kind.endswith(("_type", "_parsing")) or kind == "is_instance_of":
        want = _EXPECTED.get(kind.removesuffix("_type").removesuffix("_parsing"))
        if want is None:
            return str(e["msg"]), "correct the value"
        problem = f"expected {want}, got {type_name(got)}"
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


def _shape(e: Mapping[str, Any], loc: tuple[str | int, ...], last: str) -> tuple[str, str] | None:
    """``(problem, fix)`` for an error about a key's presence, an argv or a URL; else ``None``."""
    kind: str = e["type"]
    ctx: Mapping[str, Any] = e.get("ctx") or {}
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
    if kind == "junit_placeholder_missing":
        return str(e["msg"]), (
            "put it where the tool takes its JUnit XML path, e.g. "
            'cmd = ["python", "-m", "pytest", "-q", "--junitxml={junit_xml}"]'
        )
    if kind == "junit_results_missing":
        return str(e["msg"]), (
            'set results = "junit" (or "auto") for this check, or remove {junit_xml}'
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
    return None


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
            f"{where}: workspace_dir: expected a string, got {type_name(e.get('input'))}; "
            f"fix: {fix}"
        )
    return None


def translate(
    err: ValidationError,
    origin: Mapping[str, str],
    last_source: str | None,
    workspace_arg: str | None = None,
) -> ConfigError:
    """One ``ConfigError`` (``config_invalid``) with a line per validation error.

    Args:
        err: pydantic's error for the merged data.
        origin: dotted key → the file or option that set it.
        last_source: the file named when a key has no recorded origin.
        workspace_arg: ``--workspace`` as the user typed it, for its messages.
    """
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
