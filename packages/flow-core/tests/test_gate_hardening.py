"""Gate hardening: tool configuration is vetoed; extension-less files get a namespaced key.

A run that edits the configuration of the tools its checks run (``addopts = --co`` in
``pytest.ini``, ``exclude = ["*"]`` in ``ruff.toml``) can switch those checks off while they
still pass, so such a file is never covered. A file without an extension (``scripts/python``)
must not pass for a language named like it.
"""

from __future__ import annotations

from typing import Any

import pytest

from flow_core import CheckResult, EditorLintResult, GateFacts, Review, evaluate_gate, language_key
from flow_core.verify import TOOL_CONFIG_KEY, is_tool_config, protected_reason


def result(name: str, kind: str = "lint") -> CheckResult:
    return CheckResult(name=name, kind=kind, required=True, argv=["x"], status="passed")  # type: ignore[arg-type]


def facts(changed: list[str], lint_types: list[str] | None = None, **over: Any) -> GateFacts:
    """All-passing facts for ``changed``: only the coverage rules can block verification."""
    hashes = dict.fromkeys(changed, "h")
    base: dict[str, Any] = {
        "within_budgets": True,
        "required_checks": ["tests", "lint"],
        "checks": [result("tests", "test"), result("lint", "lint")],
        "check_filetypes": {"tests": [], "lint": ["python"] if lint_types is None else lint_types},
        "changed_files": changed,
        "review": Review(approved=True, summary="ok"),
        "hashes_before_checks": hashes,
        "hashes_after_review": hashes,
    }
    base.update(over)
    return GateFacts(**base)


def only_static_coverage_failed(v: Any) -> bool:
    failed = {n for n, ok in v.conditions.model_dump().items() if not ok}
    return failed == {"static_coverage"}


TOOL_CONFIG = [
    "pytest.ini",
    "PYTEST.INI",
    "pytest.toml",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "pkg/pyproject.toml",
    "ruff.toml",
    ".ruff.toml",
    "mypy.ini",
    ".mypy.ini",
    ".flake8",
    ".pylintrc",
    "pylintrc",
    ".coveragerc",
    "conftest.py",
    "tests/unit/conftest.py",
    "noxfile.py",
    "sitecustomize.py",
    ".gitignore",
    "package.json",
    "web/package.json",
    "tsconfig.json",
    "tsconfig.build.json",
    ".eslintrc",
    ".eslintrc.json",
    "eslint.config.mjs",
    "jest.config.ts",
    "vitest.config.ts",
    "Cargo.toml",
    "crates/a/Cargo.toml",
    ".cargo/config.toml",
    "go.mod",
    ".golangci.yml",
    "Makefile",
    "GNUmakefile",
    "CMakeLists.txt",
    "cmake/warnings.cmake",
    ".pre-commit-config.yaml",
    ".github/workflows/ci.yml",
    ".github/workflows/nested/lint.yaml",
    "sub/.github/workflows/ci.yml",
]


@pytest.mark.parametrize("path", TOOL_CONFIG)
def test_tool_config_key(path: str) -> None:
    # Files other tools run (sitecustomize.py, CI, hooks) are protected rows of the same table
    # (verify/_toolfiles.py): never written by the tools, and vetoed all the same.
    assert is_tool_config(path) or protected_reason(path)
    assert language_key(path) == TOOL_CONFIG_KEY == "tool-config"


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("docs/pytest.ini.md", "docs"),  # base name differs
        ("my_conftest.py", "python"),
        ("conftest_helpers.py", "python"),
        ("pyproject.toml.orig", ".orig"),
        ("makefile_utils.py", "python"),
        ("workflows/ci.yml", "docs"),  # not under .github/
        (".github/ISSUE_TEMPLATE/bug.yml", "docs"),
        ("docs/guide.md", "docs"),
        ("data/config.toml", "docs"),
        ("cargo/config.toml", "docs"),  # not .cargo/
    ],
)
def test_lookalikes_are_not_tool_config(path: str, key: str) -> None:
    assert not is_tool_config(path)
    assert language_key(path) == key


