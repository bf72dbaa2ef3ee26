"""Validation of the Neovim socket before and after connecting.

Source: ``docs/architecture.md``, "Rose".

A Neovim socket lets any client that reaches it run arbitrary code as the user, and a fake
Neovim listening where Flow expects the real one would see every file Flow reads and decide
what Flow writes. So the bridge only talks to a socket that is explicitly named and:

* is not a TCP address (refused before any connection attempt);
* is reached through directories nobody else can change: every directory on the way, and
  every symbolic link followed, belongs to the user or to root, and a directory others can
  write must be sticky (``/tmp``), where nobody can rename another user's entries; symbolic
  links are followed one by one (never with ``realpath``), so a link into a world-writable
  directory is judged by where it leads;
* sits in a directory that belongs to the user and that neither group nor others can write,
  so nobody else can put a socket there or swap it;
* is a Unix socket (``lstat``: a symlink in last place is refused) owned by the user;
* cannot be reached by other users: its directory has no group/other bits, or the socket
  itself has none;
* and, once connected, is served by a process of the same user: the peer's uid is read from
  the connected socket (``SO_PEERCRED`` on Linux, ``LOCAL_PEERCRED`` where BSD and macOS
  offer it, the call behind ``getpeereid``), so a socket swapped after the checks is refused.
  Where neither exists the connection is refused (fail closed).
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import stat
import struct
import sys
from pathlib import Path

from flow_rose._errors import editor_error
from flow_safeio import owned_way

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

    Nothing is connected to (the peer is checked after connecting, by :func:`check_peer`).
    The checks, in order: the value is not a TCP address (``host:port``, ``[::1]:6666``, a
    bare IP, ``tcp://...`` or any non-path containing ``:``); it is an absolute path; ``lstat``
    finds a Unix socket there (a symlink is refused); the socket's owner is the current uid;
    the way to its directory is safe (every directory and followed symlink owned by the user
    or root, directories others can write only when sticky; links followed one by one); the
    directory itself belongs to the current uid and has no group/other write bit; and either
    that directory has no group/other bits at all or the socket has none.

    Args:
        path: the value given to ``--nvim`` (a filesystem path).

    Returns:
        The socket path as an absolute ``Path`` (not resolved: the socket itself is not
        followed).

    Raises:
        EditorError: ``editor_socket_tcp`` for an address, ``editor_socket_invalid`` for an
            empty, relative, missing or non-socket path or one owned by someone else,
            ``editor_socket_dir_unsafe`` when another user could replace the socket (its
            directory, or one on the way, is theirs or writable by them),
            ``editor_socket_public`` when other users could reach the socket.
    """
    text = _socket_text(path)
    uid = os.getuid()
    st = _own_socket(text, uid)
    parent, pst = _resolve_parent(text, uid)
    if pst.st_uid != uid or pst.st_mode & 0o022:
        owner = "you" if pst.st_uid == uid else f"uid {pst.st_uid}"
        raise editor_error(
            "editor_socket_dir_unsafe",
            f"the socket's directory {parent!r} (owned by {owner}, mode "
            f"{stat.S_IMODE(pst.st_mode):04o}) must belong to you (uid {uid}) and be writable "
            "by you only, or another user could replace the socket; start Neovim with "
            "--listen in a 0700 directory of yours (for example under $XDG_RUNTIME_DIR)",
        )
    if pst.st_mode & 0o077 == 0 or st.st_mode & 0o077 == 0:
        return Path(text)
    raise editor_error(
        "editor_socket_public",
        f"the socket {text!r} is reachable by other users: its directory {parent!r} has "
        f"group/other bits (mode {stat.S_IMODE(pst.st_mode):04o}) and so does the socket "
        f"(mode {stat.S_IMODE(st.st_mode):04o}); use a 0700 directory or a 0600 socket",
    )


