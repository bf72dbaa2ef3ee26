"""The test harness of a pytest check: which of the model's changes the evidence run leaves out.

Source: ``docs/architecture.md``, section "The evidence run". The files that decide *which*
tests run and *how* are the harness. pytest finds them by its own discovery rules (the rootdir
and configuration-file search, conftest and package collection, plugin loading), so the
harness of a workspace is:

* the test files: those the baseline's results name, and any file pytest's default
  ``python_files`` patterns match (``test_*.py``, ``*_test.py``);
* every ``conftest.py``, in any folder (pytest loads one from each folder it collects);
* every file pytest reads configuration from (``pytest.ini``, ``.pytest.ini``,
  ``pytest.toml``, ``.pytest.toml``; ``pyproject.toml``, ``tox.ini`` and ``setup.cfg`` when
  their pytest section differs between the baseline and now);
* ``__init__.py`` in every folder on the way to a baseline test file (it decides the test
  modules' package names and runs at their import);
* the workspace modules named as plugins: ``-p NAME`` (dotted ``-p pkg.mod`` too) in the argv
  or in a configuration file's ``addopts``, and ``pytest_plugins`` lists.

In the evidence run every harness path holds its *baseline* bytes (absent when it had none):
a new test file is not in the tree at all, so no new module joins the test process and only
the baseline's tests are collected. A harness file the model changed or added is reported
(``Report.tests_changed``) and decides nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from flow_core.verify._junit import JUnitResults

__all__ = [
    "PYTEST_CONFIG_NAMES",
    "HarnessSplit",
    "baseline_test_files",
    "is_test_file",
    "plugin_modules",
    "split_changes",
]

#: Files pytest reads configuration from only (any change to one is a harness change).
PYTEST_CONFIG_NAMES: tuple[str, ...] = ("pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml")
#: Files that hold pytest configuration in one section among others.
_SHARED_CONFIG = {
    "pyproject.toml": re.compile(r"^\s*\[\s*tool\.pytest\b"),
    "tox.ini": re.compile(r"^\s*\[\s*pytest\s*\]"),
    "setup.cfg": re.compile(r"^\s*\[\s*tool:pytest\s*\]"),
}
_HEADER = re.compile(r"^\s*\[")
_PLUGIN = re.compile(r"(?:^|[\s\"'\[,=])-p\s*[\"']?([A-Za-z_][\w.]*)")
_PLUGINS_LIST = re.compile(r"pytest_plugins\s*=\s*[\[(]?([^\n\])]*)")

Reader = Callable[[str], bytes | None]


def is_test_file(path: str) -> bool:
    """Whether pytest's default ``python_files`` (``test_*.py``, ``*_test.py``) match ``path``."""
    name = PurePosixPath(path).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def baseline_test_files(results: JUnitResults | None, files: Collection[str]) -> set[str]:
    """The test files the baseline's JUnit ids name, found among ``files`` (its paths).

    pytest writes ``classname`` as the node id's path without ``.py``, ``/`` turned into dots,
    then the classes; the longest dotted prefix that names a ``.py`` file gives the path.
    """
    if results is None:
        return set()
    by_module: dict[str, str] = {}
    for path in files:
        if path.endswith(".py"):
            by_module.setdefault(path[:-3].replace("/", "."), path)
    out: set[str] = set()
    for test_id in results.outcomes:
        classname = test_id.rpartition("::")[0]
        parts = classname.split(".") if classname else []
        for cut in range(len(parts), 0, -1):
            found = by_module.get(".".join(parts[:cut]))
            if found is not None:
                out.add(found)
                break
    return out


def plugin_modules(argv: Sequence[str], texts: Iterable[str]) -> set[str]:
    """Workspace paths a plugin named in ``argv`` or in configuration ``texts`` would load."""
    names: set[str] = set()
    for i, arg in enumerate(argv):
        if arg == "-p" and i + 1 < len(argv):
            names.add(argv[i + 1])
        elif arg.startswith("-p") and len(arg) > 2:
            names.add(arg[2:])
    for text in texts:
        names.update(_PLUGIN.findall(text))
        for listed in _PLUGINS_LIST.findall(text):
            names.update(re.findall(r"[A-Za-z_][\w.]*", listed))
    paths: set[str] = set()
    for name in names:
        if not name.startswith("no:"):
            base = name.replace(".", "/")
            paths.update({f"{base}.py", f"{base}/__init__.py"})
    return paths


def _pytest_section(name: str, data: bytes | None) -> str:
    """The pytest section of a shared configuration file (empty when it has none)."""
    start = _SHARED_CONFIG[name]
    lines: list[str] = []
    inside = False
    for line in (data or b"").decode("utf-8", "replace").splitlines():
        if _HEADER.match(line):
            inside = bool(start.match(line))
        if inside:
            lines.append(line)
    return "\n".join(lines)


@dataclass
class HarnessSplit:
    """The model's changes split for one pytest check's evidence run (:func:`split_changes`).

    Attributes:
        overlay: path -> bytes written over the baseline tree (None: the path is absent).
        changed: harness paths the model changed or added (``Report.tests_changed``).
    """

    overlay: dict[str, bytes | None] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)


def split_changes(
    changes: Mapping[str, bytes | None],
    baseline: Reader,
    *,
    tests: Collection[str],
    argv: Sequence[str],
) -> HarnessSplit:
    """Which of the model's ``changes`` the evidence run of a pytest check keeps.

    Args:
        changes: every path Flow's tools wrote -> its bytes now (None: removed).
        baseline: a path's bytes at baseline (None: it had none).
        tests: the baseline's test files (:func:`baseline_test_files`).
        argv: the check's argv (for ``-p`` plugins).

    Returns:
        A :class:`HarnessSplit`: harness paths keep their baseline bytes, the rest the
        model's (module docstring).
    """
    folders = {""}
    for path in tests:
        parts = PurePosixPath(path).parts[:-1]
        folders.update("/".join(parts[:n]) for n in range(1, len(parts) + 1))
    on_the_way = {f"{d}/__init__.py" if d else "__init__.py" for d in folders}
    texts = [
        (baseline(path) or b"").decode("utf-8", "replace")
        for d in folders
        for name in (*PYTEST_CONFIG_NAMES, *_SHARED_CONFIG)
        for path in [f"{d}/{name}" if d else name]
    ]
    plugins = plugin_modules(argv, texts)
    split = HarnessSplit()
    for path, now in changes.items():
        name = PurePosixPath(path).name
        before = baseline(path)
        if name in _SHARED_CONFIG:
            harness = _pytest_section(name, before) != _pytest_section(name, now)
        else:
            harness = (
                name == "conftest.py"
                or name in PYTEST_CONFIG_NAMES
                or is_test_file(path)
                or path in tests
                or path in on_the_way
                or path in plugins
            )
        if not harness:
            split.overlay[path] = now
            continue
        split.overlay[path] = before
        if before != now:
            split.changed.add(path)
    return split
