"""The check jail's seccomp filter: system calls a test never needs and an escape does.

Built with libseccomp (https://github.com/seccomp/libseccomp, ``libseccomp.so.2``, present on
every Debian system since apt depends on it) through ``ctypes``: the library writes the BPF
program for the running architecture (refusing calls from any other ABI) and Flow hands it
to bubblewrap with ``--seccomp FD``. bubblewrap loads it just before it starts the check, so
it binds the check and everything it starts (``seccomp(2)``, filters are inherited and can
only be added to).

Refused with ``EPERM`` (``docs/architecture.md``, "Sandbox"):

- process access: ``ptrace``, ``process_vm_readv``/``writev``;
- mounts and namespaces: ``mount``, ``umount2``, ``pivot_root``, the new mount API
  (``fsopen``, ``fsmount``, ``open_tree``, ...), ``unshare``, ``setns``, and ``clone`` with
  any namespace flag (``clone3``, whose flags a filter cannot read, answers ``ENOSYS`` so libc
  falls back to ``clone``);
- kernel interfaces: ``keyctl``/``add_key``/``request_key``, ``bpf``, ``perf_event_open``,
  ``userfaultfd``, ``open_by_handle_at``, module loading, ``kexec_*``, ``reboot``, and
  ``io_uring_*`` (its operations would bypass every rule here);
- terminal injection: ``ioctl`` ``TIOCSTI`` and ``TIOCLINUX``;
- sockets of any family but ``AF_UNIX``, ``AF_INET`` and ``AF_INET6``; with the network off,
  ``AF_INET`` and ``AF_INET6`` too.

Where libseccomp cannot be loaded, :func:`seccomp_program` returns None and says why; the
jail then runs without the filter and every report says so.
"""

from __future__ import annotations

import ctypes
import errno
import os
import threading

__all__ = ["REFUSED_CALLS", "seccomp_fd", "seccomp_program"]

#: System calls refused outright (names unknown to this architecture are skipped).
REFUSED_CALLS: tuple[str, ...] = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "open_by_handle_at",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
)

_ALLOW = 0x7FFF0000
_CMP_EQ = 4
_CMP_GE = 5
_CMP_MASKED_EQ = 7
#: CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME (``clone(2)``).
_NAMESPACE_FLAGS = (
    0x00020000,
    0x02000000,
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
    0x00000080,
)
_TIOCSTI = 0x5412
_TIOCLINUX = 0x541C
_AF_UNIX, _AF_INET, _AF_INET6 = 1, 2, 10
#: Families above every one Linux defines (``AF_MAX`` is 46 in 6.x) are refused in one rule.
_AF_LIMIT = 64


class _Arg(ctypes.Structure):
    _fields_ = (
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    )


def _errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


_PROGRAMS: dict[bool, tuple[bytes | None, str | None]] = {}
_LOCK = threading.Lock()


def _library() -> ctypes.CDLL:
    """libseccomp by its soname first: the dynamic loader finds it without a subprocess
    (``ctypes.util.find_library`` starts ``ldconfig -p``, a process on every ``flow status``
    and every jailed check); the search is the fallback for a system that names it otherwise.
    """
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        from ctypes import util  # only here: it loads tempfile (``flow status`` needs none)

        name = util.find_library("seccomp")
        if name is None:
            raise
        lib = ctypes.CDLL(name, use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_Arg),
    ]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


def seccomp_program(network: bool) -> tuple[bytes | None, str | None]:
    """The filter as a BPF program (``struct sock_filter`` array), built once per setting.

    Args:
        network: ``sandbox.network``; when False, ``AF_INET``/``AF_INET6`` sockets are refused.

    Returns:
        ``(program, None)``, or ``(None, why)`` when the kernel or libseccomp lacks support.
        Never raises.
    """
    with _LOCK:
        if network not in _PROGRAMS:
            _PROGRAMS[network] = _build(network)
        return _PROGRAMS[network]


def _build(network: bool) -> tuple[bytes | None, str | None]:
    if not os.path.exists("/proc/self/status") or "Seccomp:" not in _status():
        return None, "the kernel has no seccomp filters (no Seccomp: in /proc/self/status)"
    try:
        lib = _library()
    except OSError as err:
        return None, f"libseccomp could not be loaded ({err}); install libseccomp2"
    ctx = lib.seccomp_init(_ALLOW)
    if not ctx:
        return None, "seccomp_init failed"
    try:
        _rules(lib, ctx, network)
        return _export(lib, ctx), None
    except OSError as err:
        return None, f"the seccomp filter could not be built ({err})"
    finally:
        lib.seccomp_release(ctx)


def _status() -> str:
    try:
        with open("/proc/self/status", encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def _rule(lib: ctypes.CDLL, ctx: int, action: int, name: str, *args: tuple[int, int, int]) -> None:
    """Add one rule; ``args`` are ``(argument index, comparison, value[, mask])``."""
    nr = lib.seccomp_syscall_resolve_name(name.encode())
    if nr == -1:  # not a system call on this architecture
        return
    array = (_Arg * max(1, len(args)))()
    for i, (index, op, value) in enumerate(args):
        if op == _CMP_MASKED_EQ:
            array[i] = _Arg(index, op, value, value)
        else:
            array[i] = _Arg(index, op, value, 0)
    rc = lib.seccomp_rule_add_array(ctx, action, nr, len(args), array)
    if rc < 0:
        raise OSError(-rc, f"seccomp rule for {name}: {os.strerror(-rc)}")


def _rules(lib: ctypes.CDLL, ctx: int, network: bool) -> None:
    deny = _errno(errno.EPERM)
    for name in REFUSED_CALLS:
        _rule(lib, ctx, deny, name)
    for flag in _NAMESPACE_FLAGS:  # (flags & flag) == flag
        _rule(lib, ctx, deny, "clone", (0, _CMP_MASKED_EQ, flag))
    _rule(lib, ctx, _errno(errno.ENOSYS), "clone3")
    for request in (_TIOCSTI, _TIOCLINUX):
        _rule(lib, ctx, deny, "ioctl", (1, _CMP_MASKED_EQ, request))
    allowed = {_AF_UNIX, _AF_INET, _AF_INET6} if network else {_AF_UNIX}
    for family in range(_AF_LIMIT):
        if family not in allowed:
            _rule(lib, ctx, _errno(errno.EAFNOSUPPORT), "socket", (0, _CMP_EQ, family))
    _rule(lib, ctx, _errno(errno.EAFNOSUPPORT), "socket", (0, _CMP_GE, _AF_LIMIT))


def _export(lib: ctypes.CDLL, ctx: int) -> bytes:
    fd = os.memfd_create("flow-seccomp", os.MFD_CLOEXEC)
    try:
        rc = lib.seccomp_export_bpf(ctx, fd)
        if rc < 0:
            raise OSError(-rc, f"seccomp_export_bpf: {os.strerror(-rc)}")
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def seccomp_fd(program: bytes) -> int:
    """A fresh descriptor holding ``program`` at offset 0, for bubblewrap's ``--seccomp``.

    Returns:
        A memfd (inheritable: the caller passes it to bubblewrap and closes it after).

    Raises:
        OSError: when no memfd can be made.
    """
    fd = os.memfd_create("flow-seccomp", 0)
    try:
        view = memoryview(program)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