def _socket_text(path: str | os.PathLike[str]) -> str:
    """``path`` as text, once it is known to name a file: not empty, no NUL, not a TCP
    address, absolute.

    Raises:
        EditorError: ``editor_socket_tcp`` or ``editor_socket_invalid``.
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
    return text


def _own_socket(text: str, uid: int) -> os.stat_result:
    """``lstat`` of ``text``, once it is known to be a Unix socket (not a link to one) owned
    by ``uid``.

    Raises:
        EditorError: ``editor_socket_invalid``.
    """
    try:
        st = os.lstat(text)
    except OSError as err:
        raise editor_error(
            "editor_socket_invalid", f"no Neovim socket at {text!r}: {err.strerror}"
        ) from err
    if not stat.S_ISSOCK(st.st_mode):
        raise editor_error("editor_socket_invalid", f"{text!r} is not a Unix socket")
    if st.st_uid != uid:
        raise editor_error(
            "editor_socket_invalid",
            f"the socket {text!r} belongs to uid {st.st_uid}, not to you (uid {uid})",
        )
    return st


def _resolve_parent(text: str, uid: int) -> tuple[str, os.stat_result]:
    """Resolve the socket's directory one component at a time; every step must be safe.

    The walk is flow-safeio's :func:`flow_safeio.owned_way` (the one the operator-config guard
    uses too); this function only words its answer for the socket.

    Returns:
        The resolved directory (absolute, no symlink in it) and its ``lstat`` result.

    Raises:
        EditorError: ``editor_socket_dir_unsafe`` when a directory on the way, or a symbolic
            link followed, belongs to another user (not root), or a directory others can
            write is not sticky; ``editor_socket_invalid`` when the way cannot be resolved.
    """
    reached, problem = owned_way(os.path.dirname(text), uid=uid)
    if problem is None:
        return reached, os.lstat(reached)
    path = problem.path
    if problem.reason == "unresolvable":
        raise editor_error("editor_socket_invalid", f"cannot resolve {path!r}: {problem.detail}")
    if problem.reason == "not_directory":
        raise editor_error("editor_socket_invalid", f"{path!r} is not a directory")
    if problem.reason in ("link_owner", "link_loop"):
        raise editor_error(
            "editor_socket_dir_unsafe",
            f"the symbolic link {path!r} on the way to the socket {problem.describe()}, "
            "who could point it elsewhere; name the socket by a path you control",
        )
    if problem.reason == "owner":
        raise editor_error(
            "editor_socket_dir_unsafe",
            f"the directory {path!r} on the way to the socket belongs to uid {problem.uid}, "
            "who could replace what lies below it; use a socket under directories you or "
            "root own",
        )
    raise editor_error(
        "editor_socket_dir_unsafe",
        f"the directory {path!r} on the way to the socket is writable by others "
        f"(mode {problem.mode:04o}) and not sticky, so anyone could replace "
        "what lies below it; use a 0700 directory of yours",
    )


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a connected Unix socket, if readable.

    Linux: ``SO_PEERCRED`` (``struct ucred``: pid, uid, gid). macOS and the BSDs:
    ``LOCAL_PEERCRED`` (``struct xucred``: version, uid, ...), which ``getpeereid`` uses.

    Returns:
        The peer's uid (as the peer had it when it called ``listen``), or None where the
        platform offers neither option.

    Raises:
        OSError: the option exists but the kernel refused it (not a Unix socket, closed).
    """
    so_peercred = getattr(socket, "SO_PEERCRED", None)
    if so_peercred is not None:
        raw = sock.getsockopt(socket.SOL_SOCKET, so_peercred, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", raw)
        return int(uid)
    local_peercred = getattr(socket, "LOCAL_PEERCRED", 0x001 if sys.platform == "darwin" else None)
    if local_peercred is not None:
        raw = sock.getsockopt(0, local_peercred, struct.calcsize("Ii") + 2 + 2 + 16 * 4)
        _version, uid = struct.unpack_from("Ii", raw)
        return int(uid)
    return None


def check_peer(sock: socket.socket, path: str) -> None:
    """Refuse a connected socket whose peer is not this process's user.

    Raises:
        EditorError: ``editor_socket_peer`` when the peer's uid differs or cannot be read.
    """
    uid = os.getuid()
    try:
        found = peer_uid(sock)
    except OSError as err:
        raise editor_error(
            "editor_socket_peer", f"cannot read the uid of the process behind {path!r}: {err}"
        ) from err
    if found is None:
        raise editor_error(
            "editor_socket_peer",
            f"cannot read the uid of the process behind {path!r} on this platform "
            "(no SO_PEERCRED or LOCAL_PEERCRED); Flow does not connect to an unverified peer",
        )
    if found != uid:
        raise editor_error(
            "editor_socket_peer",
            f"the process listening on {path!r} runs as uid {found}, not as you (uid {uid}); "
            "the socket may have been replaced after it was checked; refusing to use it",
        )
