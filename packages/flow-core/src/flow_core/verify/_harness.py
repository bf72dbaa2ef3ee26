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
    "FailToPass",
    "HarnessSplit",
    "baseline_test_files",
    "changed_tests",
    "is_harness_name",
    "is_test_file",
    "judge_fail_to_pass",
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


def is_harness_name(path: str) -> bool:
    """Whether ``path`` is harness by its name alone, whatever the workspace holds: a test
    file (``is_test_file``), a ``conftest.py`` or a pytest-only configuration file."""
    name = PurePosixPath(path).name
    return name == "conftest.py" or name in PYTEST_CONFIG_NAMES or is_test_file(path)


def baseline_test_files(results: JUnitResults | None, files: Collection[str]) -> set[str]:
    """The test files the baseline's JUnit ids name, found among ``files`` (its paths).

    pytest writes ``classname`` as the node id's path without ``.py``, ``/`` turned into dots,
    then the classes; the longest dotted prefix that names a ``.py`` file gives the path.
    """
    if results is None:
        return set()
    by_module = _modules(files)
    return {f for t in results.outcomes if (f := _file_of(t, by_module)) is not None}


def _modules(files: Iterable[str]) -> dict[str, str]:
    """Dotted module name (as JUnit's ``classname`` writes it) -> path, for ``.py`` files."""
    by_module: dict[str, str] = {}
    for path in files:
        if path.endswith(".py"):
            by_module.setdefault(path[:-3].replace("/", "."), path)
    return by_module


def _file_of(test_id: str, by_module: Mapping[str, str]) -> str | None:
    """The file of a JUnit test id: the longest dotted prefix of its classname that names one."""
    classname = test_id.rpartition("::")[0]
    parts = classname.split(".") if classname else []
    for cut in range(len(parts), 0, -1):
        found = by_module.get(".".join(parts[:cut]))
        if found is not None:
            return found
    return None


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
        now: every changed path -> its bytes now (None: removed), harness or not.
        before: the same paths -> their bytes at baseline (None: absent).
    """

    overlay: dict[str, bytes | None] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)
    now: dict[str, bytes | None] = field(default_factory=dict)
    before: dict[str, bytes | None] = field(default_factory=dict)

    def tests_only(self) -> dict[str, bytes | None]:
        """The overlay of the fail-to-pass runs' baseline tree: the harness changes only,
        every other changed path at its baseline bytes."""
        return {p: self.now[p] if p in self.changed else self.before.get(p) for p in self.now}


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
    split = HarnessSplit(now=dict(changes))
    for path, now in changes.items():
        name = PurePosixPath(path).name
        before = split.before[path] = baseline(path)
        if name in _SHARED_CONFIG:
            harness = _pytest_section(name, before) != _pytest_section(name, now)
        else:
            harness = (
                is_harness_name(path) or path in tests or path in on_the_way or path in plugins
            )
        if not harness:
            split.overlay[path] = now
            continue
        split.overlay[path] = before
        if before != now:
            split.changed.add(path)
    return split


def changed_tests(split: HarnessSplit, tests: Collection[str]) -> list[str]:
    """The test files among ``split.changed`` that exist now: those the fail-to-pass runs
    run (a file matching pytest's default ``python_files``, or a baseline test file)."""
    return sorted(
        p for p in split.changed if (is_test_file(p) or p in tests) and split.now.get(p) is not None
    )


@dataclass
class FailToPass:
    """The fail-to-pass judgement of one check's changed and new tests.

    Attributes:
        counted: test ids that did not pass on the baseline tree and passed on the changed
            tree.
        rejected: ``"TEST_ID: why"`` (or ``"PATH: why"`` for a file none of whose tests ran)
            for those that did not count.
    """

    counted: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)


def judge_fail_to_pass(
    files: Sequence[str],
    before: JUnitResults | None,
    after: JUnitResults | None,
    baseline: JUnitResults | None,
) -> FailToPass:
    """Judge the changed and new tests in ``files`` the way SWE-bench judges a test patch.

    Source: ``docs/architecture.md``, "The evidence run". A test counts when it passed on the
    changed tree (the baseline plus every change) and did not pass on the baseline tree (the
    baseline plus only the test and harness changes): it failed or errored there, or its
    module failed to import (pytest's module-level entry, id ``pkg.test_mod``, is an error).
    A test that passed on both is vacuous; one that is skipped, failed or errored on the
    changed tree, or skipped or not collected on the baseline tree, does not count. A test
    the baseline run already saw passing that passes on both trees is an unchanged test of
    an edited file: left out of both lists.

    Args:
        files: the changed and new test files (:func:`changed_tests`).
        before: the results on the baseline tree (None: none were written or readable).
        after: the results on the changed tree (None: likewise).
        baseline: the check's results at the run's baseline, or None.

    Returns:
        A :class:`FailToPass`, each list sorted.
    """
    out = FailToPass()
    if after is None:
        out.rejected = [f"{f}: the changed tree gave no readable test results" for f in files]
        return out
    by_module = _modules(files)
    ids = sorted(t for t in after.outcomes if _file_of(t, by_module) is not None)
    ran = {_file_of(t, by_module) for t in ids}
    out.rejected = [f"{f}: no test of it ran on the changed tree" for f in files if f not in ran]
    for test_id in ids:
        now = after.outcomes[test_id]
        then = None
        if before is not None:
            module = str(_file_of(test_id, by_module))[:-3].replace("/", ".")
            then = before.outcomes.get(test_id, before.outcomes.get(module))
        seen = baseline.outcomes.get(test_id) if baseline is not None else None
        if seen == then == now == "passed":
            continue
        if before is None:
            why = "the baseline tree gave no readable test results"
        elif now != "passed":
            why = f"{now} on the changed tree"
        elif then == "passed":
            why = "passes on the baseline tree too (vacuous)"
        elif then in ("skipped", None):
            why = f"{then or 'not collected'} on the baseline tree"
        else:
            out.counted.append(test_id)
            continue
        out.rejected.append(f"{test_id}: {why}")
    out.rejected.sort()
    return out
