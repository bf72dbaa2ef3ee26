"""Validation of the Neovim socket before anything connects to it (seed: "Rose integration").

A Neovim socket lets any client that reaches it run arbitrary code as the user, so the bridge
only talks to a socket that is explicitly named, is a Unix socket, belongs to the current user
and cannot be reached by anybody else: either its parent directory is mode 0700 and owned by
the user, or the socket itself has no group/other permission bits. TCP addresses are refused
outright, before any connection attempt.
"""

from __future__ import annotations

import ipaddress
import os
import re
import stat
from pathlib import Path

from flow_rose._errors import editor_error

# host:port, [v6]:port, or a scheme such as tcp://; anything not a path that mentions a port.
_HOST_PORT = re.compile(r"^(?:[a-z][a-z0-9+.-]*://)?\[?[^/\s]*\]?:\d*$", re.IGNORECASE)


def _looks_like_tcp(text: str) -> bool:
    if "://" in text:
        return True
    if _HOST_PORT.match(text):
        return True
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        pass
    else:
        return True
    # Anything with a colon that is not an absolute path is an address, not a file name.
    return ":" in text and not text.startswith("/")


def validate_socket(path: str | os.PathLike[str]) -> Path:
    """Check that ``path`` names a private Unix socket owned by the current user.

    Nothing is connected to. The checks, in order: the value is not a TCP address
    (``host:port``, ``[::1]:6666``, a bare IP, ``tcp://...`` or any non-path containing ``:``);
    it is an absolute path; ``lstat`` finds a Unix socket there (a symlink is refused); the
    socket's owner is the current uid; and either the socket's (resolved) parent directory is
    a directory owned by the current uid with mode 0700 (no group/other bits), or the socket
    itself has no group/other permission bits.

    Args:
        path: the value given to ``--nvim`` (a filesystem path).

    Returns:
        The socket path as an absolute ``Path`` (not resolved: the socket itself is not
        followed).

    Raises:
        EditorError: ``editor_socket_tcp`` for an address, ``editor_socket_invalid`` for an
            empty, relative, missing or non-socket path or one owned by someone else,
            ``editor_socket_public`` when other users could reach the socket.
    """
    text = os.fspath(path)
    if not isinstance(text, str) or not text.strip():
        raise editor_error(
            "editor_socket_invalid", "the Neovim socket path is empty; pass an explicit path"
        )
    if "\0" in text:
        raise editor_error("editor_socket_invalid", "the Neovim socket path contains a NUL byte")
    if _looks_like_tcp(text):
        raise editor_error(
            "editor_socket_tcp",
            f"{text!r} looks like a TCP address; Flow only connects to a private Unix socket "
            "(start Neovim with --listen /a/0700/dir/nvim.sock)",
        )
    if not os.path.isabs(text):
        raise editor_error(
            "editor_socket_invalid", f"the Neovim socket path {text!r} must be absolute"
        )
    try:
        st = os.lstat(text)
    except OSError as err:
        raise editor_error(
            "editor_socket_invalid", f"no Neovim socket at {text!r}: {err.strerror}"
        ) from err
    if not stat.S_ISSOCK(st.st_mode):
        raise editor_error("editor_socket_invalid", f"{text!r} is not a Unix socket")
    uid = os.getuid()
    if st.st_uid != uid:
        raise editor_error(
            "editor_socket_invalid",
            f"the socket {text!r} belongs to uid {st.st_uid}, not to you (uid {uid})",
        )
    if _private_parent(text, uid):
        return Path(text)
    if st.st_mode & 0o077 == 0:
        return Path(text)
    raise editor_error(
        "editor_socket_public",
        f"the socket {text!r} is reachable by other users: its directory is not a 0700 "
        "directory you own and the socket has group/other permission bits "
        f"(mode {stat.S_IMODE(st.st_mode):04o})",
    )


def _private_parent(text: str, uid: int) -> bool:
    parent = os.path.realpath(os.path.dirname(text))
    try:
        pst = os.lstat(parent)
    except OSError:
        return False
    return stat.S_ISDIR(pst.st_mode) and pst.st_uid == uid and pst.st_mode & 0o077 == 0
