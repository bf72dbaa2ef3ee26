"""Socket validation: TCP, public, missing and non-socket paths are refused before connecting."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flow_core import EditorError
from flow_rose import DEFAULT_TIMEOUT, MAX_TIMEOUT, MIN_TIMEOUT, RoseBridge, validate_socket


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # AF_UNIX paths are limited to ~108 bytes: keep them short, outside pytest's tmp_path.
    d = Path(tempfile.mkdtemp(prefix="frs-"))
    try:
        yield d
    finally:
        for p in sorted(d.rglob("*"), reverse=True):
            p.unlink() if not p.is_dir() or p.is_symlink() else p.rmdir()
        d.rmdir()


def _bind(path: Path, mode: int | None = None) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.listen(1)
    if mode is not None:
        os.chmod(path, mode)
    return s


def _code(excinfo: pytest.ExceptionInfo[EditorError]) -> str:
    return excinfo.value.code


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1:6666",
        "localhost:6666",
        "[::1]:6666",
        "::1",
        "127.0.0.1",
        "tcp://127.0.0.1:6666",
        "example.org:80",
        "host:",
    ],
)
def test_tcp_addresses_are_refused(address: str) -> None:
    with pytest.raises(EditorError) as excinfo:
        validate_socket(address)
    assert _code(excinfo) == "editor_socket_tcp"


def test_tcp_address_refused_by_connect_before_any_connection() -> None:
    with pytest.raises(EditorError) as excinfo:
        RoseBridge.connect("127.0.0.1:6666", workspace=".", timeout=1.0)
    assert _code(excinfo) == "editor_socket_tcp"


@pytest.mark.parametrize("value", ["", "   ", "relative/nvim.sock", "nvim.sock"])
def test_empty_and_relative_paths_are_refused(value: str) -> None:
    with pytest.raises(EditorError) as excinfo:
        validate_socket(value)
    assert _code(excinfo) == "editor_socket_invalid"


def test_missing_socket_is_refused(short_dir: Path) -> None:
    with pytest.raises(EditorError) as excinfo:
        validate_socket(short_dir / "absent.sock")
    assert _code(excinfo) == "editor_socket_invalid"


def test_regular_file_is_refused(short_dir: Path) -> None:
    f = short_dir / "plain"
    f.write_text("x")
    with pytest.raises(EditorError) as excinfo:
        validate_socket(f)
    assert _code(excinfo) == "editor_socket_invalid"


def test_fifo_is_refused(short_dir: Path) -> None:
    f = short_dir / "fifo"
    os.mkfifo(f)
    with pytest.raises(EditorError) as excinfo:
        validate_socket(f)
    assert _code(excinfo) == "editor_socket_invalid"


def test_symlink_to_a_socket_is_refused(short_dir: Path) -> None:
    real = short_dir / "real.sock"
    s = _bind(real)
    try:
        link = short_dir / "link.sock"
        link.symlink_to(real)
        with pytest.raises(EditorError) as excinfo:
            validate_socket(link)
        assert _code(excinfo) == "editor_socket_invalid"
    finally:
        s.close()


def test_socket_in_private_directory_is_accepted(short_dir: Path) -> None:
    assert short_dir.stat().st_mode & 0o777 == 0o700
    path = short_dir / "nvim.sock"
    s = _bind(path, 0o755)  # group/other bits on the socket, but its directory is 0700
    try:
        assert validate_socket(str(path)) == path
    finally:
        s.close()


def test_socket_in_public_directory_is_refused(short_dir: Path) -> None:
    public = short_dir / "pub"
    public.mkdir()
    os.chmod(public, 0o755)
    path = public / "nvim.sock"
    s = _bind(path, 0o755)
    try:
        with pytest.raises(EditorError) as excinfo:
            validate_socket(path)
        assert _code(excinfo) == "editor_socket_public"
        with pytest.raises(EditorError) as excinfo:
            RoseBridge.connect(path, workspace=short_dir, timeout=1.0)
        assert _code(excinfo) == "editor_socket_public"
    finally:
        s.close()


def test_private_socket_in_public_directory_is_accepted(short_dir: Path) -> None:
    public = short_dir / "pub"
    public.mkdir()
    os.chmod(public, 0o755)
    path = public / "nvim.sock"
    s = _bind(path, 0o600)
    try:
        assert validate_socket(path) == path
    finally:
        s.close()


@pytest.mark.parametrize("dir_mode", [0o1777, 0o777, 0o770, 0o720])
@pytest.mark.parametrize("sock_mode", [0o600, 0o770])
def test_a_directory_others_can_write_is_refused_whatever_the_socket_mode(
    short_dir: Path, dir_mode: int, sock_mode: int
) -> None:
    """ "Socket mode alone is enough" is gone: a 0600 socket in a group- or world-writable
    directory (sticky or not) could be replaced by another user, so it is refused."""
    shared = short_dir / "shared"
    shared.mkdir()
    os.chmod(shared, dir_mode)
    path = shared / "nvim.sock"
    s = _bind(path, sock_mode)
    try:
        with pytest.raises(EditorError) as excinfo:
            validate_socket(path)
        assert _code(excinfo) == "editor_socket_dir_unsafe"
        assert "shared" in excinfo.value.message
        with pytest.raises(EditorError) as excinfo:
            RoseBridge.connect(path, workspace=short_dir, timeout=1.0)
        assert _code(excinfo) == "editor_socket_dir_unsafe"
    finally:
        s.close()


def test_absolute_path_with_a_colon_is_a_path_not_tcp(short_dir: Path) -> None:
    path = short_dir / "a:1.sock"
    s = _bind(path)
    try:
        assert validate_socket(path) == path
    finally:
        s.close()


def test_timeout_bounds() -> None:
    assert (MIN_TIMEOUT, DEFAULT_TIMEOUT, MAX_TIMEOUT) == (0.1, 120.0, 660.0)
    for bad in (0.05, 0.0, -1.0, 660.5, 1e9, float("nan"), True):
        with pytest.raises(EditorError) as excinfo:
            RoseBridge.connect("/nonexistent/nvim.sock", workspace=".", timeout=bad)
        assert _code(excinfo) == "editor_timeout_invalid", bad
    # In range, the next check (the socket) is what fails.
    for good in (MIN_TIMEOUT, MAX_TIMEOUT, 5):
        with pytest.raises(EditorError) as excinfo:
            RoseBridge.connect("/nonexistent/nvim.sock", workspace=".", timeout=good)
        assert _code(excinfo) == "editor_socket_invalid"


# --------------------------------------------------------------------------- who owns the way

NOBODY = 65534
needs_root = pytest.mark.skipif(
    not hasattr(os, "getuid") or os.getuid() != 0,
    reason="needs root to hand a directory or a listening process to another uid",
)


@needs_root
def test_private_directory_owned_by_another_user_is_refused(short_dir: Path) -> None:
    theirs = short_dir / "theirs"
    theirs.mkdir(mode=0o700)
    path = theirs / "nvim.sock"
    s = _bind(path, 0o600)
    try:
        assert validate_socket(path) == path  # negative control: ours, it is accepted
        os.chown(theirs, NOBODY, NOBODY)
        with pytest.raises(EditorError) as excinfo:
            validate_socket(path)
        assert _code(excinfo) == "editor_socket_dir_unsafe"
        assert f"uid {NOBODY}" in excinfo.value.message
    finally:
        s.close()


def test_symlinked_directory_into_a_world_writable_one_is_refused(short_dir: Path) -> None:
    public = short_dir / "public"
    public.mkdir()
    os.chmod(public, 0o777)
    private = short_dir / "private"
    private.mkdir(mode=0o700)
    s1 = _bind(public / "nvim.sock", 0o600)
    s2 = _bind(private / "nvim.sock", 0o600)
    try:
        (short_dir / "to-public").symlink_to(public)
        (short_dir / "to-private").symlink_to("private")  # relative link, same rule
        with pytest.raises(EditorError) as excinfo:
            validate_socket(short_dir / "to-public" / "nvim.sock")
        assert _code(excinfo) == "editor_socket_dir_unsafe"
        assert str(public) in excinfo.value.message
        # Negative control: a link into a private directory is fine.
        path = short_dir / "to-private" / "nvim.sock"
        assert validate_socket(path) == path
    finally:
        s1.close()
        s2.close()


def test_a_world_writable_directory_higher_up_is_refused(short_dir: Path) -> None:
    """Anyone may rename ``mine`` away inside a non-sticky world-writable parent and put
    their own directory in its place, so a private directory below one is not enough."""
    open_dir = short_dir / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    mine = open_dir / "mine"
    mine.mkdir(mode=0o700)
    s = _bind(mine / "nvim.sock", 0o600)
    try:
        with pytest.raises(EditorError) as excinfo:
            validate_socket(mine / "nvim.sock")
        assert _code(excinfo) == "editor_socket_dir_unsafe"
        assert str(open_dir) in excinfo.value.message
        os.chmod(open_dir, 0o1777)  # sticky: others can no longer rename our entries
        assert validate_socket(mine / "nvim.sock") == mine / "nvim.sock"
    finally:
        s.close()


@needs_root
def test_a_symlink_owned_by_another_user_is_refused(short_dir: Path) -> None:
    private = short_dir / "private"
    private.mkdir(mode=0o700)
    s = _bind(private / "nvim.sock", 0o600)
    try:
        link = short_dir / "link"
        link.symlink_to(private)
        os.lchown(link, NOBODY, NOBODY)
        with pytest.raises(EditorError) as excinfo:
            validate_socket(link / "nvim.sock")
        assert _code(excinfo) == "editor_socket_dir_unsafe"
    finally:
        s.close()


def test_peer_uid_of_a_connected_socket_is_ours() -> None:
    from flow_rose._socket import peer_uid

    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        assert peer_uid(a) == os.getuid()


IMPOSTOR = """
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o600)
if sys.argv[2] == "setuid":
    os.setgid(65534)
    os.setuid(65534)  # the credentials SO_PEERCRED reports are those of listen()
