"""Linux ``openat2(2)`` through ``ctypes`` (stdlib only).

``openat2`` resolves a whole relative path inside the kernel, and with
``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`` it refuses any step that
would leave the starting directory or cross a symbolic link (``docs/architecture.md``, "File I/O").
It exists since Linux 5.6; the system call number is 437 on every architecture that has it
(x86_64 and aarch64 are the ones this module enables). Where it is missing, or a seccomp
filter refuses it, :func:`available` is ``False`` and callers use the component walk.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

__all__ = ["RESOLVE_FLAGS", "available", "openat2"]

_SYS_OPENAT2 = 437
_ARCHES = frozenset({"x86_64", "amd64", "aarch64", "arm64"})

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
#: The resolve flags every call uses.
RESOLVE_FLAGS = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS


@functools.cache
def _load() -> tuple[Any, Any, Any, Any]:
    """``syscall``, the ``open_how`` structure, the call number and the structure's size.

    ctypes is imported here, on the first call, not when the package is: importing
    flow-safeio (``flow status`` does, for one path rule) must not pay for it.
    """
    import ctypes

    class OpenHow(ctypes.Structure):
        _fields_ = (
            ("flags", ctypes.c_uint64),
            ("mode", ctypes.c_uint64),
            ("resolve", ctypes.c_uint64),
        )

    libc = ctypes.CDLL(None, use_errno=True)
    fn = libc.syscall
    fn.restype = ctypes.c_long
    # No argtypes: every argument below is passed as an explicit ctypes value or pointer,
    # which is both correct for the variadic syscall(2) and cheaper per call.
    return fn, OpenHow, ctypes.c_long(_SYS_OPENAT2), ctypes.c_size_t(ctypes.sizeof(OpenHow))


@functools.lru_cache(maxsize=64)
def _how(flags: int, mode: int) -> tuple[Any, Any]:
    # Read-only after creation, so one instance per (flags, mode) is shared by all threads.
    import ctypes

    how = _load()[1](flags, mode, RESOLVE_FLAGS)
    return how, ctypes.byref(how)


def openat2(dir_fd: int, path: str, flags: int, mode: int = 0) -> int:
    """Open ``path`` beneath ``dir_fd`` with :data:`RESOLVE_FLAGS`.

    Args:
        dir_fd: An open directory descriptor the path is resolved from.
        path: A relative path (already validated by the caller).
        flags: ``os.O_*`` open flags.
        mode: Permission bits, only with ``O_CREAT`` (``openat2`` refuses them otherwise).

    Returns:
        The new file descriptor (close-on-exec only if ``flags`` asks for it).

    Raises:
        OSError: With the kernel's errno: ``ELOOP`` for a symbolic link on the way,
            ``EXDEV`` for a step outside ``dir_fd``, ``ENOENT``, ``ENOTDIR``, ``EAGAIN``
            (a concurrent rename; the caller may retry), ``ENOSYS`` where unsupported.
    """
    import ctypes

    fn, _, nr, size = _load()
    fd = int(fn(nr, ctypes.c_int(dir_fd), os.fsencode(path), _how(flags, mode)[1], size))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return fd


@functools.cache
def available() -> bool:
    """Whether this process can use ``openat2`` (probed once, then cached)."""
    import platform

    if not sys.platform.startswith("linux") or platform.machine().lower() not in _ARCHES:
        return False
    try:
        fd = openat2(-100, ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # AT_FDCWD
    except (OSError, AttributeError):
        # ENOSYS (old kernel), EPERM (seccomp), or a libc without syscall().
        return False
    os.close(fd)
    return True
