"""Each package's test map (``tests/README.md``) kept complete and true.

A package's ``tests/README.md`` is a table from its modules to the test files that cover them,
so a reader finds a module's tests without searching. :func:`map_problems` lists what the map
misses or names wrongly; each package's ``test_public_api.py`` asserts it finds nothing.

A module is named by its path under the import package in backquotes (``run/_loop.py``,
``_codes.py``); a test file or helper module of ``tests/`` by its file name
(``test_run.py``, ``conftest.py``). Imports no Flow package.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["map_problems"]

#: A backquoted name ending in ``.py`` (a module path or a test file name).
_NAMED = re.compile(r"`([\w./]+\.py)`")


def map_problems(tests: Path) -> list[str]:
    """What ``tests/README.md`` of the package owning ``tests`` gets wrong, one line each.

    Args:
        tests: a package's ``tests`` folder (``packages/P/tests``); its sibling ``src`` holds
            one import package.

    Returns:
        ``"unnamed: PATH"`` for each module of ``src`` (relative to the import package) and
        each ``.py`` file directly in ``tests`` that the map does not name in backquotes, and
        ``"no such file: NAME"`` for each backquoted ``.py`` name that is neither (nor a test
        file of a sibling package, which the map may name as "flow-cli's ``test_run.py``"); empty
        when the map is complete and true.

    Raises:
        FileNotFoundError: the README is missing.
    """
    readme = (tests / "README.md").read_text(encoding="utf-8")
    named = set(_NAMED.findall(readme))
    (package,) = [p for p in (tests.parent / "src").iterdir() if (p / "__init__.py").is_file()]
    modules = {p.relative_to(package).as_posix() for p in package.rglob("*.py")}
    test_files = {p.name for p in tests.glob("*.py")}
    problems = [f"unnamed: {name}" for name in sorted((modules | test_files) - named)]
    siblings = {p.name for p in tests.parent.parent.glob("*/tests/*.py")}  # "flow-cli's `x.py`"
    stale = named - modules - test_files - siblings
    problems += [f"no such file: {name}" for name in sorted(stale)]
    return problems
