"""The check jail's minimal root: the system folders, a small ``/etc``, and who is who.

bubblewrap starts from an empty root (a tmpfs of its own); nothing of the host is there
unless a mount option puts it there. ``flow_core.verify._jail_argv`` adds, in this order,
what this module lists (``docs/architecture.md``, "Sandbox": sees only what it needs):

- the system folders ``/usr``, ``/bin``, ``/sbin``, ``/lib*`` read-only, each one that is a
  symlink on the host (a merged ``/usr``) made again as the same symlink;
- ``/etc`` with only what programs and libraries read to run: the dynamic linker's cache,
  name-service and time-zone files, certificate stores, toolchain configuration that ``/usr``
  points into (``alternatives``, ``python3*``, ``java-*``, ``perl``); ``resolv.conf`` only
  when the check has the network. Its regular files are copies made for each check
  (``--file``: no mount), its folders read-only binds. Password and group files are
  generated (``identity_files``): root, the check's user and ``nobody``, nothing else;
- ``/var/tmp`` as a link to the jail's private ``/tmp``, ``/etc/mtab`` as a link to the
  jail's own mount table.

Everything else the host holds (``/opt``, ``/srv``, ``/var``, ``/home``, ``/root``, ``/run``,
``/mnt``, ``/sys``, sockets and FIFOs anywhere in them) is absent unless the check's
toolchain lies there or the operator names it in ``sandbox.readable``. The rule follows
Flatpak's bubblewrap profile (a runtime's ``/usr`` plus chosen ``/etc`` files and generated
``passwd``/``group``).
"""

from __future__ import annotations

import functools
import glob
import os
import pwd
import stat
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ETC",
    "SYSTEM",
    "EtcPlan",
    "etc_plan",
    "identity_files",
    "open_etc_files",
    "system_binds",
]

#: Top-level host folders of programs and libraries, shown read-only.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

#: ``/etc`` entries (globs, relative to ``/etc``) a toolchain may read to run.
ETC = (
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "crypto-policies",
    "gai.conf",
    "host.conf",
    "hosts",
    "inputrc",
    "java-*",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "localtime",
    "magic",
    "magic.mime",
    "mime.types",
    "networks",
    "nsswitch.conf",
    "os-release",
    "perl",
    "pki/ca-trust",
    "pki/tls/certs",
    "pki/tls/openssl.cnf",
    "protocols",
    "python3*",
    "services",
    "ssl/certs",
    "ssl/openssl.cnf",
    "terminfo",
    "timezone",
)

#: ``/etc`` entries shown only when the check has the network.
NETWORK_ETC = ("resolv.conf",)

#: The name the check's user has inside the jail when Flow chose its uid.
CHECK_NAME = "flow-check"


def system_binds() -> list[str]:
    """bubblewrap options showing ``SYSTEM``: a symlink again as a symlink, a folder read-only.

    Returns:
        Options in order (``--symlink TARGET PATH`` / ``--ro-bind PATH PATH``); folders the
        host lacks are left out.
    """
    out: list[str] = []
    for path in SYSTEM:
        if os.path.islink(path):
            out += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            out += ["--ro-bind", path, path]
    return out


def _visible(path: str) -> bool:
    """Whether ``path`` lies in a ``SYSTEM`` folder (already shown in the jail)."""
    real = os.path.realpath(path)
    for top in SYSTEM:
        base = os.path.realpath(top)
        if real == base or real.startswith(base.rstrip("/") + "/"):
            return True
    return False


@dataclass(frozen=True)
class EtcPlan:
    """The jail's ``/etc`` (``etc_plan``).

    Attributes:
        options: bubblewrap options in order: ``/etc`` and the folders above each entry
            (``0755``), links kept as links, folders bound read-only, ``/etc/mtab``.
        files: host files copied into the jail's ``/etc`` at the same path
            (``open_etc_files``, then bubblewrap's ``--file``): a copy costs bubblewrap no
            mount, where a bind costs it a mount, a read-only remount and a read of the
            mount table each.
        made: the folders ``options`` makes.
    """

    options: tuple[str, ...]
    files: tuple[str, ...]
    made: frozenset[str]


#: ``etc_plan`` per ``(network, /etc's inode and mtime)``.
_ETC_CACHE: dict[tuple[bool, int, int], EtcPlan] = {}


