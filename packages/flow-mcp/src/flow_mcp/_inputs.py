"""The tools' arguments as pydantic models: one source for ``inputSchema`` and for validation.

Each tool's ``inputSchema`` (MCP 2025-11-25, "Server Features > Tools > Tool") is the JSON
Schema pydantic generates from its model, and a ``tools/call`` is validated by that same
model, strictly (no coercion: ``"5"`` is not a number, ``5`` is not a string) and with extra
keys forbidden, so what the schema promises and what the server accepts cannot drift apart.

A problem becomes one sentence (see :func:`validate_arguments`) that the calling model can act
on; the tools layer returns it as an ``isError`` result with code ``invalid_arguments``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.config import JsonDict
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import ErrorDetails, PydanticCustomError

__all__ = [
    "ARGUMENT_MODELS",
    "CheckArguments",
    "RunArguments",
    "StatusArguments",
    "input_schema",
    "validate_arguments",
]


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _optional_in_schema(schema: JsonDict) -> None:
    # An argument that may be left out, but never sent as null: no "default": null shown.
    schema.pop("default", None)


class StatusArguments(_Arguments):
    """``flow_status`` takes no arguments."""


class CheckArguments(_Arguments):
    """``flow_check``: the one check to run; left out, every configured check runs."""

    name: Annotated[str, Field(min_length=1)] | SkipJsonSchema[None] = Field(
        default=None,
        description="one configured check name; omit to run every check",
        json_schema_extra=_optional_in_schema,
    )

    @field_validator("name", mode="before")
    @classmethod
    def _sent_means_a_string(cls, value: object) -> object:
        if value is None:
            raise PydanticCustomError("string_type", "Input should be a valid string")
        return value


class RunArguments(_Arguments):
    """``flow_run``: the task, in plain language."""

    task: str = Field(min_length=1, description="what to change, in plain language")


#: The arguments model of each tool, in ``tools/list`` order.
ARGUMENT_MODELS: Final[dict[str, type[_Arguments]]] = {
    "flow_status": StatusArguments,
    "flow_check": CheckArguments,
    "flow_run": RunArguments,
}

_SCHEMAS: dict[str, dict[str, Any]] = {}


def input_schema(tool: str) -> dict[str, Any]:
    """The ``inputSchema`` of ``tool``: its model's JSON Schema (a fresh copy).

    Raises:
        KeyError: no tool has that name.
    """
    schema = _SCHEMAS.get(tool)
    if schema is None:
        schema = _SCHEMAS[tool] = ARGUMENT_MODELS[tool].model_json_schema()
    return copy.deepcopy(schema)


def validate_arguments(tool: str, arguments: Mapping[str, Any]) -> str | None:
    """Validate ``arguments`` with the tool's model.

    Args:
        tool: a tool name (a key of :data:`ARGUMENT_MODELS`).
        arguments: the ``arguments`` object of a ``tools/call``.

    Returns:
        None when valid, else one sentence naming the first problem: an unexpected argument
        (with the allowed names), then a missing one, then a wrong type or an empty string.

    Raises:
        KeyError: no tool has that name.
    """
    model = ARGUMENT_MODELS[tool]
    try:
        model.model_validate(dict(arguments))
    except ValidationError as err:
        return _sentence(tool, model, arguments, err.errors())
    return None


_ORDER: Final = {"extra_forbidden": 0, "missing": 1}


def _sentence(
    tool: str, model: type[_Arguments], arguments: Mapping[str, Any], errors: list[ErrorDetails]
) -> str:
    first = min(errors, key=lambda e: _ORDER.get(e["type"], 2))
    key = str(first["loc"][0]) if first["loc"] else "arguments"
    kind = first["type"]
    if kind == "extra_forbidden":
        allowed = ", ".join(sorted(model.model_fields)) or "none"
        return f"unexpected argument {key!r} for {tool} (allowed: {allowed})"
    if kind == "missing":
        return f"missing required argument {key!r} for {tool}"
    if kind == "string_type":
        value = arguments.get(key)
        return f"argument {key!r} of {tool} must be a string, not {type(value).__name__}"
    if kind == "string_too_short":
        return f"argument {key!r} of {tool} must not be empty"
    return f"argument {key!r} of {tool}: {first['msg']}"
