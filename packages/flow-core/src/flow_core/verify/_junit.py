"""Test results as evidence: JUnit XML parsing and comparison with the baseline run.

A check may declare ``results = "junit"`` and put the placeholder ``{junit_xml}`` in its argv;
Flow fills it with a fresh private path outside the workspace (pytest ``--junitxml``,
gotestsum ``--junitfile``, cargo-nextest, jest-junit all write the format). Source of the rules:
``docs/architecture.md``, section "Evidence".

The file is written by code the model may have written, so it is hostile input:

* at most :data:`MAX_JUNIT_BYTES` bytes are read, from a regular file opened without following
  a symbolic link;
* the XML is parsed with expat as a stream (no tree is built); a document type declaration
  (``<!DOCTYPE``), and so any entity declaration, is refused, which rules out entity expansion
  attacks ("billion laughs") and external entities;
* at most :data:`MAX_TEST_CASES` test cases are accepted.

A test's id is ``classname::name`` (``name`` alone when there is no classname). A test that
appears more than once keeps its worst outcome (error, then failed, then skipped, then passed),
so a duplicate "passed" entry cannot hide a failure.

A test check *passes on evidence* (:func:`judge`) only when its results exist, parse, hold at
least one test, have no failure or error, and every baseline test is still present and
passing: a removed, renamed or newly skipped baseline test is a reason it did not pass. A
baseline test that could not run at all (outcome ``error``, such as a collection error) may be
absent later, since fixing what broke its collection can change its id.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal
from xml.parsers import expat

from flow_core.config._schema import JUNIT_PLACEHOLDER

__all__ = [
    "JUNIT_PLACEHOLDER",
    "MAX_JUNIT_BYTES",
    "MAX_TEST_CASES",
    "JUnitError",
    "JUnitResults",
    "Judgement",
    "Outcome",
    "judge",
    "parse_junit",
    "read_junit",
]

#: Largest results file read, in bytes (16 MiB).
MAX_JUNIT_BYTES = 16 * 1024 * 1024
#: Most test cases accepted in one results file.
MAX_TEST_CASES = 200_000

Outcome = Literal["passed", "failed", "error", "skipped"]
_RANK: Mapping[str, int] = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
_CHILD_OUTCOME: Mapping[str, Outcome] = {
    "failure": "failed",
    "error": "error",
    "skipped": "skipped",
}


class JUnitError(ValueError):
    """The results file is missing, too large, not a regular file, or not usable JUnit XML."""


@dataclass(frozen=True)
class JUnitResults:
    """The outcome of every test case in one results file, by test id."""

    outcomes: Mapping[str, Outcome]

    def ids(self, *outcomes: Outcome) -> list[str]:
        """Sorted test ids with one of ``outcomes``."""
        return sorted(t for t, o in self.outcomes.items() if o in outcomes)

    def count(self, outcome: Outcome) -> int:
        """How many tests had ``outcome``."""
        return sum(1 for o in self.outcomes.values() if o == outcome)


def read_junit(path: str) -> bytes:
    """Read a results file written by a check: regular file, no symlink, capped.

    Args:
        path: the absolute path Flow put in place of ``{junit_xml}``.

    Returns:
        The file's bytes (at most :data:`MAX_JUNIT_BYTES`).

    Raises:
        JUnitError: missing, a symbolic link, not a regular file, or too large.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as err:
        raise JUnitError("the check wrote no results file") from err
    except OSError as err:
        raise JUnitError(f"the results file cannot be opened ({err.strerror})") from err
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise JUnitError("the results path is not a regular file")
        if st.st_size > MAX_JUNIT_BYTES:
            raise JUnitError(f"the results file is larger than {MAX_JUNIT_BYTES} bytes")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_JUNIT_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_JUNIT_BYTES:
            raise JUnitError(f"the results file is larger than {MAX_JUNIT_BYTES} bytes")
        return b"".join(chunks)
    except OSError as err:
        raise JUnitError(f"the results file cannot be read ({err.strerror})") from err
    finally:
        os.close(fd)


