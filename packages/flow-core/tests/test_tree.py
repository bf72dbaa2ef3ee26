"""The private check tree (``flow_core.verify._tree``): what a copy holds and who owns it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from flow_core.verify._tree import build_tree, plan_workspace


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "pkg" / "__pycache__" / "mod.cpython.pyc").write_bytes(b"\0")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o4755)
    (root / "link").symlink_to("pkg/mod.py")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".venv").mkdir()
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "env2").mkdir()
    (root / "env2" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / ".pytest_cache").mkdir()
    return root


def test_plan_lists_files_and_read_only_folders(ws: Path) -> None:
    plan = plan_workspace(ws)
    assert plan.files == ("link", "pkg/mod.py", "run.sh")
    assert plan.read_only == (".git", ".venv", "env2")


def test_copy_is_private_plain_and_overlaid(ws: Path, tmp_path: Path) -> None:
    plan = plan_workspace(ws)
    tree = build_tree(
        ws,
        plan.files,
        overlay={"pkg/new.py": b"y = 2\n", "run.sh": None},
        mount_points=plan.read_only,
        parent=tmp_path,
    )
    try:
        root = Path(tree.root)
        assert not root.is_relative_to(ws)
        assert (root / "pkg" / "mod.py").read_text() == "x = 1\n"
        assert (root / "pkg" / "new.py").read_text() == "y = 2\n"
        assert not (root / "run.sh").exists()  # overlay None leaves it out
        assert os.readlink(root / "link") == "pkg/mod.py"
        assert sorted(p.name for p in (root / ".git").iterdir()) == []  # an empty mount point
        assert not (root / "pkg" / "__pycache__").exists()
        (root / "pkg" / "mod.py").write_text("changed")
        assert (ws / "pkg" / "mod.py").read_text() == "x = 1\n"
        assert (tree.files, tree.bytes) == (3, 12)
    finally:
        tree.close()
    assert not root.exists()


def test_set_id_bits_are_never_copied(ws: Path, tmp_path: Path) -> None:
    tree = build_tree(ws, ["run.sh"], parent=tmp_path)
    try:
        mode = stat.S_IMODE((Path(tree.root) / "run.sh").stat().st_mode)
        assert mode == 0o755
    finally:
        tree.close()


def test_a_path_through_a_link_is_not_followed(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("host")
    (ws / "door").symlink_to(outside)
    tree = build_tree(ws, ["door/secret", "../outside/secret", "pkg/mod.py"], parent=tmp_path)
    try:
        root = Path(tree.root)
        assert not (root / "door").exists()
        assert tree.files == 1
    finally:
        tree.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another user needs root")
def test_owned_by_the_check_user(ws: Path, tmp_path: Path) -> None:
    tree = build_tree(ws, ["pkg/mod.py"], owner=(65533, 65533), parent=tmp_path)
    try:
        root = Path(tree.root)
        for path in (root, root / "pkg", root / "pkg" / "mod.py"):
            st = path.stat()
            assert (st.st_uid, st.st_gid) == (65533, 65533)
    finally:
        tree.close()
