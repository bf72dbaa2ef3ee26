"""The what-runs rule (tools/_policy.py): writes that change which code runs are refused at
the tool, each refusal naming its rule (docs/architecture.md, "Writes that change what runs")."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_core.tools import ToolBox, ToolHost, ToolLedger
from flow_core.tools._modules import installed_top_level
from flow_core.tools._policy import WHAT_RUNS_RULES, declared_encoding, module_name
from flow_safeio import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "util.py").write_text("X = 1\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text("from calc import add\n")
    with Workspace(root) as w:
        yield w


def write(ws: Workspace, path: str, content: str = "X = 1\n", **kw: Any) -> tuple[bool, str]:
    host = ToolHost(**kw)
    box = ToolBox(role="coder", workspace=ws, trusted=True, ledger=ToolLedger(limit=50), host=host)
    out = box.call("write_file", {"path": path, "content": content})
    return out.ok, out.content


def rule_of(content: str) -> str | None:
    for rule in WHAT_RUNS_RULES:
        if f"rule {rule!r}" in content:
            return rule
    return None


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("json.py", "shadow_stdlib"),
        ("tests/os.py", "shadow_stdlib"),
        ("unittest/__init__.py", "shadow_stdlib"),
        ("src/typing.py", "shadow_stdlib"),
        ("pytest.py", "shadow_installed"),
        ("_pytest/__init__.py", "shadow_installed"),
        ("calc/__init__.py", "shadow_workspace"),  # a package folder beside calc.py
        ("lib/calc.py", "shadow_workspace"),
        ("other/test_calc.py", "shadow_workspace"),
        ("pkg.py", "shadow_workspace"),
        ("lib/evil.pth", "python_startup"),
        ("sitecustomize.py", "python_startup"),
        ("deep/usercustomize.py", "python_startup"),
    ],
)
def test_new_modules_that_shadow_are_refused_naming_the_rule(
    ws: Workspace, path: str, rule: str
) -> None:
    ok, content = write(ws, path)
    assert not ok
    assert content.startswith("error (changes_what_runs)"), content
    assert rule_of(content) == rule
    assert not Path(ws.root, path).exists()


@pytest.mark.parametrize(
    "path",
    ["pkg/json.py", "pkg/typing.py", "calc.py", "tests/test_new.py", "newmod.py", "notes.txt"],
)
def test_ordinary_writes_pass(ws: Workspace, path: str) -> None:
    # A module inside a package is pkg.json, not json; an existing file is no new module.
    ok, content = write(ws, path)
    assert ok, content


@pytest.mark.parametrize(
    "head",
    [
        "# -*- coding: utf_7 -*-\n",
        "#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\n",
        "# coding=rot13\n",
        "\n# coding: unicode_escape\n",
        "# coding: no-such-codec\n",
    ],
)
def test_encoding_declarations_other_than_utf8_are_refused(ws: Workspace, head: str) -> None:
    ok, content = write(ws, "calc.py", head + "def add(a, b):\n    return a + b\n")
    assert not ok
    assert rule_of(content) == "encoding_declaration"
    assert "return a - b" in Path(ws.root, "calc.py").read_text()


@pytest.mark.parametrize(
    "head",
    [
        "# -*- coding: utf-8 -*-\n",
        "# coding=UTF8\n",
        "import os\n# coding: latin-1\n",  # line 2 counts only after a comment or blank line
        "x = 1\n\n# coding: latin-1\n",
    ],
)
def test_utf8_or_ineffective_declarations_pass(ws: Workspace, head: str) -> None:
    ok, content = write(ws, "calc.py", head + "def add(a, b):\n    return a + b\n")
    assert ok, content


def test_edit_cannot_add_a_declaration_either(ws: Workspace) -> None:
    box = ToolBox(role="coder", workspace=ws, trusted=True, ledger=ToolLedger(limit=5))
    out = box.call(
        "edit_file",
        {"path": "calc.py", "old_text": "def add", "new_text": "# coding: utf-7\ndef add"},
    )
    assert (out.ok, out.error) == (False, "changes_what_runs")


def test_helpers() -> None:
    assert declared_encoding("# -*- coding: latin-1 -*-\n") == "latin-1"
    assert declared_encoding("x = 1\n# coding: latin-1\n") is None
    assert module_name("a/b/json.py") == "json"
    assert module_name("a/b/__init__.py") == "b"
    assert module_name("a/b/readme.md") is None
    assert module_name("a/not-an-identifier.py") is None
    names = installed_top_level((sys.executable,))
    assert "pytest" in names
    assert "flow_core" in names


@pytest.mark.parametrize(
    ("path", "ignore"),
    [
        ("_build/x.py", ""),
        ("pkg/site-packages/x.py", ""),
        ("a/__pypackages__/x.py", ""),
        ("foo.egg/x.py", ""),
        ("scratch/x.py", "scratch/\n"),
        ("deep/scratch/x.py", "scratch/\n"),
        ("gen_x.py", "gen_*.py\n"),
        ("src/local.py", "/src/local.py\n"),
    ],
)
def test_locations_linters_skip_are_refused(ws: Workspace, path: str, ignore: str) -> None:
    if ignore:
        Path(ws.root, ".gitignore").write_text("# comment\n" + ignore)
    ok, content = write(ws, path)
    assert not ok
    assert rule_of(content) == "lint_excluded"


def test_an_ignore_file_with_re_included_paths_is_not_judged(ws: Workspace) -> None:
    Path(ws.root, ".gitignore").write_text("*\n!*.py\n")
    assert write(ws, "newfile.py")[0]


# -- variants nobody named (each closed at the rule, not by a list entry) -------------------------


@pytest.mark.parametrize(
    "path", ["lib/sitecustomize/__init__.py", "usercustomize.pyc", "deep/sitecustomize.pyc"]
)
def test_startup_modules_in_any_form_are_refused(ws: Workspace, path: str) -> None:
    # site imports sitecustomize/usercustomize as modules: a package or bytecode works too.
    ok, content = write(ws, path)
    assert not ok
    assert rule_of(content) == "python_startup"


@pytest.mark.parametrize("path", ["docs/notes.md", "data.json", "CHANGES.rst"])
def test_a_heading_that_reads_like_a_declaration_outside_python_passes(
    ws: Workspace, path: str
) -> None:
    ok, content = write(ws, path, "# Decoding: how the parser reads input\n")
    assert ok, content


@pytest.mark.parametrize("path", ["bin/tool", "tool.pyw", "stubs/calc.pyi", "run.sh"])
def test_declarations_in_what_python_may_run_are_refused(ws: Workspace, path: str) -> None:
    # A script without a suffix, .pyw and .pyi are Python; run.sh is, by its #! line.
    text = "#!/usr/bin/env python3\n# -*- coding: utf-7 -*-\nX = 1\n"
    ok, content = write(ws, path, text)
    assert not ok
    assert rule_of(content) == "encoding_declaration"


@pytest.mark.parametrize(
    ("path", "ignore"),
    [("scratch/x.py", "**/scratch/\n"), ("a/b/scratch/x.py", "**/scratch\n")],
)
def test_any_folder_patterns_are_read_as_git_reads_them(
    ws: Workspace, path: str, ignore: str
) -> None:
    Path(ws.root, ".gitignore").write_text(ignore)
    ok, content = write(ws, path)
    assert not ok
    assert rule_of(content) == "lint_excluded"


def test_the_repository_exclude_file_counts_and_a_link_there_is_not_followed(
    ws: Workspace, tmp_path: Path
) -> None:
    info = Path(ws.root, ".git", "info")
    info.mkdir(parents=True)
    (info / "exclude").write_text("private/\n")
    ok, content = write(ws, "private/mod.py")
    assert not ok
    assert rule_of(content) == "lint_excluded"
    (info / "exclude").unlink()
    (tmp_path / "elsewhere").write_text("other/\n")
    (info / "exclude").symlink_to(tmp_path / "elsewhere")
    assert write(ws, "other/mod.py")[0]


def test_installed_names_include_what_no_listing_shows(tmp_path: Path) -> None:
    from flow_core.tools._modules import _listed_modules

    site = tmp_path / "site-packages"
    (site / "dist_x-1.0.dist-info").mkdir(parents=True)
    (site / "dist_x-1.0.dist-info" / "top_level.txt").write_text("declared_mod\n")
    (site / "__editable___dist_y_1_0_finder.py").write_text(
        "import sys\nMAPPING: dict[str, str] = {'mapped_mod': '/elsewhere/mapped_mod'}\n"
    )
    names = _listed_modules(str(site), site_dir=True, pth={})
    assert {"declared_mod", "mapped_mod"} <= names
