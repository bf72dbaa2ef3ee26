"""JUnit results: real pytest output parsed, hostile XML refused, judgement against a baseline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flow_core.verify._junit import (
    MAX_JUNIT_BYTES,
    JUnitError,
    JUnitResults,
    judge,
    parse_junit,
    read_junit,
)


def _pytest_junit(tmp_path: Path, source: str) -> bytes:
    (tmp_path / "test_it.py").write_text(source)
    out = tmp_path / "results.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={out}"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
        timeout=120,
        env={**os.environ, "PYTEST_ADDOPTS": ""},
    )
    return out.read_bytes()


def test_real_pytest_results(tmp_path: Path) -> None:
    source = (
        "import pytest\n"
        "def test_ok(): pass\n"
        "def test_bad(): assert 1 == 2\n"
        "@pytest.mark.skip(reason='later')\n"
        "def test_skip(): pass\n"
        "@pytest.fixture\n"
        "def broken(): raise RuntimeError('setup')\n"
        "def test_err(broken): pass\n"
        "class TestBox:\n"
        "    def test_in_class(self): pass\n"
    )
    results = parse_junit(_pytest_junit(tmp_path, source))
    assert results.outcomes == {
        "test_it::test_ok": "passed",
        "test_it::test_bad": "failed",
        "test_it::test_skip": "skipped",
        "test_it::test_err": "error",
        "test_it.TestBox::test_in_class": "passed",
    }


def test_a_process_that_exits_at_import_writes_no_results(tmp_path: Path) -> None:
    (tmp_path / "test_0.py").write_text('"""Ends the run."""\nimport os\n\nos._exit(0)\n')
    out = tmp_path / "results.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={out}"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0  # the exit status alone would call this a pass
    with pytest.raises(JUnitError, match="no results file"):
        read_junit(str(out))


@pytest.mark.parametrize(
    ("xml", "match"),
    [
        (b"", "not well-formed"),
        (b"<html/>", "root element"),
        (b"<testsuite><testcase classname='a'/></testsuite>", "no name"),
        (b"<testsuite><testcase name='a'>", "not well-formed"),
        (
            b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
            b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><testsuite>&lol2;</testsuite>',
            "document type",
        ),
        (
            b'<!DOCTYPE x SYSTEM "file:///etc/passwd"><testsuite/>',
            "document type",
        ),
        (b"<testsuite><testcase name='a'>&ext;</testcase></testsuite>", "not well-formed"),
    ],
)
def test_hostile_or_broken_xml_is_refused(xml: bytes, match: str) -> None:
    with pytest.raises(JUnitError, match=match):
        parse_junit(xml)


def test_size_cap(tmp_path: Path) -> None:
    with pytest.raises(JUnitError, match="larger"):
        parse_junit(b" " * (MAX_JUNIT_BYTES + 1))
    big = tmp_path / "big.xml"
    with big.open("wb") as fh:
        fh.truncate(MAX_JUNIT_BYTES + 1)
    with pytest.raises(JUnitError, match="larger"):
        read_junit(str(big))


def test_links_and_non_files_are_refused(tmp_path: Path) -> None:
    target = tmp_path / "real.xml"
    target.write_bytes(b"<testsuite><testcase name='a'/></testsuite>")
    link = tmp_path / "link.xml"
    link.symlink_to(target)
    with pytest.raises(JUnitError, match="cannot be opened"):
        read_junit(str(link))
    fifo = tmp_path / "fifo.xml"
    os.mkfifo(fifo)
    with pytest.raises(JUnitError, match="not a regular file"):
        read_junit(str(fifo))
    assert parse_junit(read_junit(str(target))).outcomes == {"a": "passed"}


def test_a_duplicate_entry_keeps_the_worst_outcome() -> None:
    xml = (
        b"<testsuites><testsuite>"
        b"<testcase classname='m' name='t'><failure/></testcase>"
        b"<testcase classname='m' name='t'/>"
        b"</testsuite></testsuites>"
    )
    assert parse_junit(xml).outcomes == {"m::t": "failed"}


def _r(**outcomes: str) -> JUnitResults:
    return JUnitResults(outcomes=outcomes)  # type: ignore[arg-type]


def test_judge_the_honest_fix() -> None:
    verdict = judge(_r(a="passed", b="passed", c="passed"), _r(a="passed", b="failed"))
    assert verdict.passed
    assert verdict.fixed == ["b"]
    assert verdict.counts["passed"] == 3


@pytest.mark.parametrize(
    ("now", "problem"),
    [
        ({}, "no test"),
        ({"a": "passed", "b": "failed"}, "failed or errored: b"),
        ({"a": "passed", "c": "passed"}, "no longer ran (removed or renamed): b"),
        ({"a": "passed", "b": "skipped"}, "now skipped: b"),
        ({"a": "error", "b": "passed"}, "failed or errored: a"),
    ],
)
def test_judge_refuses(now: dict[str, str], problem: str) -> None:
    verdict = judge(_r(**now), _r(a="passed", b="failed"))
    assert not verdict.passed
    assert any(problem in p for p in verdict.problems), verdict.problems


def test_a_baseline_error_may_disappear_and_no_baseline_still_needs_a_test() -> None:
    assert judge(_r(a="passed"), _r(a="passed", collect="error")).passed
    assert judge(_r(a="passed"), None).passed
    assert not judge(_r(), None).passed
