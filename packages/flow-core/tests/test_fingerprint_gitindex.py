"""The whole-tree watch in a real git repository: tracked files git's index vouches for are not
read, and every kind of change is still seen (``verify/_gitindex.py``)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from flow_core.run._evidence import RunEvidence
from flow_core.verify._fingerprint import compare, take_fingerprint
from flow_core.verify._gitindex import read_index
from flow_testing.gitrepo import git

TRACKED = 3000
BODY = "value = 'x'\n" * 8


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A committed repository of :data:`TRACKED` files in folders of 100, one ignored file."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    for i in range(TRACKED):
        folder = root / f"pkg{i // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{i}.py").write_text(BODY)
    (root / ".gitignore").write_text("local.env\n")
    (root / "local.env").write_text("TOKEN=1\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    probe = (root / "pkg000" / "mod0.py").stat()
    if probe.st_mtime_ns % 1_000_000_000 == 0 and probe.st_ctime_ns % 1_000_000_000 == 0:
        pytest.skip("this file system keeps whole seconds: git's index cannot vouch (racy)")
    return root


def test_the_index_vouches_for_tracked_files_and_every_change_is_seen(repo: Path) -> None:
    base = take_fingerprint(repo, keep=True)
    assert len(base.files) == TRACKED + 2
    # Only what the index cannot vouch for is read: the ignored file, and entries written in
    # the same clock tick as the index (git's racy rule); never most of the tree.
    assert base.from_index >= TRACKED * 9 // 10
    assert base.hashed_files == len(base.files) - base.from_index
    assert base.files["local.env"].digest  # untracked: read

    (repo / "pkg000" / "mod1.py").write_text(BODY.replace("x", "y"))  # same size
    (repo / "pkg000" / "mod2.py").chmod(0o755)
    (repo / "pkg000" / "mod3.py").unlink()
    (repo / "pkg001" / "new.py").write_text("new = 1\n")
    (repo / "local.env").write_text("TOKEN=2\n")
    (repo / "pkg002" / "mod200.py").write_text(BODY)  # rewritten with the same bytes
    (repo / "pkg002" / "mod201.py").write_text("staged = 1\n")
    git(repo, "add", "pkg002/mod201.py")  # the index now vouches for the new content

    for previous in (None, base):
        now = take_fingerprint(repo, previous=previous)
        kinds = {c.path: c.change for c in compare(base, now)}
        assert kinds == {
            "local.env": "modified",
            "pkg000/mod1.py": "modified",
            "pkg000/mod2.py": "mode_changed",
            "pkg000/mod3.py": "removed",
            "pkg001/new.py": "added",
            "pkg002/mod201.py": "modified",
        }


def test_a_path_flow_wrote_is_read_even_when_the_index_vouches_for_it(repo: Path) -> None:
    """A check that ``git add``s Flow's write must not turn it into an outside change."""
    base = take_fingerprint(repo)
    new = b"fixed = 1\n"
    (repo / "pkg000" / "mod5.py").write_bytes(new)
    git(repo, "add", "pkg000/mod5.py")
    written = {"pkg000/mod5.py": hashlib.sha256(new).hexdigest()}
    now = take_fingerprint(repo, read=written)
    assert now.files["pkg000/mod5.py"].digest == written["pkg000/mod5.py"]
    assert compare(base, now, written=written) == []


def test_the_diff_of_an_unread_file_comes_from_its_blob(repo: Path) -> None:
    evidence = RunEvidence()
    evidence.watch_start(repo)
    assert evidence.base is not None
    assert "pkg000/mod7.py" not in evidence.base.kept
    (repo / "pkg000" / "mod7.py").write_text("rewritten = 1\n")
    reasons = evidence.watch_check(repo, {})
    assert reasons == [
        "pkg000/mod7.py changed outside Flow's tools (modified: content changed (96 → 14 bytes))"
    ]
    diff = evidence.diff(lambda p: (repo / p).read_bytes())
    assert "-value = 'x'\n" in diff
    assert "+rewritten = 1\n" in diff


def test_no_repository_or_a_broken_index_falls_back_to_reading(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a\n")
    assert read_index(tmp_path) is None
    fp = take_fingerprint(tmp_path)
    assert (fp.from_index, fp.hashed_files) == (0, 1)
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    (tmp_path / ".git" / "index").write_bytes(b"DIRC garbage")
    assert read_index(tmp_path) is None
    assert take_fingerprint(tmp_path).hashed_files == 1


def test_a_workspace_inside_a_repository_sees_its_own_paths(repo: Path) -> None:
    sub = repo / "pkg003"
    index = read_index(sub)
    assert index is not None
    assert set(index.entries) == {f"mod{i}.py" for i in range(300, 400)}
    fp = take_fingerprint(sub)
    assert fp.from_index >= 90