s.listen(4)
print("ready", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def impostor(short_dir: Path) -> Iterator[Callable[[bool], Path]]:
    """A listener on a socket that passes every path check, run by root or (setuid) nobody."""
    started: list[subprocess.Popen[str]] = []

    def start(as_nobody: bool) -> Path:
        path = short_dir / f"nvim{len(started)}.sock"
        proc = subprocess.Popen(
            [sys.executable, "-c", IMPOSTOR, str(path), "setuid" if as_nobody else "stay"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
        return path

    yield start
    for proc in started:
        proc.kill()
        proc.wait(30)
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.close()
        proc.stdout.close()


@needs_root
def test_a_socket_swapped_for_another_users_listener_is_refused_after_connecting(
    short_dir: Path, impostor: Callable[[bool], Path]
) -> None:
    """The file passes every check (ours, 0600, private directory), but the process behind it
    runs as another user, as after a swap between the check and the connect."""
    from flow_rose._connection import Connection

    ours = impostor(False)
    Connection(str(ours), 5.0).close()  # negative control: our own listener is used
    theirs = impostor(True)
    assert validate_socket(theirs) == theirs  # the path checks cannot see it
    with pytest.raises(EditorError) as excinfo:
        Connection(str(theirs), 5.0)
    assert _code(excinfo) == "editor_socket_peer"
    assert f"uid {NOBODY}" in excinfo.value.message
    with pytest.raises(EditorError) as excinfo:
        RoseBridge.connect(theirs, workspace=short_dir, timeout=5.0)
    assert _code(excinfo) == "editor_socket_peer"