class _Collector:
    """Expat callbacks: one outcome per ``<testcase>``, refusing any DTD."""

    def __init__(self) -> None:
        self.outcomes: dict[str, Outcome] = {}
        self.cases = 0
        self.saw_root = False
        self._case: str | None = None
        self._outcome: Outcome = "passed"
        self._depth = 0
        self._case_depth = -1

    def doctype(self, *_: object) -> None:
        raise JUnitError("the results file has a document type declaration (refused)")

    def entity(self, *_: object) -> None:
        raise JUnitError("the results file declares an entity (refused)")

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        self._depth += 1
        if self._depth == 1:
            if tag not in ("testsuites", "testsuite", "testrun"):
                raise JUnitError(f"the root element is <{tag[:40]}>, not <testsuites>/<testsuite>")
            self.saw_root = True
        if tag == "testcase":
            if self._case is not None:
                raise JUnitError("a <testcase> is nested inside another")
            self.cases += 1
            if self.cases > MAX_TEST_CASES:
                raise JUnitError(f"more than {MAX_TEST_CASES} test cases")
            name = attrs.get("name", "")
            if not name:
                raise JUnitError("a <testcase> has no name")
            classname = attrs.get("classname", "")
            self._case = f"{classname}::{name}" if classname else name
            self._outcome = "passed"
            self._case_depth = self._depth
        elif self._case is not None and self._depth == self._case_depth + 1:
            found = _CHILD_OUTCOME.get(tag)
            if found is not None and _RANK[found] > _RANK[self._outcome]:
                self._outcome = found

    def end(self, tag: str) -> None:
        if tag == "testcase" and self._case is not None and self._depth == self._case_depth:
            previous = self.outcomes.get(self._case)
            if previous is None or _RANK[self._outcome] > _RANK[previous]:
                self.outcomes[self._case] = self._outcome
            self._case = None
            self._case_depth = -1
        self._depth -= 1


def parse_junit(data: bytes) -> JUnitResults:
    """Parse JUnit XML (the common Ant/Surefire dialect that pytest and others write).

    Args:
        data: the file's bytes; at most :data:`MAX_JUNIT_BYTES`.

    Returns:
        Every test case's outcome by id (``classname::name``): ``<failure>`` → ``failed``,
        ``<error>`` → ``error``, ``<skipped>`` → ``skipped``, none of them → ``passed``.

    Raises:
        JUnitError: too large, not well-formed XML, a DTD or entity declaration, a root other
            than ``<testsuites>``/``<testsuite>``, a nameless test case, too many test cases.
    """
    if len(data) > MAX_JUNIT_BYTES:
        raise JUnitError(f"the results file is larger than {MAX_JUNIT_BYTES} bytes")
    collector = _Collector()
    parser = expat.ParserCreate()
    parser.StartDoctypeDeclHandler = collector.doctype
    parser.EntityDeclHandler = collector.entity
    parser.StartElementHandler = collector.start
    parser.EndElementHandler = collector.end
    # Without a DTD nothing needs resolving; refuse anything that asks.
    with contextlib.suppress(AttributeError):
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        parser.Parse(data, True)
    except expat.ExpatError as err:
        raise JUnitError(f"the results file is not well-formed XML ({err})") from err
    if not collector.saw_root:
        raise JUnitError("the results file is empty")
    return JUnitResults(outcomes=dict(collector.outcomes))


@dataclass(frozen=True)
class Judgement:
    """What a check's structured results prove, compared with the baseline.

    Attributes:
        passed: the results hold at least one test, none failed or errored, and every
            baseline test that ran is still present and not failed, errored or newly skipped.
        problems: why not, one sentence each (empty when ``passed``).
        fixed: tests that failed or errored at baseline and pass now (the fix's evidence).
        counts: tests by outcome in these results.
    """

    passed: bool
    problems: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    counts: Mapping[str, int] = field(default_factory=dict)


def _listed(ids: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def judge(results: JUnitResults, baseline: JUnitResults | None) -> Judgement:
    """Judge structured results against the baseline (None: no usable baseline was recorded).

    Args:
        results: this run's parsed results.
        baseline: the results recorded before the coder started, if any.

    Returns:
        A :class:`Judgement`; ``passed`` is the evidence half of a test check's pass (the check
        must also have exited 0).
    """
    now = results.outcomes
    counts = {o: results.count(o) for o in ("passed", "failed", "error", "skipped")}
    problems: list[str] = []
    if not now:
        problems.append("the results hold no test")
    failed = results.ids("failed", "error")
    if failed:
        problems.append(f"{len(failed)} test(s) failed or errored: {_listed(failed)}")
    fixed: list[str] = []
    if baseline is not None:
        before = baseline.outcomes
        gone = sorted(t for t, o in before.items() if o != "error" and t not in now)
        if gone:
            problems.append(
                f"{len(gone)} baseline test(s) no longer ran (removed or renamed): {_listed(gone)}"
            )
        skipped = sorted(t for t, o in before.items() if o != "skipped" and now.get(t) == "skipped")
        if skipped:
            problems.append(f"{len(skipped)} baseline test(s) are now skipped: {_listed(skipped)}")
        fixed = sorted(
            t for t, o in before.items() if o in ("failed", "error") and now.get(t) == "passed"
        )
    return Judgement(passed=not problems, problems=problems, fixed=fixed, counts=counts)