@pytest.mark.parametrize("config", ["pytest.ini", "conftest.py", "pkg/pyproject.toml", "ruff.toml"])
def test_editing_tool_config_is_never_verified(config: str) -> None:
    v = evaluate_gate(facts(["app.py", config]))
    assert not v.verified
    assert only_static_coverage_failed(v)
    assert {c.key: c.status for c in v.coverage} == {"python": "covered", "tool-config": "vetoed"}
    (entry,) = [c for c in v.coverage if c.key == "tool-config"]
    assert entry.files == [config]
    assert entry.by == []
    (reason,) = v.reasons
    assert config in reason
    assert "configures the tools the checks run" in reason
    assert "review the diff yourself" in reason


def test_tool_config_alone_is_not_verified() -> None:
    # Only data-looking files changed: before hardening this was "docs" and verified.
    v = evaluate_gate(facts(["pytest.ini"], lint_types=[]))
    assert not v.verified
    assert [(c.key, c.status) for c in v.coverage] == [("tool-config", "vetoed")]


def test_nothing_covers_tool_config() -> None:
    # Not "*", not the key itself, not the extension, not a verified native lint result.
    files = ["conftest.py", "pyproject.toml"]
    v = evaluate_gate(
        facts(
            files,
            lint_types=["*", "tool-config", ".py", ".toml", "python"],
            native_lint=[EditorLintResult("ok", True, tuple(files))],
        )
    )
    assert not v.verified
    assert [(c.key, c.status, c.files) for c in v.coverage] == [("tool-config", "vetoed", files)]
    assert v.reasons == [
        "conftest.py, pyproject.toml configure the tools the checks run; a run that edits "
        "them cannot be verified by those checks — review the diff yourself"
    ]


def test_docs_stay_not_required() -> None:
    v = evaluate_gate(facts(["docs/guide.md", "README", "LICENSE", "data.json"], lint_types=[]))
    assert v.verified
    assert [(c.key, c.status) for c in v.coverage] == [("docs", "not_required")]


def test_python_coverage_unchanged() -> None:
    v = evaluate_gate(facts(["app.py", "pkg/mod.py", "tests/test_app.py"]))
    assert v.verified
    assert [(c.key, c.status, c.by) for c in v.coverage] == [("python", "covered", ["lint"])]


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("scripts/python", "file:python"),
        ("bin/rust", "file:rust"),
        ("docs", "file:docs"),  # no longer the documentation key
        ("tool-config", "file:tool-config"),  # no longer the vetoed key either
        (".bashrc", "file:.bashrc"),
        ("Procfile", "file:Procfile"),
    ],
)
def test_extensionless_files_get_a_namespaced_key(path: str, key: str) -> None:
    assert language_key(path) == key


@pytest.mark.parametrize("types", [["python"], [".py"], ["sh"], [""], ["docs"], ["python", ".py"]])
def test_a_language_name_does_not_cover_an_extensionless_file(types: list[str]) -> None:
    v = evaluate_gate(facts(["scripts/python"], lint_types=types))
    assert not v.verified
    assert only_static_coverage_failed(v)
    assert [(c.key, c.status) for c in v.coverage] == [("file:python", "uncovered")]
    assert any("scripts/python" in r for r in v.reasons)


@pytest.mark.parametrize("types", [["file:python"], ["FILE:Python"], ["*"]])
def test_explicit_file_key_or_star_covers_an_extensionless_file(types: list[str]) -> None:
    v = evaluate_gate(facts(["scripts/python"], lint_types=types))
    assert v.verified
    assert [(c.key, c.status, c.by) for c in v.coverage] == [("file:python", "covered", ["lint"])]


def test_extensionless_file_beside_python_needs_its_own_coverage() -> None:
    v = evaluate_gate(facts(["app.py", "scripts/python"]))
    assert not v.verified
    assert {c.key: c.status for c in v.coverage} == {
        "python": "covered",
        "file:python": "uncovered",
    }
    ok = evaluate_gate(facts(["app.py", "scripts/python"], lint_types=["python", "file:python"]))
    assert ok.verified
