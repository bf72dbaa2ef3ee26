"""The run store: records, undo, apply, pruning, caps, isolated trees (real files, real git)."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from flow_core.config._runs import RunsConfig
from flow_core.store import (
    RunStore,
    StoreError,
    apply_run,
    prepare_tree,
    remove_tree,
    sha256,
    undo_run,
)
from flow_safeio import Workspace

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.py").write_text("a = 1\n")
    return root


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    return RunStore(tmp_path / "state" / "flow" / "runs")


def _fake_run(store: RunStore, ws: Path) -> str:
    """A run that edits a.py and creates b.py, recorded the way the runtime records it."""
    rec = store.begin(workspace=str(ws), task="edit")
    rec.pre_image("a.py", (ws / "a.py").read_bytes())
    (ws / "a.py").write_text("a = 2\n")
    rec.pre_image("b.py", None)
    (ws / "b.py").write_text("b = 1\n")
    rec.post_hashes({p: sha256((ws / p).read_bytes()) for p in ("a.py", "b.py")})
    rec.finish("unverified", changed_files=["a.py", "b.py"])
    return rec.id


def test_record_is_private_and_readable(store: RunStore, ws: Path) -> None:
    run_id = _fake_run(store, ws)
    info = store.get(run_id)
    assert info.status == "unverified"
    assert info.changed_files == ["a.py", "b.py"]
    assert stat.S_IMODE(os.stat(store.root).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(info.dir).st_mode) == 0o700
    for name in ("meta.json", "files.jsonl", "manifest.json", "pre/0001"):
        assert stat.S_IMODE(os.stat(info.dir / name).st_mode) == 0o600, name
    manifest = json.loads((info.dir / "manifest.json").read_text())
    by_path = {f["path"]: f for f in manifest["files"]}
    assert by_path["b.py"]["created"] is True
    assert by_path["a.py"]["post_sha256"] == sha256(b"a = 2\n")


def test_ids_sort_by_time_and_prefixes_resolve(store: RunStore, ws: Path) -> None:
    ids = [store.begin(workspace=str(ws)).id for _ in range(3)]
    assert ids == sorted(ids)
    assert [i.id for i in store.list()] == ids[::-1]
    assert store.get(ids[0][:-2]).id == ids[0]
    with pytest.raises(StoreError) as caught:
        store.get("19990101")
    assert caught.value.code == "run_not_found"
    with pytest.raises(StoreError):
        store.get("../../etc")


def test_store_inside_the_workspace_is_refused(ws: Path) -> None:
    with pytest.raises(StoreError) as caught:
        RunStore.for_workspace(ws, environ={"XDG_STATE_HOME": str(ws / "state")})
    assert caught.value.code == "run_store_unusable"
    assert "XDG_STATE_HOME" in caught.value.message


def test_undo_restores_and_removes_then_is_itself_undoable(store: RunStore, ws: Path) -> None:
    run_id = _fake_run(store, ws)
    with Workspace(str(ws)) as w:
        result = undo_run(store, store.get(run_id), w)
    assert result.restored == ["a.py"]
    assert result.removed == ["b.py"]
    assert (ws / "a.py").read_text() == "a = 1\n"
    assert not (ws / "b.py").exists()
    undo = store.get(result.undo_id or "")
    assert undo.kind == "undo"
    assert undo.meta["target"] == run_id
    assert store.get(run_id).meta["undone_by"] == undo.id
    with Workspace(str(ws)) as w, pytest.raises(StoreError) as again:
        undo_run(store, store.get(run_id), w)
    assert again.value.code == "undo_nothing"
    # Undoing the undo puts the run's change back.
    with Workspace(str(ws)) as w:
        redo = undo_run(store, undo, w)
    assert sorted(redo.restored) == ["a.py", "b.py"]
    assert (ws / "a.py").read_text() == "a = 2\n"
    assert (ws / "b.py").read_text() == "b = 1\n"


def test_undo_refused_after_an_external_change_changes_nothing(store: RunStore, ws: Path) -> None:
    run_id = _fake_run(store, ws)
    (ws / "a.py").write_text("a = 3  # the user's edit\n")
    with Workspace(str(ws)) as w, pytest.raises(StoreError) as caught:
        undo_run(store, store.get(run_id), w)
    assert caught.value.code == "undo_conflict"
    assert "a.py" in caught.value.message
    assert (ws / "a.py").read_text() == "a = 3  # the user's edit\n"
    assert (ws / "b.py").read_text() == "b = 1\n"  # the other file was not touched either
    assert [i.kind for i in store.list()] == ["run"]  # no undo record for a refusal
    with Workspace(str(ws)) as w:
        forced = undo_run(store, store.get(run_id), w, force=True)
    assert forced.forced == ["a.py"]
    assert (ws / "a.py").read_text() == "a = 1\n"


def test_undo_refuses_a_corrupt_pre_image(store: RunStore, ws: Path) -> None:
    run_id = _fake_run(store, ws)
    (store.get(run_id).dir / "pre" / "0001").write_bytes(b"tampered\n")
    with Workspace(str(ws)) as w, pytest.raises(StoreError) as caught:
        undo_run(store, store.get(run_id), w)
    assert caught.value.code == "undo_failed"
    assert (ws / "a.py").read_text() == "a = 2\n"


def test_undo_never_writes_through_a_symlink(store: RunStore, ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    rec = store.begin(workspace=str(ws))
    rec.pre_image("a.py", b"a = 1\n")
    rec.post_hashes({"a.py": sha256(b"a = 2\n")})
    rec.finish("unverified")
    (ws / "a.py").unlink()
    (ws / "a.py").symlink_to(outside)
    with Workspace(str(ws)) as w, pytest.raises(StoreError):
        undo_run(store, store.get(rec.id), w, force=True)
    assert outside.read_text() == "keep\n"


def test_a_record_without_its_end_still_reads(store: RunStore, ws: Path) -> None:
    rec = store.begin(workspace=str(ws), task="t")
    rec.transcript("model_reply", content="hello")
    rec.pre_image("a.py", b"a = 1\n")
    # The process dies here: no finish(), and a half-written line at the end.
    with open(rec.dir / "transcript.jsonl", "a") as f:
        f.write('{"type": "model_req')
    info = store.get(rec.id)
    assert info.status == "running"
    lines = store.open(info).transcript_lines()
    assert [x["type"] for x in lines] == ["model_reply"]
    files = store.open(info).files()
    assert files[0].path == "a.py"
    assert files[0].post_known is False


def test_caps_leave_honest_markers(tmp_path: Path, ws: Path) -> None:
    limits = RunsConfig(max_file_bytes=64 * 1024, max_run_bytes=1024 * 1024)
    store = RunStore(tmp_path / "runs", limits)
    rec = store.begin(workspace=str(ws))
    rec.transcript("note", text="x" * 200_000)
    for _ in range(20):
        rec.transcript("note", text="y" * 10_000)
    rec.write_file("diff.patch", b"z" * 200_000)
    rec.finish("unverified")
    lines = store.open(store.get(rec.id)).transcript_lines()
    # The 200k string, even cut to 64k characters, does not fit a 64 KiB file: the line is
    # dropped and the marker says so; smaller lines still go in while they fit.
    assert lines[0]["type"] == "truncated"
    assert [x["type"] for x in lines[1:]] == ["note"] * (len(lines) - 1)
    assert 1 < len(lines) < 21
    assert os.path.getsize(rec.dir / "transcript.jsonl") <= 64 * 1024 + 1024
    diff = (rec.dir / "diff.patch").read_bytes()
    assert len(diff) <= 64 * 1024
    assert b"more bytes cut at the size cap" in diff
    assert store.get(rec.id).meta["dropped_bytes"]["transcript.jsonl"] > 0


def test_long_strings_are_cut_with_a_marker(store: RunStore, ws: Path) -> None:
    rec = store.begin(workspace=str(ws))
    rec.transcript("note", text="x" * 100_000)
    line = store.open(store.get(rec.id)).transcript_lines()[0]
    assert line["text"].endswith("more characters cut]")
    assert len(line["text"]) < 70_000


def test_pre_image_over_the_run_cap_refuses(tmp_path: Path, ws: Path) -> None:
    store = RunStore(tmp_path / "runs", RunsConfig(max_run_bytes=1024 * 1024))
    rec = store.begin(workspace=str(ws))
    with pytest.raises(StoreError) as caught:
        rec.pre_image("big.bin", b"0" * (2 * 1024 * 1024))
    assert caught.value.code == "run_store_full"


def test_prune_by_count_and_age(tmp_path: Path, ws: Path) -> None:
    store = RunStore(tmp_path / "runs", RunsConfig(keep=3, max_age_days=10))
    ids = []
    for _ in range(3):
        rec = store.begin(workspace=str(ws))
        rec.finish("verified")
        ids.append(rec.id)
    newest = store.begin(workspace=str(ws))  # keep=3: the oldest goes
    newest.finish("verified")
    assert [i.id for i in store.list()] == [newest.id, ids[2], ids[1]]
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=11)
    assert sorted(store.prune(now=later)) == sorted([newest.id, ids[2], ids[1]])
    assert store.list() == []


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


@needs_git
def test_worktree_carries_uncommitted_state_and_leaves_git_clean(tmp_path: Path, ws: Path) -> None:
    _git(ws, "init", "-q")
    (ws / "gone.py").write_text("x = 1\n")
    (ws / ".gitignore").write_text("ignored/\n")
    _git(ws, "add", ".")
    _git(ws, "commit", "-q", "-m", "init")
    (ws / "a.py").write_text("a = 'uncommitted'\n")
    (ws / "new.py").write_text("n = 1\n")
    (ws / "gone.py").unlink()
    (ws / "ignored").mkdir()
    (ws / "ignored" / "big.bin").write_text("no\n")
    hook = ws / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'hook-ran'}\n")
    hook.chmod(0o755)
    status_before = _git(ws, "status", "--porcelain")
    tree = prepare_tree(ws, tmp_path / "runs" / "r1" / "tree")
    try:
        assert tree.kind == "git-worktree"
        assert (tree.root / "a.py").read_text() == "a = 'uncommitted'\n"
        assert (tree.root / "new.py").read_text() == "n = 1\n"
        assert not (tree.root / "gone.py").exists()
        assert not (tree.root / "ignored").exists()
        assert not (tmp_path / "hook-ran").exists()  # hooks never run
    finally:
        remove_tree(tree)
    assert not tree.top.exists()
    assert _git(ws, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert _git(ws, "status", "--porcelain") == status_before
    assert not (ws / ".git" / "worktrees").exists() or not os.listdir(ws / ".git" / "worktrees")


@needs_git
def test_worktree_reproduces_staged_removed_and_submodule_state(tmp_path: Path, ws: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "helper.py").write_text("VALUE = 1\n")
    _git(lib, "init", "-q")
    _git(lib, "add", ".")
    _git(lib, "commit", "-q", "-m", "lib")
    _git(ws, "init", "-q")
    (ws / "old.py").write_text("o = 1\n")
    _git(ws, "add", ".")
    _git(ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    _git(ws, "commit", "-q", "-m", "init")
    (ws / "test_new.py").write_text("def test_x(): pass\n")
    _git(ws, "add", "test_new.py")  # staged: the working copy matches the index
    _git(ws, "rm", "-q", "old.py")  # staged removal
    (ws / "lib" / "helper.py").write_text("VALUE = 2\n")  # a change inside the submodule
    tree = prepare_tree(ws, tmp_path / "runs" / "r2" / "tree")
    try:
        assert (tree.root / "test_new.py").read_text() == "def test_x(): pass\n"
        assert not (tree.root / "old.py").exists()
        assert (tree.root / "lib" / "helper.py").read_text() == "VALUE = 2\n"
        assert not (tree.root / "lib" / ".git").exists()
        assert (tree.root / "a.py").read_text() == "a = 1\n"
    finally:
        remove_tree(tree)
    assert _git(ws, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_private_copy_skips_generated_folders(tmp_path: Path, ws: Path) -> None:
    (ws / ".venv").mkdir()
    (ws / ".venv" / "x").write_text("x")
    (ws / "link").symlink_to("/etc/passwd")
    os.mkfifo(ws / "pipe")  # shutil refuses FIFOs: it must be skipped, not fail the copy
    tree = prepare_tree(ws, tmp_path / "copy")
    try:
        assert tree.kind == "copy"
        assert (tree.root / "a.py").exists()
        assert not (tree.root / ".venv").exists()
        assert os.readlink(tree.root / "link") == "/etc/passwd"
        assert not (tree.root / "pipe").exists()
    finally:
        remove_tree(tree)
    assert not (tmp_path / "copy").exists()


def test_apply_refused_when_the_workspace_moved(store: RunStore, ws: Path) -> None:
    rec = store.begin(workspace=str(ws), isolated=True)
    rec.pre_image("a.py", b"a = 1\n")
    rec.post_hashes({"a.py": sha256(b"a = 2\n")})
    rec.store_post_image("a.py", b"a = 2\n")
    rec.finish("unverified")
    (ws / "a.py").write_text("a = 9\n")
    with Workspace(str(ws)) as w, pytest.raises(StoreError) as caught:
        apply_run(store, store.get(rec.id), w)
    assert caught.value.code == "apply_conflict"
    assert (ws / "a.py").read_text() == "a = 9\n"
    (ws / "a.py").write_text("a = 1\n")
    with Workspace(str(ws)) as w:
        applied = apply_run(store, store.get(rec.id), w)
    assert applied.written == ["a.py"]
    assert (ws / "a.py").read_text() == "a = 2\n"
    assert store.get(rec.id).meta["applied"] is True


def test_a_run_still_in_progress_is_not_undone(store: RunStore, ws: Path) -> None:
    rec = store.begin(workspace=str(ws), task="t")  # this process: alive, status running
    rec.pre_image("a.py", (ws / "a.py").read_bytes())
    (ws / "a.py").write_text("a = 2\n")
    rec.post_hashes({"a.py": sha256(b"a = 2\n")})
    with Workspace(str(ws)) as w, pytest.raises(StoreError) as caught:
        undo_run(store, store.get(rec.id), w)
    assert caught.value.code == "undo_conflict"
    assert "still running" in caught.value.message
    assert (ws / "a.py").read_text() == "a = 2\n"
    rec.save_meta(pid=2**22 + 12345)  # a pid no process has: the run died
    with Workspace(str(ws)) as w:
        assert undo_run(store, store.get(rec.id), w).restored == ["a.py"]


def test_a_reused_pid_does_not_keep_a_dead_run_running(store: RunStore, ws: Path) -> None:
    rec = store.begin(workspace=str(ws), task="t")
    rec.pre_image("a.py", (ws / "a.py").read_bytes())
    (ws / "a.py").write_text("a = 2\n")
    rec.post_state("a.py", sha256(b"a = 2\n"), stat.S_IMODE((ws / "a.py").stat().st_mode))
    assert store.get(rec.id).status == "running"  # this process, alive
    if rec.meta.get("pid_start") is None:
        pytest.skip("/proc cannot tell when a process started")
    # Our own pid, but another start time: the process that ran it is gone.
    rec.save_meta(pid_start="1")
    info = store.get(rec.id)
    assert (info.status, info.interrupted) == ("abandoned", True)
    assert "+a = 2" in (info.dir / "diff.patch").read_text()
    assert info.changed_files == ["a.py"]
    with Workspace(str(ws)) as w:
        assert undo_run(store, info, w).restored == ["a.py"]
    assert (ws / "a.py").read_text() == "a = 1\n"
