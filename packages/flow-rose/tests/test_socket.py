"""Socket validation: TCP, public, missing and non-socket paths are refused before connecting."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
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


def test_world_writable_directory_with_open_socket_is_refused(short_dir: Path) -> None:
    shared = short_dir / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    path = shared / "nvim.sock"
    s = _bind(path, 0o770)
    try:
        with pytest.raises(EditorError) as excinfo:
            validate_socket(path)
        assert _code(excinfo) == "editor_socket_public"
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
