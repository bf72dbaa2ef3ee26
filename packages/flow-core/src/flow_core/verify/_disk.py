"""A check's own disk: one tmpfs per check holds everything it can write.

``docs/architecture.md``, "Sandbox" (whole-check limits). When Flow may mount (root, with
``CAP_SYS_ADMIN`` in its mount namespace: where bubblewrap jails as root, it may), each
jailed check gets a tmpfs mounted at a fresh ``flow-disk-PID-XXXXXXXX`` folder in the system
temporary folder, holding:

- ``tree/``: the parent of the check's private copy of the workspace (``verify/_tree.py``);
- ``tmp/`` and ``shm/``: bound at ``/tmp`` (with ``HOME`` in it) and ``/dev/shm`` in the jail.

Once the copy is made, the tmpfs is resized to what the copy uses plus ``sandbox.disk_mib``,
so everything the check writes (edits of its copy, new files there, ``/tmp``, ``HOME``,
``/dev/shm``) stops together with ``ENOSPC`` at ``disk_mib``. ``CheckDisk.full``, read while
the check runs (every 0.1 s, ``Jail._watch``) and after it, says whether it ran into that
bound (less than ``FULL_BYTES`` left): the check's status is then ``limit`` naming
``disk_mib``, also when it deleted what it wrote before it ended. ``CheckDisk.close``
unmounts (lazily: the jail's last process may still be going) and removes the folder; a
Flow killed before that leaves it for the next Flow's sweep (``_cgroup.sweep_once``).

Where a mount is refused (Flow not root, a container without ``CAP_SYS_ADMIN``) there is no
``CheckDisk``. The copy is then made in the system temporary folder and, where bubblewrap has
``--size`` and ``sh`` and ``cp`` are in the system folders, copied again inside the jail onto
one bubblewrap ``--size`` tmpfs (:class:`JailDisk`, ``sized_copy_tools``). bubblewrap binds
only host paths, so that one tmpfs is mounted where it can hold both the workspace's path and
the check's ``/tmp`` (``disk_home``): at the jail's ``/tmp`` when the workspace lies under
``/tmp`` (or ``/var/tmp``, a link to it in the jail), else at the workspace's parent folder,
with ``/tmp`` a link to its ``.flow-tmp`` folder. ``/dev/shm`` is a folder of bubblewrap's
own ``/dev`` and cannot be a link, so it is a tmpfs of its own whose size (``shm_share``:
an eighth of ``disk_mib``) is taken off the first: what the check writes in its copy,
``/tmp``, ``HOME`` and ``/dev/shm`` together stops with ``ENOSPC`` at ``disk_mib``, as root.
Where no such place exists (a workspace right under ``/``, or in a system folder) ``/tmp``
and ``/dev/shm`` are separate tmpfs of ``disk_mib`` each, three times ``disk_mib`` in all,
which ``sandbox_reason`` says. Without ``--size`` or the tools, the copy is bounded only per
file (``file_size_mib``).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field

from flow_core.verify._cgroup import sweep_once

__all__ = [
    "FULL_BYTES",
    "CheckDisk",
    "JailDisk",
    "disk_home",
    "make_disk",
    "shm_share",
    "sized_copy_tools",
]

#: Free space below which the check is taken to have run into ``disk_mib`` (a write that
#: failed with ``ENOSPC`` leaves less than a page).
FULL_BYTES = 1024 * 1024
_MIB = 1024 * 1024
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_REMOUNT = 0x20
_MNT_DETACH = 0x2
_PREFIX = "flow-disk-"


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _mount(target: str, flags: int, options: str) -> None:
    """``mount("tmpfs", target, "tmpfs", flags, options)``; raises OSError."""
    libc = _libc()
    if libc is None:
        raise OSError("the C library cannot be loaded")
    rc = libc.mount(b"tmpfs", os.fsencode(target), b"tmpfs", flags, options.encode())
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), target)


def _unmount(target: str) -> None:
    libc = _libc()
    if libc is not None:
        libc.umount2(os.fsencode(target), _MNT_DETACH)


@dataclass
class CheckDisk:
    """One check's tmpfs (see the module docstring).

    Attributes:
        root: the mount point (a host folder).
        tree / tmp / shm: its ``tree/`` (parent of the private copy), ``tmp/`` and ``shm/``.
    """

    root: str

    @property
    def tree(self) -> str:
        return os.path.join(self.root, "tree")

    @property
    def tmp(self) -> str:
        return os.path.join(self.root, "tmp")

    @property
    def shm(self) -> str:
        return os.path.join(self.root, "shm")

    def _usage(self) -> tuple[int, int]:
        """``(used bytes, free bytes)`` of the tmpfs."""
        st = os.statvfs(self.root)
        return (st.f_blocks - st.f_bfree) * st.f_frsize, st.f_bavail * st.f_frsize

    def bound(self, disk_mib: int) -> None:
        """Resize the tmpfs to what it holds now (the copy) plus ``disk_mib``; raises OSError."""
        used, _ = self._usage()
        size = used + disk_mib * _MIB
        _mount(self.root, _MS_REMOUNT | _MS_NOSUID | _MS_NODEV, f"size={size},mode=0755")

    def full(self) -> bool:
        """Whether less than ``FULL_BYTES`` is left (call after the check, before ``close``)."""
        try:
            return self._usage()[1] < FULL_BYTES
        except OSError:
            return False

    def close(self) -> None:
        """Unmount (lazily) and remove the mount point; never raises."""
        _unmount(self.root)
        with contextlib.suppress(OSError):
            os.rmdir(self.root)


def make_disk(workspace: str) -> tuple[CheckDisk | None, str | None]:
    """Mount a fresh tmpfs for one check (no size bound yet: ``CheckDisk.bound`` sets it).

    Args:
        workspace: the workspace root (the tmpfs is never made inside it).

    Returns:
        ``(disk, None)``, or ``(None, why)`` when Flow may not mount here. Never raises.
    """
    if os.geteuid() != 0:
        return None, "Flow is not root, so it cannot mount a tmpfs for the check"
    base = tempfile.gettempdir()
    if (os.path.realpath(base) + "/").startswith(workspace.rstrip("/") + "/"):
        return None, f"the temporary folder {base} lies inside the workspace"
    sweep_once(base, _PREFIX, lambda path: CheckDisk(path).close())
    try:
        root = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=base)
    except OSError as err:
        return None, f"cannot make a folder in {base} ({err.strerror or err})"
    try:
        _mount(root, _MS_NOSUID | _MS_NODEV, "mode=0755")
    except OSError as err:
        with contextlib.suppress(OSError):
            os.rmdir(root)
        return None, f"cannot mount a tmpfs ({err.strerror or err})"
    disk = CheckDisk(root)
    try:
        os.mkdir(disk.tree, 0o700)
        for folder in (disk.tmp, disk.shm):
            os.mkdir(folder)
            os.chmod(folder, 0o1777)  # noqa: S103 - a /tmp: sticky and shared, as any
    except OSError as err:
        disk.close()
        return None, f"cannot prepare the check's tmpfs ({err.strerror or err})"
    return disk, None


#: Seconds ``JailDisk.attach`` waits for bubblewrap to mount the check's tmpfs.
_ATTACH_TIMEOUT_S = 5.0
#: Where the tools of the in-jail copy are looked for (inside the jail's system folders).
_TOOL_PATH = "/usr/bin:/bin"


@functools.cache
def sized_copy_tools() -> tuple[str, str] | None:
    """``(sh, cp)`` for the copy made inside the jail, or None when either is missing."""
    sh, cp = shutil.which("sh", path=_TOOL_PATH), shutil.which("cp", path=_TOOL_PATH)
    return (sh, cp) if sh is not None and cp is not None else None


#: Folders of the jail the check's one tmpfs is never mounted at or in (``disk_home``).
_NOT_HOME = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/dev",
    "/proc",
)


def disk_home(workspace: str) -> str | None:
    """Where the check's one bubblewrap tmpfs is mounted so that it holds both the workspace's
    path and ``/tmp`` (see the module docstring), or None where no such place exists.

    Args:
        workspace: the workspace's real path.
    """
    for tmp in ("/tmp", "/var/tmp"):  # noqa: S108 - paths inside the jail
        if workspace.startswith(tmp + "/"):
            return "/tmp"  # noqa: S108
    parent = os.path.dirname(workspace.rstrip("/"))
    if parent in ("", "/") or any(parent == p or parent.startswith(p + "/") for p in _NOT_HOME):
        return None
    return parent


def shm_share(disk_mib: int) -> int:
    """Bytes of ``disk_mib`` given to ``/dev/shm`` when the check has one tmpfs (an eighth)."""
    return max(1, disk_mib // 8) * _MIB


@dataclass
class JailDisk:
    """The check's own tmpfs when Flow cannot mount one: bubblewrap's ``--size`` tmpfs (see
    the module docstring), and the ``/dev/shm`` tmpfs that shares its bound.

    Flow holds a descriptor of each, taken from ``/proc/PID/root`` of the jail's pid 1 before
    the check runs (``attach``), so ``full`` still answers after the jail's mounts are gone.

    Attributes:
        place: where it is mounted inside the jail (``disk_home``, or the workspace's path).
        size: its size in bytes (the copy's pages plus ``disk_mib``, less ``shm``).
        shm: the size of ``/dev/shm`` in bytes when it shares the bound (``shm_share``), or 0.
        fds: ``(descriptor, free bytes below which it is full)``, empty before ``attach``.
    """

    place: str
    size: int
    shm: int = 0
    fds: list[tuple[int, int]] = field(default_factory=list)

    def attach(self, pid: int) -> None:
        """Take the descriptors once bubblewrap has mounted the tmpfs (their sizes tell them
        from host folders at the same paths); raises OSError after ``_ATTACH_TIMEOUT_S``."""
        deadline = time.monotonic() + _ATTACH_TIMEOUT_S
        fd = _open_sized(f"/proc/{pid}/root{self.place}", self.size, deadline)
        self.fds.append((fd, FULL_BYTES))
        if self.shm:
            fd = _open_sized(f"/proc/{pid}/root/dev/shm", self.shm, deadline)
            self.fds.append((fd, min(FULL_BYTES, self.shm // 16)))

    def full(self) -> bool:
        """Whether either has less than ``FULL_BYTES`` left (``/dev/shm``: a sixteenth of it
        when that is less); False before ``attach``."""
        for fd, least in self.fds:
            try:
                st = os.fstatvfs(fd)
            except OSError:
                continue
            if st.f_bavail * st.f_frsize < least:
                return True
        return False

    def close(self) -> None:
        """Let the tmpfs go; never raises."""
        for fd, _ in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = []


def _open_sized(where: str, size: int, deadline: float) -> int:
    """A descriptor of the folder ``where`` once a filesystem of ``size`` bytes is mounted
    there; raises OSError past ``deadline``."""
    while True:
        with contextlib.suppress(OSError):
            fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            st = os.fstatvfs(fd)
            if st.f_blocks * st.f_frsize == size:
                return fd
            os.close(fd)
        if time.monotonic() > deadline:
            raise OSError(f"the check's tmpfs did not appear at {where}")
        threading.Event().wait(0.0005)  # bubblewrap is still mounting
