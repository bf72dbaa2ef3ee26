"""Bundled prompts for the three roles, read as package resources.

Source: the seed's "Trust and security": prompts are installed inside the package and never read
from a project's own ``skills/`` directory.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["list_skills", "load_skill"]


def list_skills() -> list[str]:
    """Names of the bundled skills (file stems, sorted): ``["coder", "planner", "reviewer"]``."""
    root = resources.files(__name__)
    return sorted(
        entry.name[: -len(".md")]
        for entry in root.iterdir()
        if entry.is_file() and entry.name.endswith(".md")
    )


@cache
def load_skill(name: str) -> str:
    """The text of one bundled skill.

    Args:
        name: a name from :func:`list_skills` (no path, no extension).

    Raises:
        KeyError: no bundled skill has that name.
    """
    if name not in list_skills():
        raise KeyError(f"no bundled skill named {name!r}; bundled: {', '.join(list_skills())}")
    return resources.files(__name__).joinpath(name + ".md").read_text(encoding="utf-8")
