"""The README's custom-agent example is real code: extract it and run it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def example() -> str:
    section = README.read_text("utf-8").split("## A custom agent", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "no python block in the custom-agent section"
    return match.group(1)


def test_example_is_short() -> None:
    assert len(example().splitlines()) < 15  # blank lines included


def test_example_runs_and_verifies(capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(example(), str(README), "exec"), namespace)
    report = namespace["report"]
    assert getattr(report, "verified", None) is True
    assert capsys.readouterr().out.startswith("verified ['app.py']")
