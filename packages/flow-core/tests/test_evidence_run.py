"""The evidence run's parts: the tree a deciding check runs in (verify/_tree.TreeSpec,
build_unjailed) and the harness kept at its baseline bytes (verify/_harness.py). The whole
path, through ``flow run``, is flow-cli's test_forgery.py."""

from __future__ import annotations

import os
from pathlib import Path

from flow_core.verify._harness import (
    baseline_test_files,
    changed_tests,
    is_test_file,
    judge_fail_to_pass,
    plugin_modules,
    split_changes,
)
from flow_core.verify._junit import JUnitResults
from flow_core.verify._tree import TreeSpec, build_unjailed, plan_workspace


def test_the_tree_is_the_baseline_plus_the_overlay_and_nothing_else(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "pkg" / "__pycache__").mkdir(parents=True)
    (ws / "pkg" / "mod.py").write_text("X = 1\n")
    (ws / ".venv" / "bin").mkdir(parents=True)
    (ws / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    plan = plan_workspace(ws)  # the baseline, before any check
    # What a check, the model or another program leaves later: a forged cache, a new file.
    (ws / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"forged")
    (ws / "notes.txt").write_text("written by a check\n")
    overlay = {
        "pkg/mod.py": b"X = 2\n",
        "new.py": b"Y = 1\n",
        "pkg/__pycache__/evil.pyc": b"never copied",
        ".venv/lib/site.pth": b"never copied",
    }
    tree = build_unjailed(ws, TreeSpec(plan, overlay))
    try:
        root = Path(tree.root)
        assert (root / "pkg" / "mod.py").read_text() == "X = 2\n"
        assert (root / "new.py").read_text() == "Y = 1\n"
        assert not (root / "pkg" / "__pycache__").exists()
        assert not (root / "notes.txt").exists()
        assert os.readlink(root / ".venv") == str(ws.resolve() / ".venv")
        assert not (ws / ".venv" / "lib").exists()
    finally:
        tree.close()
    assert not Path(tree.root).exists()
    # A path the overlay leaves out (None) is not in the tree.
    gone = build_unjailed(ws, TreeSpec(plan, {"pkg/mod.py": None}))
    try:
        assert not (Path(gone.root) / "pkg" / "mod.py").exists()
    finally:
        gone.close()


def test_baseline_test_files_come_from_junit_ids() -> None:
    results = JUnitResults(
        {
            "tests.test_calc::test_add": "passed",
            "tests.test_calc.TestSum::test_big[1-2]": "failed",
            "check_top::test_x": "passed",
            "nowhere::test_y": "passed",
        }
    )
    files = {"tests/test_calc.py", "tests/__init__.py", "check_top.py", "calc.py"}
    assert baseline_test_files(results, files) == {"tests/test_calc.py", "check_top.py"}
    assert baseline_test_files(None, files) == set()


PYTEST_SECTION = b'[tool.pytest.ini_options]\naddopts = "-p plug"\n'


def _reader(files: dict[str, bytes]):  # type: ignore[no-untyped-def]
    return files.get


def test_the_harness_keeps_its_baseline_bytes_and_the_rest_is_the_models() -> None:
    base = {
        "calc.py": b"def add(a, b):\n    return a - b\n",
        "tests/unit/check_calc.py": b"def test_add(): ...\n",
        "tests/__init__.py": b"",
        "pyproject.toml": b'[project]\nname = "x"\n' + PYTEST_SECTION,
        "setup.cfg": b"[metadata]\nname = x\n",
    }
    changes = {
        "calc.py": b"def add(a, b):\n    return a + b\n",  # the fix
        "tests/unit/check_calc.py": b"def test_add(): pass\n",  # a baseline test, edited
        "tests/unit/test_new.py": b"import os; os._exit(0)\n",  # a new test file
        "tests/__init__.py": b"import calc; calc.add = lambda a, b: a + b\n",  # on the way
        "sub/conftest.py": b"import os\n",  # any conftest
        "sub/pytest.ini": b"[pytest]\n",  # any pytest configuration
        "plug.py": b"def pytest_configure(config): ...\n",  # a plugin named in addopts
        "myplug/__init__.py": b"",  # a plugin named in the argv
        "setup.cfg": b"[metadata]\nname = y\n",  # no pytest section: the model's
        "pyproject.toml": b'[project]\nname = "y"\n' + PYTEST_SECTION,
    }
    split = split_changes(
        changes,
        _reader(base),
        tests={"tests/unit/check_calc.py"},
        argv=["python", "-m", "pytest", "-p", "myplug"],
    )
    assert split.changed == {
        "tests/unit/check_calc.py",
        "tests/unit/test_new.py",
        "tests/__init__.py",
        "sub/conftest.py",
        "sub/pytest.ini",
        "plug.py",
        "myplug/__init__.py",
    }
    for path in split.changed:
        assert split.overlay[path] == base.get(path), path
    for path in ("calc.py", "setup.cfg", "pyproject.toml"):  # pytest's section is unchanged
        assert split.overlay[path] == changes[path], path
    edited = {"pyproject.toml": base["pyproject.toml"] + b'python_files = ["*.py"]\n'}
    again = split_changes(edited, _reader(base), tests=set(), argv=["pytest"])
    assert again.changed == {"pyproject.toml"}
    assert again.overlay["pyproject.toml"] == base["pyproject.toml"]
    # The fail-to-pass runs: the changed test files that exist now, and a baseline tree with
    # the harness changes only (the fix at its baseline bytes, a new plugin absent).
    assert changed_tests(split, {"tests/unit/check_calc.py"}) == [
        "tests/unit/check_calc.py",
        "tests/unit/test_new.py",
    ]
    tests_only = split.tests_only()
    assert tests_only["calc.py"] == base["calc.py"]
    assert tests_only["tests/unit/test_new.py"] == changes["tests/unit/test_new.py"]
    assert tests_only["setup.cfg"] == base["setup.cfg"]
    assert split.now == changes


def test_fail_to_pass_counts_only_a_test_that_fails_then_passes() -> None:
    files = ["t/test_a.py", "t/test_b.py", "t/test_gone.py"]
    before = JUnitResults(
        {
            "t.test_a::test_fixed": "failed",
            "t.test_a::test_vacuous": "passed",
            "t.test_a::test_same": "passed",
            "t.test_a::test_skip": "skipped",
            "t.test_a::test_broken": "failed",
            "t.test_b": "error",  # the module failed to import: its tests count as failing
        }
    )
    after = JUnitResults(
        {
            "t.test_a::test_fixed": "passed",
            "t.test_a::test_vacuous": "passed",
            "t.test_a::test_same": "passed",
            "t.test_a::test_skip": "passed",
            "t.test_a::test_broken": "failed",
            "t.test_a::test_late": "passed",  # defined only when the fix is in
            "t.test_b::test_new": "passed",
            "other::test_x": "failed",  # not a changed file's test
        }
    )
    baseline = JUnitResults({"t.test_a::test_same": "passed"})
    verdict = judge_fail_to_pass(files, before, after, baseline)
    assert verdict.counted == ["t.test_a::test_fixed", "t.test_b::test_new"]
    assert verdict.rejected == [
        "t.test_a::test_broken: failed on the changed tree",
        "t.test_a::test_late: not collected on the baseline tree",
        "t.test_a::test_skip: skipped on the baseline tree",
        "t.test_a::test_vacuous: passes on the baseline tree too (vacuous)",
        "t/test_gone.py: no test of it ran on the changed tree",
    ]
    nothing = judge_fail_to_pass(files[:1], None, after, None)
    assert nothing.counted == []
    assert all("baseline tree gave no readable" in r for r in nothing.rejected)
    assert judge_fail_to_pass(files[:1], before, None, None).rejected == [
        "t/test_a.py: the changed tree gave no readable test results"
    ]


def test_plugin_modules_and_test_file_names() -> None:
    texts = ["pytest_plugins = ['a.b', \"c\"]", 'addopts = "-p tools.plug"']
    assert plugin_modules(["-p", "no:cacheprovider", "-pd"], texts) == {
        "a/b.py",
        "a/b/__init__.py",
        "c.py",
        "c/__init__.py",
        "tools/plug.py",
        "tools/plug/__init__.py",
        "d.py",
        "d/__init__.py",
    }
    assert is_test_file("x/test_a.py")
    assert is_test_file("a_test.py")
    assert not is_test_file("testing.py")
