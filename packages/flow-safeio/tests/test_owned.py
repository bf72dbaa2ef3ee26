"""owned_way: nobody but the user (or root) can change what lies below a folder.

Source: docs/architecture.md, sections "Evidence" and "Rose" (the operator-config guard and the
Neovim socket check both walk this way).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flow_safeio import change_problem, owned_way


def private(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


@pytest.fixture
def base(tmp_path: Path) -> Path:
    # tmp_path's parents may be group-writable on odd machines; judge only below a private root.
    for folder in (tmp_path, *tmp_path.parents):
        st = folder.stat()
        if change_problem(str(folder), st, uid=os.geteuid()) is not None:
            pytest.skip(f"{folder} is not private on this machine")
    return private(tmp_path / "base")


def test_a_private_folder_is_safe_and_resolved(base: Path) -> None:
    inner = private(base / "a" / "b")
    reached, problem = owned_way(str(inner))
    assert problem is None
    assert reached == os.path.realpath(inner)


def test_a_folder_others_can_write_is_named(base: Path) -> None:
    open_dir = private(base / "open")
    open_dir.chmod(0o777)
    inner = private(open_dir / "inner")
    _, problem = owned_way(str(inner))
    assert problem is not None
    assert (problem.path, problem.reason) == (str(open_dir), "writable")
    assert problem.describe() == "is writable by group and others (mode 777)"


def test_a_sticky_folder_others_can_write_is_accepted(base: Path) -> None:
    sticky = private(base / "sticky")
    sticky.chmod(0o1777)
    _, problem = owned_way(str(private(sticky / "inner")))
    assert problem is None


def test_a_link_is_judged_by_where_it_leads(base: Path) -> None:
    open_dir = private(base / "open")
    open_dir.chmod(0o775)
    target = private(open_dir / "t")
    link = base / "link"
    link.symlink_to(target)
    reached, problem = owned_way(str(link))
    assert problem is not None
    assert (problem.path, problem.reason) == (str(open_dir), "writable")
    assert problem.describe() == "is writable by its group (mode 775)"
    assert reached == str(open_dir)


def test_a_missing_folder_and_a_file_in_the_way(base: Path) -> None:
    _, missing = owned_way(str(base / "nope" / "x"))
    assert missing is not None
    assert missing.reason == "unresolvable"
    (base / "f").write_text("")
    _, file_in_way = owned_way(str(base / "f" / "x"))
    assert file_in_way is not None
    assert file_in_way.reason == "not_directory"


def test_a_link_loop_stops(base: Path) -> None:
    (base / "loop").symlink_to("loop")
    _, problem = owned_way(str(base / "loop"))
    assert problem is not None
    assert problem.reason == "link_loop"


def test_another_owner_is_named(base: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("changing an owner needs root")
    theirs = private(base / "theirs")
    os.chown(theirs, 4242, 4242)
    _, problem = owned_way(str(private(theirs / "inner")))
    assert problem is not None
    assert (problem.reason, problem.uid) == ("owner", 4242)
    link = base / "their-link"
    link.symlink_to(base)
    os.lchown(link, 4242, 4242)
    _, by_link = owned_way(str(link))
    assert by_link is not None
    assert by_link.reason == "link_owner"


def test_a_relative_folder_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="absolute"):
        owned_way("relative/dir")
