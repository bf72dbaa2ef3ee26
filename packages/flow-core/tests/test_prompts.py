"""The bundled role prompts: read from the installed package only."""

from __future__ import annotations

import pytest

import flow_core
from flow_core import ROLES


def test_every_role_has_a_bundled_prompt() -> None:
    assert flow_core.list_prompts() == sorted(ROLES)
    for role in ROLES:
        text = flow_core.load_prompt(role)
        assert text.strip()


@pytest.mark.parametrize("name", ["nope", "../planner", "planner.md", ""])
def test_unknown_names_are_refused(name: str) -> None:
    with pytest.raises(KeyError, match="no bundled prompt"):
        flow_core.load_prompt(name)


def test_the_old_skill_names_are_gone() -> None:
    assert not hasattr(flow_core, "list_skills")
    assert not hasattr(flow_core, "load_skill")
