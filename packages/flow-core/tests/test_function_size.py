"""Source shape: no function in any package's ``src`` is over 80 lines unless it says why.

The rule is ``docs/architecture.md``'s "Code shape" paragraph: functions of about 60 lines,
80 the hard edge. A longer function passes only when its docstring gives the reason in a
sentence with the word "long" in it. Lines are counted with ``ast`` from the ``def`` line to
the function's last line, docstring included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

_PACKAGES = Path(__file__).resolve().parents[2]
_LIMIT = 80
_ALL = ("flow-safeio", "flow-core", "flow-cli", "flow-mcp", "flow-rose")


def _sources() -> list[Path]:
    return sorted(_PACKAGES.glob("*/src/**/*.py"))


def _unexplained(source: str) -> list[str]:
    """``NAME:LINE (N lines)`` for each function over the limit whose docstring says nothing
    about being long."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        lines = (node.end_lineno or node.lineno) - node.lineno + 1
        if lines > _LIMIT and "long" not in (ast.get_docstring(node) or "").lower():
            found.append(f"{node.name}:{node.lineno} ({lines} lines)")
    return found


def test_the_scan_sees_every_package() -> None:
    names = {p.relative_to(_PACKAGES).parts[0] for p in _sources()}
    assert set(_ALL) <= names


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(_PACKAGES)))
def test_no_function_is_over_80_lines_without_a_reason(path: Path) -> None:
    found = _unexplained(path.read_text(encoding="utf-8"))
    assert found == [], f"{path}: split these, or say in the docstring why they are long"


def test_the_scan_finds_a_long_function_and_accepts_a_reason() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(_LIMIT))
    source = (
        f'def plain():\n    """Add."""\n{body}\n'
        f'async def said():\n    """Long on purpose: one table."""\n{body}\n'
        f'def short():\n    """Add."""\n    return 1\n'
    )
    assert _unexplained(source) == [f"plain:1 ({_LIMIT + 2} lines)"]