def etc_plan(network: bool) -> EtcPlan:
    """How the jail's ``/etc`` is made from the host's chosen entries.

    A symlink pointing into a shown system folder (``/etc/localtime``) stays a symlink, so
    programs that read its target still can; a regular file (or a link to one elsewhere,
    such as ``resolv.conf`` into ``/run``) is copied; a folder is bound read-only. Parent
    folders are made ``0755``: bubblewrap would make them ``0700``, closed to the check's user.
    Worked out once per process while ``/etc`` itself is unchanged (an entry added, removed
    or replaced changes its mtime); the files are read again for every check.

    Args:
        network: whether ``NETWORK_ETC`` is shown too.
    """
    try:
        st = os.stat("/etc")
    except OSError:
        return _etc_plan(network)
    key = (network, st.st_ino, st.st_mtime_ns)
    if key not in _ETC_CACHE:
        _ETC_CACHE[key] = _etc_plan(network)
    return _ETC_CACHE[key]


def _etc_plan(network: bool) -> EtcPlan:
    out = ["--perms", "0755", "--dir", "/etc"]
    made = {"/etc"}
    files: list[str] = []
    names = [*ETC, *(NETWORK_ETC if network else ())]
    for path in sorted({p for name in names for p in glob.glob(os.path.join("/etc", name))}):
        parent = os.path.dirname(path)
        if parent not in made:
            made.add(parent)
            out += ["--perms", "0755", "--dir", parent]
        target = os.readlink(path) if os.path.islink(path) else None
        if target is not None and _visible(path):
            out += ["--symlink", target, path]
        elif os.path.isfile(path):
            files.append(path)
        elif os.path.exists(path):
            out += ["--ro-bind-try", path, path]
    out += ["--symlink", "../proc/self/mounts", "/etc/mtab"]
    return EtcPlan(tuple(out), tuple(files), frozenset(made))


def open_etc_files(plan: EtcPlan) -> list[tuple[int, str]]:
    """``(read-only descriptor, path)`` for each of ``plan.files`` that is still a regular
    file (never blocks on a FIFO put in its place); the caller closes them."""
    out: list[tuple[int, str]] = []
    try:
        for path in plan.files:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
            except OSError:
                continue
            out.append((fd, path))
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(out.pop()[0])
    except BaseException:
        for fd, _ in out:
            os.close(fd)
        raise
    return out


@functools.lru_cache(maxsize=16)
def _user_name(uid: int) -> str:
    """The host's name for ``uid`` (asked once per process), or ``CHECK_NAME``."""
    if uid == 0:
        return "root"
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return CHECK_NAME


def identity_files(uid: int, gid: int, home: str) -> tuple[bytes, bytes]:
    """``/etc/passwd`` and ``/etc/group`` for the jail: root, the check's user, ``nobody``.

    Args:
        uid / gid: the check's user and group as seen inside the jail.
        home: the check's private ``HOME``.

    Returns:
        ``(passwd, group)`` in the ``passwd(5)`` / ``group(5)`` formats. The check's user is
        named as on the host when the host knows its uid, else ``flow-check``.
    """
    name = _user_name(uid)
    users = [("root", 0, 0, "/root"), ("nobody", 65534, 65534, "/nonexistent")]
    users = [u for u in users if u[1] != uid and u[0] != name]
    users.insert(0 if uid == 0 else 1, (name, uid, gid, home))
    groups = [(n, g) for n, g in (("root", 0), ("nogroup", 65534)) if g != gid and n != name]
    groups.insert(0 if gid == 0 else 1, (name, gid))
    passwd = "".join(f"{n}:x:{u}:{g}::{h}:/bin/sh\n" for n, u, g, h in users)
    group = "".join(f"{n}:x:{g}:\n" for n, g in groups)
    return passwd.encode(), group.encode()


def data_fds(contents: Sequence[bytes]) -> list[int]:
    """One pipe per item, filled and closed for writing: the read ends, for ``--ro-bind-data``.

    Raises:
        OSError: a pipe could not be made (none is left open), or an item is larger than a
            pipe holds without a reader (64 KiB on Linux).
    """
    fds: list[int] = []
    try:
        for data in contents:
            read_fd, write_fd = os.pipe()
            fds.append(read_fd)
            try:
                os.set_blocking(write_fd, False)
                if os.write(write_fd, data) != len(data):
                    raise OSError("jail file larger than a pipe holds")
            finally:
                os.close(write_fd)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds
