"""Ordinary behaviour of Workspace, on real files, with both resolvers."""

from __future__ import annotations

import contextlib
import os
import pickle
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import flow_safeio
from flow_safeio import (
    ClosedError,
    Entry,
    GeneratedPathError,
    HardLinkError,
    IsDirectoryError,
    Listing,
    NotDirectoryError,
    NotFoundError,
    NotRegularFileError,
    NotTextError,
    ProtectedPathError,
    RootError,
    SafeIOError,
    StaleRootError,
    SymlinkError,
    TooLargeError,
    Workspace,
)

RESOLVERS = ("openat2", "walk")


@pytest.fixture(params=RESOLVERS)
def resolver(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name == "openat2" and not flow_safeio.openat2_available():
        pytest.skip("openat2(2) is not available on this kernel")
    return name


@pytest.fixture
def ws(tmp_path: Path, resolver: str) -> Iterator[Workspace]:
    root = tmp_path / "root"
    root.mkdir()
    w = Workspace(root, max_bytes=1024, protected=["conf/flow.toml"], resolver=resolver)
    yield w
    w.close()


def _root(ws: Workspace) -> Path:
    return Path(ws.root)


# ---------------------------------------------------------------- round trips


def test_every_byte_value_round_trips(ws: Workspace) -> None:
    data = bytes(range(256)) * 2
    ws.write_bytes("bin/all.bin", data)
    assert ws.read_bytes("bin/all.bin") == data
    assert (_root(ws) / "bin" / "all.bin").read_bytes() == data


def test_text_keeps_crlf_and_non_ascii_exactly(ws: Workspace) -> None:
    text = "first\r\nsecond\nthird\r\u00e7\u20ac\U0001f600\n"
    ws.write_text("t.txt", text)
    assert ws.read_text("t.txt") == text
    assert (_root(ws) / "t.txt").read_bytes() == text.encode("utf-8")
    ws.write_text("l1.txt", "caf\u00e9", encoding="latin-1")
    assert (_root(ws) / "l1.txt").read_bytes() == b"caf\xe9"
    assert ws.read_text("l1.txt", encoding="latin-1") == "caf\u00e9"


def test_text_errors_are_not_text(ws: Workspace) -> None:
    (_root(ws) / "bad.txt").write_bytes(b"ok\xff\xfe")
    with pytest.raises(NotTextError) as info:
        ws.read_text("bad.txt")
    assert info.value.code == "not_text"
    with pytest.raises(NotTextError):
        ws.write_text("x.txt", "\udcff")
    assert not (_root(ws) / "x.txt").exists()


def test_empty_file(ws: Workspace) -> None:
    ws.write_bytes("empty", b"")
    assert ws.read_bytes("empty") == b""
    assert ws.stat("empty").size == 0


def test_size_limit_is_inclusive(ws: Workspace) -> None:
    ws.write_bytes("max.bin", b"m" * 1024)
    assert len(ws.read_bytes("max.bin")) == 1024
    with pytest.raises(TooLargeError):
        ws.write_bytes("over.bin", b"o" * 1025)
    assert not (_root(ws) / "over.bin").exists()
    (_root(ws) / "over.bin").write_bytes(b"o" * 1025)
    with pytest.raises(TooLargeError) as info:
        ws.read_bytes("over.bin")
    assert "1025" in str(info.value)


# ---------------------------------------------------------------- atomic writes


def test_write_replaces_by_rename_and_leaves_no_temp(ws: Workspace) -> None:
    ws.write_bytes("f.txt", b"one")
    ino = os.stat(_root(ws) / "f.txt").st_ino
    ws.write_bytes("f.txt", b"two")
    assert (_root(ws) / "f.txt").read_bytes() == b"two"
    assert os.stat(_root(ws) / "f.txt").st_ino != ino  # a new inode was renamed in
    assert sorted(os.listdir(_root(ws))) == ["f.txt"]


def test_mode_of_existing_file_is_kept(ws: Workspace) -> None:
    p = _root(ws) / "script.sh"
    p.write_bytes(b"#!/bin/sh\n")
    p.chmod(0o751)
    ws.write_text("script.sh", "#!/bin/sh\necho hi\n")
    assert stat.S_IMODE(p.stat().st_mode) == 0o751
    p.chmod(0o600)
    ws.write_text("script.sh", "#!/bin/sh\n")
    assert stat.S_IMODE(p.stat().st_mode) == 0o600


def test_an_explicit_mode_is_set_on_a_new_or_existing_file(ws: Workspace) -> None:
    ws.write_bytes("run.sh", b"#!/bin/sh\n", mode=0o750)
    p = _root(ws) / "run.sh"
    assert stat.S_IMODE(p.stat().st_mode) == 0o750
    ws.write_bytes("run.sh", b"#!/bin/sh\necho\n", mode=0o600)
    assert (stat.S_IMODE(p.stat().st_mode), p.read_bytes()) == (0o600, b"#!/bin/sh\necho\n")


def test_new_file_mode_follows_umask(ws: Workspace) -> None:
    old = os.umask(0o027)
    try:
        ws.write_bytes("new.txt", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((_root(ws) / "new.txt").stat().st_mode) == 0o640


def test_missing_parents_are_created(ws: Workspace) -> None:
    ws.write_bytes("a/b/c/d.txt", b"deep")
    assert (_root(ws) / "a" / "b" / "c" / "d.txt").read_bytes() == b"deep"
    assert (_root(ws) / "a" / "b").is_dir()


def test_parent_that_is_a_file_is_refused(ws: Workspace) -> None:
    (_root(ws) / "plain").write_bytes(b"file")
    with pytest.raises(NotDirectoryError) as info:
        ws.write_bytes("plain/child.txt", b"x")
    assert info.value.code == "not_directory"
    with pytest.raises(NotDirectoryError):
        ws.read_bytes("plain/child.txt")
    assert (_root(ws) / "plain").read_bytes() == b"file"


def test_directories_are_not_files(ws: Workspace) -> None:
    (_root(ws) / "d").mkdir()
    for call in (lambda: ws.read_bytes("d"), lambda: ws.write_bytes("d", b"x")):
        with pytest.raises(IsDirectoryError) as info:
            call()
        assert isinstance(info.value, IsADirectoryError)
    with pytest.raises(IsDirectoryError):
        ws.read_bytes(".")
    with pytest.raises(IsDirectoryError):
        ws.write_bytes(".", b"x")


def test_concurrent_writers_leave_one_complete_version(ws: Workspace) -> None:
    payloads = [bytes([65 + i]) * 1000 for i in range(4)]
    errors: list[BaseException] = []

    def hammer(data: bytes) -> None:
        try:
            for _ in range(50):
                ws.write_bytes("shared.bin", data)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=hammer, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    seen: set[bytes] = set()
    while any(t.is_alive() for t in threads):
        with contextlib.suppress(NotFoundError):
            seen.add(ws.read_bytes("shared.bin"))
    for t in threads:
        t.join()
    assert errors == []
    assert ws.read_bytes("shared.bin") in payloads
    assert seen <= set(payloads)  # a reader never saw a mix or a partial file
    assert [n for n in os.listdir(_root(ws)) if n != "shared.bin"] == []


# ---------------------------------------------------------------- refusals on real entries


def test_missing_file_is_not_found(ws: Workspace) -> None:
    with pytest.raises(NotFoundError) as info:
        ws.read_bytes("nope/none.txt")
    assert isinstance(info.value, FileNotFoundError)
    assert info.value.code == "not_found"
    assert "nope/none.txt" in str(info.value)


def test_socket_is_refused(ws: Workspace) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.chdir(_root(ws))  # AF_UNIX paths are short; bind relative to the root
        sock.bind("sock")
    finally:
        os.chdir("/")
    try:
        with pytest.raises(NotRegularFileError) as info:
            ws.read_bytes("sock")
        assert "socket" in str(info.value)
        with pytest.raises(NotRegularFileError):
            ws.write_bytes("sock", b"x")
        assert ws.stat("sock").kind == "other"
    finally:
        sock.close()


def test_hard_linked_file_inside_is_refused(ws: Workspace) -> None:
    (_root(ws) / "one").write_bytes(b"1")
    os.link(_root(ws) / "one", _root(ws) / "two")
    with pytest.raises(HardLinkError):
        ws.read_bytes("one")
    with pytest.raises(HardLinkError):
        ws.write_bytes("two", b"2")
    assert (_root(ws) / "one").read_bytes() == b"1"


def test_symlink_inside_the_root_is_still_refused(ws: Workspace) -> None:
    (_root(ws) / "real.txt").write_bytes(b"r")
    os.symlink("real.txt", _root(ws) / "alias.txt")
    with pytest.raises(SymlinkError):
        ws.read_bytes("alias.txt")
    with pytest.raises(SymlinkError):
        ws.write_bytes("alias.txt", b"w")
    assert os.readlink(_root(ws) / "alias.txt") == "real.txt"


def test_protected_is_readable_not_writable(ws: Workspace) -> None:
    (_root(ws) / "conf").mkdir()
    (_root(ws) / "conf" / "flow.toml").write_bytes(b"k = 1\n")
    assert ws.read_bytes("conf/flow.toml") == b"k = 1\n"
    with pytest.raises(ProtectedPathError) as info:
        ws.write_text("conf/./flow.toml", "k = 2\n")
    assert isinstance(info.value, PermissionError)
    assert (_root(ws) / "conf" / "flow.toml").read_bytes() == b"k = 1\n"
    ws.write_bytes("conf/other.toml", b"ok")  # siblings stay writable
    with pytest.raises(ProtectedPathError):
        ws.write_bytes("CONF/Flow.TOML", b"x")  # the same file on a case-insensitive disk
    assert not (_root(ws) / "CONF").exists()


def test_protected_compares_unicode_normal_forms(tmp_path: Path) -> None:
    with Workspace(tmp_path, protected=["caf\u00e9.toml"]) as w:
        with pytest.raises(ProtectedPathError):
            w.write_bytes("cafe\u0301.toml", b"x")
        w.write_bytes("cafe.toml", b"x")


def test_check_writable_applies_the_write_rules_without_io(tmp_path: Path) -> None:
    with Workspace(tmp_path, protected=["conf/flow.toml"]) as w:
        assert w.check_writable("src//./a.py") == "src/a.py"
        assert not (tmp_path / "src").exists()  # judged, nothing created
        for bad, error in [
            ("CONF/Flow.TOML", ProtectedPathError),
            ("conf/flow.toml", ProtectedPathError),
            ("../x", flow_safeio.InvalidPathError),
            (".git/config", flow_safeio.InvalidPathError),
            (".", flow_safeio.IsDirectoryError),
        ]:
            with pytest.raises(error):
                w.check_writable(bad)
    with pytest.raises(flow_safeio.ClosedError):
        w.check_writable("a.py")


def test_remove_deletes_one_regular_file_by_the_write_rules(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    root = tmp_path / "ws"
    (root / "d").mkdir(parents=True)
    (root / "d" / "a.txt").write_text("x")
    (root / "conf.toml").write_text("k = 1")
    os.symlink(outside, root / "link.txt")
    os.link(outside, root / "hard.txt")
    with Workspace(root, protected=["conf.toml"]) as w:
        w.remove("d/a.txt")
        assert not (root / "d" / "a.txt").exists()
        assert (root / "d").is_dir()  # only the file goes
        for bad, error in [
            ("d/a.txt", flow_safeio.NotFoundError),
            ("conf.toml", ProtectedPathError),
            ("link.txt", flow_safeio.SymlinkError),
            ("hard.txt", flow_safeio.HardLinkError),
            ("d", flow_safeio.IsDirectoryError),
            ("../outside.txt", flow_safeio.InvalidPathError),
        ]:
            with pytest.raises(error):
                w.remove(bad)
    assert (root / "conf.toml").read_text() == "k = 1"
    assert os.path.islink(root / "link.txt")
    assert outside.read_text() == "keep"
    assert os.stat(outside).st_nlink == 2


def test_resolver_choice(tmp_path: Path) -> None:
    with Workspace(tmp_path, resolver="walk") as w:
        assert w.resolver == "walk"
    with Workspace(tmp_path) as w:
        expected = "openat2" if flow_safeio.openat2_available() else "walk"
        assert w.resolver == expected
    with pytest.raises(RootError):
        Workspace(tmp_path, resolver="magic")  # type: ignore[arg-type]


# ---------------------------------------------------------------- metadata, listing, walking


def test_exists_and_stat(ws: Workspace) -> None:
    (_root(ws) / "d").mkdir()
    (_root(ws) / "d" / "f.txt").write_bytes(b"12345")
    os.symlink("/etc/passwd", _root(ws) / "d" / "l")
    assert ws.exists(".")
    assert ws.exists("d/f.txt")
    assert ws.exists("d/l")
    assert not ws.exists("d/missing")
    assert not ws.exists("missing/deeper")
    assert not ws.exists("d/f.txt/below")
    st = ws.stat("d/f.txt")
    assert (st.name, st.path, st.kind, st.size) == ("f.txt", "d/f.txt", "file", 5)
    assert st.mtime_ns == os.stat(_root(ws) / "d" / "f.txt").st_mtime_ns
    assert ws.stat("d/l").kind == "symlink"
    assert ws.stat("d").kind == "dir"
    assert ws.stat(".").path == "."
    with pytest.raises(SymlinkError):
        ws.exists("d/l/x")


def test_list_dir_sorted_with_kinds_and_sizes(ws: Workspace) -> None:
    r = _root(ws)
    (r / "b.txt").write_bytes(b"bb")
    (r / "a.txt").write_bytes(b"a")
    (r / "sub").mkdir()
    os.symlink("a.txt", r / "c-link")
    listing = ws.list_dir()
    assert isinstance(listing, Listing)
    assert isinstance(listing, list)
    assert listing.truncated is False
    assert [(e.name, e.kind, e.size) for e in listing] == [
        ("a.txt", "file", 1),
        ("b.txt", "file", 2),
        ("c-link", "symlink", 0),
        ("sub", "dir", 0),
    ]
    assert all(isinstance(e, Entry) for e in listing)
    (r / "sub" / "x").write_bytes(b"x")
    assert [e.path for e in ws.list_dir("sub")] == ["sub/x"]


def test_list_dir_skips_generated_folders_only(ws: Workspace) -> None:
    r = _root(ws)
    for d in (".git", "node_modules", ".venv", "__pycache__", "build", "dist", "target"):
        (r / d).mkdir()
    (r / ".GIT-not").mkdir()
    (r / "src").mkdir()
    (r / "dist.txt").write_bytes(b"")
    (r / "build.py").write_bytes(b"")
    assert {".git", "node_modules", ".venv", "build", "target"} <= flow_safeio.SKIPPED_DIRS
    assert [e.name for e in ws.list_dir()] == [".GIT-not", "build.py", "dist.txt", "src"]


# One rule for both sides: a folder is left out of listings exactly when writes below it are
# refused. ``myenv`` is a virtual environment only by its pyvenv.cfg (PEP 405).
GENERATED_SPELLINGS = ("Node_Modules", "BUILD", ".Venv", "__PYCACHE__", "myenv")
ORDINARY = ("src", "builds", "env-notes")


def _make_tree(ws: Workspace) -> None:
    r = _root(ws)
    for d in (*GENERATED_SPELLINGS, *ORDINARY):
        (r / d).mkdir()
        (r / d / "a.js").write_bytes(b"x")
    (r / "myenv" / "pyvenv.cfg").write_bytes(b"home = /usr/bin\n")
    (r / "env-notes" / "pyvenv.cfg.txt").write_bytes(b"")


def test_generated_folders_are_hidden_from_listings_in_any_case_or_name(ws: Workspace) -> None:
    _make_tree(ws)
    assert [e.name for e in ws.list_dir()] == sorted(ORDINARY)
    walked = ["builds/a.js", "env-notes/a.js", "env-notes/pyvenv.cfg.txt", "src/a.js"]
    assert list(ws.walk()) == walked


@pytest.mark.parametrize("folder", GENERATED_SPELLINGS)
def test_writes_below_a_generated_folder_are_refused(ws: Workspace, folder: str) -> None:
    _make_tree(ws)
    for rel in (f"{folder}/a.js", f"{folder}/new/deeper/b.py", f"src/{folder}/c.py"):
        if folder == "myenv" and rel.startswith("src/"):
            continue  # src/myenv does not exist, so it holds no marker: an ordinary new folder
        with pytest.raises(GeneratedPathError) as info:
            ws.check_generated(rel)
        assert info.value.code == "generated_path"
        assert isinstance(info.value, PermissionError)
    assert (_root(ws) / folder / "a.js").read_bytes() == b"x"


@pytest.mark.parametrize("folder", ORDINARY)
def test_writes_below_ordinary_folders_pass_the_generated_rule(ws: Workspace, folder: str) -> None:
    _make_tree(ws)
    ws.check_generated(f"{folder}/a.js")
    ws.check_generated(f"{folder}/new/dir/b.py")
    ws.check_generated("node_modules")  # a file of that name is not a folder
    ws.check_generated("src/myenv/x.py")  # a name that is a venv elsewhere, but no marker here


def test_listing_and_write_refusal_agree(ws: Workspace) -> None:
    _make_tree(ws)
    listed = {e.name for e in ws.list_dir()}
    for folder in (*GENERATED_SPELLINGS, *ORDINARY):
        try:
            ws.check_generated(f"{folder}/a.js")
        except GeneratedPathError:
            refused = True
        else:
            refused = False
        assert refused == (folder not in listed), folder


def test_a_link_to_a_virtual_environment_is_not_followed(ws: Workspace) -> None:
    _make_tree(ws)
    os.symlink(_root(ws) / "myenv", _root(ws) / "link")
    ws.check_generated("link/x.py")  # the link is not opened; a write refuses it as a link
    with pytest.raises(SymlinkError):
        ws.write_bytes("link/x.py", b"")


def test_list_dir_cap(ws: Workspace) -> None:
    for i in range(12):
        (_root(ws) / f"f{i:02d}").write_bytes(b"")
    capped = ws.list_dir(limit=5)
    assert [e.name for e in capped] == ["f00", "f01", "f02", "f03", "f04"]
    assert capped.truncated
    exact = ws.list_dir(limit=12)
    assert len(exact) == 12
    assert not exact.truncated
    none = ws.list_dir(limit=0)
    assert list(none) == []
    assert none.truncated


def test_list_dir_of_a_file(ws: Workspace) -> None:
    (_root(ws) / "f").write_bytes(b"")
    with pytest.raises(NotDirectoryError):
        ws.list_dir("f")


def test_walk_is_sorted_bounded_and_skips(ws: Workspace) -> None:
    r = _root(ws)
    for rel in ("b/z.txt", "b/a.txt", "a.txt", "c/d/e.txt", "node_modules/x.js", "c/.git/HEAD"):
        (r / rel).parent.mkdir(parents=True, exist_ok=True)
        (r / rel).write_bytes(b"")
    os.symlink(r / "b", r / "link-to-b")
    os.symlink(r / "a.txt", r / "file-link")
    os.mkfifo(r / "fifo")
    assert list(ws.walk()) == ["a.txt", "b/a.txt", "b/z.txt", "c/d/e.txt"]
    assert list(ws.walk("c")) == ["c/d/e.txt"]
    assert list(ws.walk(limit=2)) == ["a.txt", "b/a.txt"]
    with pytest.raises(NotDirectoryError):
        list(ws.walk("a.txt"))
    with pytest.raises(SymlinkError):
        list(ws.walk("link-to-b"))


# ---------------------------------------------------------------- lifecycle and the root


def test_context_manager_and_close(tmp_path: Path, resolver: str) -> None:
    with Workspace(str(tmp_path), resolver=resolver) as w:
        w.write_bytes("x", b"1")
        assert w.root == str(tmp_path)
        assert w.max_bytes == 262144
        assert w.resolver == resolver
    assert w.closed
    with pytest.raises(ClosedError) as info:
        w.read_bytes("x")
    assert info.value.code == "closed"
    w.close()  # idempotent


def test_root_must_be_an_absolute_existing_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    for bad in ("relative/dir", str(tmp_path / "missing"), str(tmp_path / "file")):
        with pytest.raises(RootError) as info:
            Workspace(bad)
        assert info.value.code == "root_invalid"
    with pytest.raises(RootError):
        Workspace(tmp_path, max_bytes=-1)


def test_renamed_root_is_stale(tmp_path: Path, resolver: str) -> None:
    root = tmp_path / "r"
    root.mkdir()
    (root / "f").write_bytes(b"f")
    with Workspace(root, resolver=resolver) as w:
        assert w.read_bytes("f") == b"f"
        root.rename(tmp_path / "moved")
        with pytest.raises(StaleRootError):
            w.read_bytes("f")
        root.mkdir()  # a different directory under the same name
        (root / "f").write_bytes(b"impostor")
        for call in (
            lambda: w.read_bytes("f"),
            lambda: w.write_bytes("g", b"g"),
            lambda: w.list_dir(),
            lambda: w.exists("f"),
            lambda: w.stat("f"),
            lambda: list(w.walk()),
        ):
            with pytest.raises(StaleRootError) as info:
                call()
            assert info.value.code == "root_stale"
        assert not (root / "g").exists()
        assert not (tmp_path / "moved" / "g").exists()


def test_symlinked_root_path_is_the_operators_choice(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "alias")
    with Workspace(tmp_path / "alias") as w:
        w.write_bytes("f", b"ok")
        assert (tmp_path / "real" / "f").read_bytes() == b"ok"
        os.unlink(tmp_path / "alias")
        os.symlink(tmp_path, tmp_path / "alias")  # repointed: no longer the same directory
        with pytest.raises(StaleRootError):
            w.read_bytes("f")


# ---------------------------------------------------------------- errors


def test_errors_pickle_and_name_path_and_reason() -> None:
    err = SymlinkError("a/b", "b is a symbolic link")
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is SymlinkError
    assert (again.path, again.reason, str(again)) == ("a/b", "b is a symbolic link", str(err))
    assert str(err) == "'a/b': b is a symbolic link"


def test_every_error_class_has_a_documented_code() -> None:
    classes = [
        getattr(flow_safeio, n)
        for n in flow_safeio.__all__
        if isinstance(getattr(flow_safeio, n), type)
        and issubclass(getattr(flow_safeio, n), SafeIOError)
    ]
    codes = {c.code for c in classes}
    assert codes == set(flow_safeio.ERROR_CODES)
    assert len(codes) == len(classes)  # one class per code
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    for code in codes:
        assert f"| `{code}` |" in readme, code
