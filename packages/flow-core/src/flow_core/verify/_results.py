"""Which checks give test-result evidence, and how Flow asks for it (``results``).

Source: ``docs/architecture.md``, section "Evidence". ``[checks.NAME] results`` says where a
check's test results come from:

* ``"auto"`` (the default): a pytest argv (``pytest ...``, ``py.test ...``, ``python -m pytest
  ...``, ``uv run pytest ...``) gets Flow's own private results path as ``--junitxml=PATH``
  right after the word ``pytest``, unless the operator put ``{junit_xml}`` in the argv (then
  that is filled, as with ``"junit"``) or passed ``--junitxml``/``--junit-xml`` themselves
  (then Flow cannot know the file is private and takes the exit status);
* ``"junit"``: the operator's ``{junit_xml}`` is filled;
* ``"exit_status"``: the check's pass rests on its exit status.

A check of kind ``"test"`` whose pass rests on its exit status is *weak evidence*: any code
that ends the runner with status 0 passes it. Flow still runs it, and says so in the report
(``Report.weak_evidence``), in ``flow status``, in the CLI's summary and in the MCP result.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

from flow_core.config._schema import JUNIT_PLACEHOLDER

if TYPE_CHECKING:
    from flow_core.config import CheckConfig

__all__ = ["effective_results", "is_weak", "pytest_position", "results_argv"]

_PYTEST_NAMES = frozenset({"pytest", "py.test", "pytest-3"})
_OWN_JUNIT = ("--junitxml", "--junit-xml", "--junit-prefix")


def pytest_position(cmd: tuple[str, ...]) -> int | None:
    """Where pytest's own options start in ``cmd``: the index after the word that runs pytest
    (a program named ``pytest`` or ``py.test``, or ``-m pytest``), or None."""
    for i, arg in enumerate(cmd):
        if arg == "--":
            return None
        if os.path.basename(arg) in _PYTEST_NAMES:
            return i + 1
        if arg == "-mpytest" or (arg == "-m" and i + 1 < len(cmd) and cmd[i + 1] == "pytest"):
            return i + (1 if arg == "-mpytest" else 2)
    return None


def effective_results(check: CheckConfig) -> Literal["junit"] | None:
    """``"junit"`` when Flow will read the check's test results, None when it will not."""
    if check.results == "exit_status":
        return None
    if any(JUNIT_PLACEHOLDER in arg for arg in check.cmd):
        return "junit"
    if check.results != "auto" or pytest_position(check.cmd) is None:
        return None
    if any(arg.startswith(_OWN_JUNIT[:2]) for arg in check.cmd):
        return None
    return "junit"


def results_argv(check: CheckConfig, path: str) -> tuple[str, ...]:
    """The argv that writes the check's JUnit XML to ``path`` (its placeholder filled, or
    ``--junitxml=PATH`` added after the word ``pytest``)."""
    if any(JUNIT_PLACEHOLDER in arg for arg in check.cmd):
        return tuple(arg.replace(JUNIT_PLACEHOLDER, path) for arg in check.cmd)
    at = pytest_position(check.cmd)
    assert at is not None
    return (*check.cmd[:at], f"--junitxml={path}", *check.cmd[at:])


def is_weak(check: CheckConfig) -> bool:
    """Whether a test check's pass would rest on its exit status alone."""
    return check.kind == "test" and effective_results(check) is None
