"""The repository explains itself: no file cites a document outside it, every citation resolves.

Sources of rules are an MCP specification section, a named standard, or a section of the
repository's own ``docs/architecture.md``. These tests read every file git tracks (they skip
when this is not a git checkout, e.g. an unpacked sdist) and fail on a citation of a design
document, a reference specification or a folder outside the repository, and on a citation of a
``docs/architecture.md`` section that the document does not have.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
ARCHITECTURE = ROOT / "docs" / "architecture.md"

#: The names of the outside material, assembled from pieces so that this file, which must
#: contain the patterns, does not itself read as a citation of them.
_DOC = "DES" + "IGN"
_CONV = "CONVEN" + "TIONS"
_FOLDER = "sha" + "red"
_SPEC = "se" + "ed"

#: What a citation of something outside the repository looks like, and why it is refused.
OUTSIDE = [
    (re.compile(rf"{_DOC}\.md|{_CONV}\.md|\b{_DOC}:"), "a design document"),
    (re.compile(rf"\b{_FOLDER}/"), "a folder outside the repository"),
    (
        re.compile(
            rf"\({_SPEC}\b|\b{_SPEC}s?[:/]|\b{_SPEC}'s\b|\bthe {_SPEC}\b|\b{_SPEC} README\b",
            re.I,
        ),
        "a reference spec",
    ),
    (re.compile(r"\breference README\b", re.I), "another project's README"),
]

#: ``docs/architecture.md`` followed by the quoted section names it cites.
CITATION = re.compile(
    r"docs/architecture\.md`{0,2}\)?,?(?:\s|#:?)*(?:sections?\s+|section\s+)?\(?"
    r'((?:"[^"]{1,80}"(?:\s*(?:,|and)\s*)?)+)'
)


def _tracked_files() -> list[Path]:
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout: the tracked files are unknown")
    out = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True
    ).stdout
    files = [ROOT / name for name in out.decode().split("\0") if name]
    return [f for f in files if f.is_file() and f.resolve() != Path(__file__).resolve()]


def _text(path: Path) -> str:
    if path.stat().st_size > 2_000_000:
        return ""
    return path.read_bytes().decode("utf-8", errors="replace")


def _headings() -> set[str]:
    lines = ARCHITECTURE.read_text(encoding="utf-8").splitlines()
    return {line.lstrip("#").strip() for line in lines if line.startswith("#")}


def test_no_file_cites_a_document_outside_the_repository() -> None:
    found: list[str] = []
    for path in _tracked_files():
        for number, line in enumerate(_text(path).splitlines(), 1):
            for pattern, what in OUTSIDE:
                if pattern.search(line):
                    rel = path.relative_to(ROOT)
                    found.append(f"{rel}:{number}: cites {what}: {line.strip()[:100]}")
    assert not found, (
        "cite an MCP specification section, a named standard or a section of "
        "docs/architecture.md instead:\n" + "\n".join(found)
    )


def test_every_cited_architecture_section_exists() -> None:
    headings = _headings()
    missing: list[str] = []
    cited = 0
    for path in _tracked_files():
        for match in CITATION.finditer(_text(path)):
            for quoted in re.findall(r'"([^"]+)"', match.group(1)):
                # a name wrapped across lines, in a docstring or a comment
                section = " ".join(quoted.replace("#:", " ").replace("#", " ").split())
                cited += 1
                if section not in headings:
                    missing.append(f"{path.relative_to(ROOT)}: {section!r}")
    assert cited > 0  # the pattern still recognises the project's citations
    assert not missing, (
        "these files cite a docs/architecture.md section that does not exist; add the section "
        "(a heading with exactly that name) or cite an existing one:\n" + "\n".join(missing)
    )


def test_the_patterns_recognise_what_they_refuse() -> None:
    refused = [
        f'Exit codes ({_SPEC}: "Approve checks")',
        f"see {_DOC}.md, section flow-safeio",
        f"read ../{_FOLDER}/{_SPEC}s/flow.txt",
        "the Flow reference README says",
    ]
    for text in refused:
        assert any(p.search(text) for p, _ in OUTSIDE), text
    allowed = ['"seed": 7', "random.seed(1)", 'assert "seed" not in message']
    for text in allowed:
        assert not any(p.search(text) for p, _ in OUTSIDE), text
    sample = '(``docs/architecture.md``,\n    "Checks" and "Trust")'
    (match,) = CITATION.finditer(sample)
    assert re.findall(r'"([^"\n]+)"', match.group(1)) == ["Checks", "Trust"]
