"""The bundled system prompts of the three roles (planner, coder, reviewer), as package resources.

The prompts are installed inside the package and read only from there, never from the
workspace: a project cannot rewrite the instructions of the roles that judge its own change
(``docs/architecture.md``, "Trust").
(They are prompts in the usual sense; "skills" now means ``SKILL.md`` agent skills, which Flow
does not load.)
"""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["list_prompts", "load_prompt"]


def list_prompts() -> list[str]:
    """Names of the bundled prompts (file stems, sorted): ``["coder", "planner", "reviewer"]``."""
    root = resources.files(__name__)
    return sorted(
        entry.name[: -len(".md")]
        for entry in root.iterdir()
        if entry.is_file() and entry.name.endswith(".md")
    )


@cache
def load_prompt(name: str, *, tools: bool = True, guided: bool = False) -> str:
    """The text of one bundled prompt (UTF-8 Markdown).

    Args:
        name: a name from :func:`list_prompts` (no path, no extension).
        tools: False for the variant of a role whose model receives no tool definitions
            (``without_tools/NAME.md``; planner and reviewer): it promises no tool
            (``docs/architecture.md``, "A role without tools").
        guided: True for a role whose replies are guided (``run/_guided.py``): its variant
            ``guided/NAME.md`` where there is one (the coder: it says what a reply is and
            that the task's files are shown numbered), else the usual prompt
            (``docs/architecture.md``, "Guided tool calls").

    Raises:
        KeyError: no bundled prompt has that name (or no variant without tools).
    """
    if name not in list_prompts():
        raise KeyError(f"no bundled prompt named {name!r}; bundled: {', '.join(list_prompts())}")
    root = resources.files(__name__)
    entry = root.joinpath(name + ".md") if tools else root / "without_tools" / (name + ".md")
    variant = root / "guided" / (name + ".md")
    if tools and guided and variant.is_file():
        entry = variant
    if not entry.is_file():
        raise KeyError(f"the bundled prompt {name!r} has no variant without tools")
    return entry.read_text(encoding="utf-8")
