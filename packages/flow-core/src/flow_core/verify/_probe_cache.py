"""A usable bubblewrap probe, remembered for ``flow status`` across processes.

``flow status`` reports whether a check jail can start here (``verify/_probe.py``), and the
only way to know is to start one: a ``bwrap`` process that sets up its namespaces and runs
``true``, tens of milliseconds of a command that otherwise only reads its config. A probe that
succeeded is kept in ``$XDG_CACHE_HOME/flow/bwrap-probe.json`` (``flow_core._xdg.cache_dir``)
with what it depended on, and a later ``flow status`` uses it only when all of that is
unchanged and it is under ``MAX_AGE_S`` old:

- the ``bwrap`` file (path, device, inode, size, mode, owner, modification and change times:
  a reinstall or a setuid change is a new file);
- the probe's own command line (the user the check runs as, ``setpriv``, the namespace and
  capability flags, ``true``) and ``PATH``;
- Flow's user and group, its capability sets, ``NoNewPrivs`` and seccomp state, and its user,
  mount and pid namespaces (another container or login sees another entry);
- the boot (``/proc/sys/kernel/random/boot_id``) and the sysctls that allow or refuse user
  namespaces (``unprivileged_userns_clone``, ``max_user_namespaces``,
  ``max_mnt_namespaces``, ``apparmor_restrict_unprivileged_userns``).

A failed probe is never kept (a fixed machine shows at once), and the jail itself never reads
this file: ``prepare_jail`` and ``require_sandbox`` probe in the process that runs the check.
Reading or writing the file never fails a command; it is written to a temporary file in the
same folder and renamed over (atomic on POSIX).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

from flow_core._xdg import cache_dir

__all__ = ["MAX_AGE_S", "probe_key", "recall", "remember"]

#: Seconds a remembered probe stays good, however unchanged the machine looks.
MAX_AGE_S = 600.0
_NAME = "bwrap-probe.json"
_FORMAT = 1
_SYSCTLS = (
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/user/max_mnt_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    "/proc/sys/kernel/random/boot_id",
)
_STATUS_FIELDS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def probe_key(exe: str, argv: Sequence[str], search: str) -> dict[str, Any] | None:
    """What a probe of ``argv`` (``exe`` first) under ``PATH`` ``search`` depends on.

    Returns:
        A JSON-able mapping, or None when ``exe`` cannot be examined (then nothing is kept).
    """
    try:
        st = os.stat(exe)
    except OSError:
        return None
    status = _read("/proc/self/status") or ""
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {
        "format": _FORMAT,
        "bwrap": [exe, st.st_dev, st.st_ino, st.st_size, st.st_mode, st.st_uid, st.st_gid],
        "bwrap_times": [st.st_mtime_ns, st.st_ctime_ns],
        "argv": list(argv),
        "path": search,
        "ids": [os.geteuid(), os.getegid(), os.getuid(), os.getgid()],
        "status": {k: fields.get(k, "").strip() for k in _STATUS_FIELDS},
        "ns": {n: _link(f"/proc/self/ns/{n}") for n in ("user", "mnt", "pid")},
        "sysctl": {p: _read(p) for p in _SYSCTLS},
    }


def recall(key: dict[str, Any], environ: Mapping[str, str] | None = None) -> bool:
    """True when a usable probe was remembered under ``key`` less than ``MAX_AGE_S`` ago."""
    try:
        with open(cache_dir(environ) / _NAME, encoding="utf-8") as fh:
            entry = json.load(fh)
    except (OSError, ValueError):
        return False
    if not isinstance(entry, dict) or entry.get("key") != key:
        return False
    at = entry.get("at")
    age = time.time() - at if isinstance(at, (int, float)) else -1.0
    return entry.get("usable") is True and 0.0 <= age < MAX_AGE_S


def remember(key: dict[str, Any], environ: Mapping[str, str] | None = None) -> None:
    """Keep a usable probe under ``key`` (best effort: any error leaves nothing behind)."""
    folder = cache_dir(environ)
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".bwrap-probe-", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"key": key, "usable": True, "at": time.time()}, fh)
            os.replace(tmp, folder / _NAME)
        except OSError:
            os.unlink(tmp)
            raise
