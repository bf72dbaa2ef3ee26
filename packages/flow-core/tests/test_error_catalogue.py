"""Every error code written in flow-core's source is documented in ``ERROR_CODES``."""

from __future__ import annotations

import re
from pathlib import Path

import flow_core

SRC = Path(flow_core.__file__).parent
# code="x", default_code = "x", state.error("x", ...), ToolError("x", ...), _fail("x", ...)
PATTERNS = [
    re.compile(r'\bcode\s*=\s*"([a-z][a-z0-9_]+)"'),
    re.compile(r'\bdefault_code\s*=\s*"([a-z][a-z0-9_]+)"'),
    re.compile(r'\.error\(\s*"([a-z][a-z0-9_]+)"'),
    re.compile(r'\bToolError\(\s*"([a-z][a-z0-9_]+)"'),
]


def codes_in_source() -> set[str]:
    found: set[str] = set()
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for pattern in PATTERNS:
            found.update(pattern.findall(text))
    return found


def test_the_scan_sees_codes() -> None:
    # Guards the test itself: if the patterns stopped matching, the next test would pass vacuously.
    assert {"check_timeout", "not_trusted", "review_invalid", "tool_unknown"} <= codes_in_source()


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
