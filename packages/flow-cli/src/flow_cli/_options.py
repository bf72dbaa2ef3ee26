"""The common flags (``--workspace``, ``--config``, ``--trusted``, ``--model``).

They are defined on the ``flow`` group and again on every subcommand, so they work before or
after the subcommand name. Values are merged: a value given after the subcommand wins over
one given before it; ``--trusted`` is on when it appears in either place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

#: Options that take a value (used to find the subcommand name in a raw argv).
VALUE_OPTIONS = frozenset({"--workspace", "--config", "--model", "--nvim", "--editor-timeout"})


@dataclass(frozen=True)
class CommonOptions:
    """The merged common flags.

    Attributes:
        workspace: absolute workspace directory, or None to keep the configured one.
        config: absolute path of an explicit operator config file, or None.
        trusted: allow edits and the configured named checks.
        model: a model name that overrides every role, or None.
    """

    workspace: str | None = None
    config: str | None = None
    trusted: bool = False
    model: str | None = None

    def merged(self, later: CommonOptions) -> CommonOptions:
        """Return these options overridden by ``later`` (the values given after them)."""
        return replace(
            self,
            workspace=later.workspace if later.workspace is not None else self.workspace,
            config=later.config if later.config is not None else self.config,
            trusted=self.trusted or later.trusted,
            model=later.model if later.model is not None else self.model,
        )


def common_options(func: F) -> F:
    """Decorate a click command with the four common flags."""
    decorators = [
        click.option(
            "--workspace",
            type=click.Path(exists=True, file_okay=False, resolve_path=True),
            default=None,
            metavar="DIR",
            help="Project directory; overrides workspace_dir before anything is built.",
        ),
        click.option(
            "--config",
            "config_file",
            type=click.Path(exists=True, dir_okay=False, resolve_path=True),
            default=None,
            metavar="FILE",
            help="Operator config (TOML) to load after the user config; approves it.",
        ),
        click.option(
            "--trusted",
            is_flag=True,
            default=False,
            help="Allow project edits and the configured named checks.",
        ),
        click.option(
            "--model",
            default=None,
            metavar="NAME",
            help="Model for every role (planner, coder, reviewer).",
        ),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def collect(ctx: click.Context, **values: Any) -> CommonOptions:
    """Merge the group's common flags (in ``ctx.obj``) with a subcommand's own.

    Args:
        ctx: the subcommand's context (its parent holds the group's values).
        values: ``workspace``, ``config_file``, ``trusted`` and ``model`` as click parsed them.
    """
    own = CommonOptions(
        workspace=values.get("workspace"),
        config=values.get("config_file"),
        trusted=bool(values.get("trusted")),
        model=values.get("model"),
    )
    parent = ctx.find_object(CommonOptions)
    return parent.merged(own) if parent is not None else own


def subcommand_in(argv: list[str], names: frozenset[str]) -> str | None:
    """Find which of ``names`` is the subcommand in a raw argv, skipping option values."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--":
            return None
        if arg.startswith("-"):
            skip = arg in VALUE_OPTIONS
            continue
        return arg if arg in names else None
    return None
