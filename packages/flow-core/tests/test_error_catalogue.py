"""Every error code written in any Flow package's source is in the one catalogue, categorised.

The scan reads the sources of all five packages (``packages/*/src``): flow-safeio's error
classes, flow-core, flow-rose's ``editor_error(...)`` calls and the front ends' error reports.
"""

from __future__ import annotations

import re
from pathlib import Path

import flow_core

PACKAGES = Path(__file__).resolve().parents[2]
CODE = r'"([a-z][a-z0-9_]+)"'
# code="x", code: ErrorCode = "x", default_code: ClassVar[ErrorCode] = "x", err.code == "x",
# state.error("x", ...), ToolError("x", ...), editor_error("x", ...), error_report(kind, "x",
# ...), the CLI's emit_usage_error(kind, "x", ...) and _emit_once(kind, "x", ...)
PATTERNS = [
    re.compile(r"\b(?:default_)?code\s*(?::\s*[\w\[\]]+\s*)?=\s*" + CODE),
    re.compile(r"\.code\s*[!=]=\s*" + CODE),
    re.compile(r"\.error\(\s*" + CODE),
    re.compile(r"\bToolError\(\s*" + CODE),
    re.compile(r"\beditor_error\(\s*" + CODE),
    re.compile(r"\b(?:error_report|emit_usage_error|_emit_once)\(\s*\w+,\s*" + CODE),
]


def source_files() -> list[Path]:
    files = sorted(PACKAGES.glob("*/src/*/**/*.py"))
    assert {p.relative_to(PACKAGES).parts[0] for p in files} >= {
        "flow-safeio",
        "flow-core",
        "flow-rose",
        "flow-mcp",
        "flow-cli",
    }
    return files


def codes_in_source() -> set[str]:
    found: set[str] = set()
    for path in source_files():
        text = path.read_text(encoding="utf-8")
        for pattern in PATTERNS:
            found.update(pattern.findall(text))
    return found


def test_the_scan_sees_codes() -> None:
    # Guards the test itself: if the patterns stopped matching, the next test would pass vacuously.
    expected = {"check_timeout", "not_trusted", "review_invalid", "tool_unknown", "symlink"}
    expected |= {"editor_socket_tcp", "usage_error", "internal_error", "invalid_arguments"}
    assert expected <= codes_in_source()


def test_every_code_in_source_is_catalogued() -> None:
    missing = sorted(codes_in_source() - set(flow_core.ERROR_CODES))
    assert missing == []


def test_error_classes_default_codes_are_catalogued() -> None:
    for cls in (
        flow_core.FlowError,
        flow_core.ConfigError,
        flow_core.UnknownCheckError,
        flow_core.NotTrustedError,
        flow_core.BackendError,
        flow_core.EditorError,
    ):
        assert cls.default_code in flow_core.ERROR_CODES, cls


def test_meanings_are_sentences() -> None:
    for code, meaning in flow_core.ERROR_CODES.items():
        assert re.fullmatch(r"[a-z][a-z0-9_]+", code), code
        assert len(meaning) > 15, code


def test_every_code_has_a_category_with_an_exit_code() -> None:
    assert set(flow_core.ERROR_CATEGORIES) == set(flow_core.ERROR_CODES)
    assert dict(flow_core.EXIT_CODES) == {"usage": 2, "failure": 1, "interrupted": 130}
    usage = {c for c, cat in flow_core.ERROR_CATEGORIES.items() if cat == "usage"}
    # Configuration and command-line mistakes: every config_* code, trust and unknown names.
    assert {c for c in flow_core.ERROR_CODES if c.startswith("config_")} <= usage
    assert {"check_unknown", "not_trusted", "usage_error"} <= usage
    assert flow_core.error_category("interrupted") == "interrupted"
    assert flow_core.error_category("backend_timeout") == "failure"


def test_each_code_is_one_row_and_one_literal() -> None:
    # One table of typed rows (flow_core._codes); the ErrorCode Literal names the same set,
    # so a misspelt code at a call site fails mypy (the scan above is the net for plain str).
    from typing import get_args

    from flow_core._codes import ROWS, ErrorCode

    codes = [row.code for row in ROWS]
    assert len(codes) == len(set(codes))
    assert set(get_args(ErrorCode)) == set(codes)
    assert len(get_args(ErrorCode)) == len(codes)
    assert set(flow_core.ERROR_CODES) == set(codes)
    assert set(flow_core.EDITOR_ERROR_CODES) <= set(flow_core.ERROR_CODES)
    rose_src = (PACKAGES / "flow-rose/src/flow_rose/_errors.py").read_text(encoding="utf-8")
    assert '"editor_unavailable"' not in rose_src


def test_the_area_tables_are_views_of_the_rows() -> None:
    from flow_core._codes import ROWS
    from flow_core.run._baseline import BASELINE_CODES
    from flow_core.run._preflight import PREFLIGHT_CODES
    from flow_safeio import ERROR_CODES as SAFEIO_CODES

    for table, area in (
        (flow_core.BACKEND_ERROR_CODES, "backend"),
        (flow_core.REPLY_ISSUE_CODES, "reply"),
        (PREFLIGHT_CODES, "preflight"),
        (BASELINE_CODES, "baseline"),
        (flow_core.EDITOR_ERROR_CODES, "editor"),
    ):
        rows = {r.code: r.meaning for r in ROWS if r.area == area}
        rows |= {r.code: meaning for r in ROWS for where, meaning in r.also if where == area}
        assert dict(table) == rows, area
    for code, meaning in SAFEIO_CODES.items():
        assert flow_core.ERROR_CODES[code] == meaning


def test_every_code_is_explained_with_a_cause_and_a_fix() -> None:
    """``flow explain CODE`` has something real to say for every catalogued code."""
    for code in flow_core.ERROR_CODES:
        found = flow_core.explain_error(code)
        assert found is not None
        assert found.cause.strip()
        assert found.fix.strip()
        assert found.exit_code == flow_core.EXIT_CODES[found.category]


def test_the_exception_tree_is_drawn_once_and_complete() -> None:
    import importlib
    import pkgutil

    import flow_core._errors as errors

    for info in pkgutil.walk_packages(flow_core.__path__, "flow_core."):
        importlib.import_module(info.name)
    drawing = str(errors.__doc__)

    def subclasses(cls: type) -> set[type]:
        found = set(cls.__subclasses__())
        for sub in list(found):
            found |= subclasses(sub)
        return found

    ours = {c for c in subclasses(flow_core.FlowError) if c.__module__.startswith("flow_core")}
    assert {"StoreError", "HTTPStatusError"} <= {c.__name__ for c in ours}
    for cls in ours:
        assert re.search(rf"\b{cls.__name__}\b", drawing), f"{cls.__name__} is not drawn"
    for name in ("ToolError", "SearchError", "SafeIOError"):
        assert name in drawing


def test_an_unknown_code_has_no_explanation() -> None:
    assert flow_core.explain_error("no_such_code") is None
