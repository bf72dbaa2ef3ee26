"""``[sandbox]``: how named checks are jailed (bubblewrap, a clean environment, limits).

A check's argv is fixed by the operator, but what it runs is workspace code the model may just
have written, so Flow runs every check in a jail by default. The jail itself is built by
``flow_core.verify._sandbox``; this module only holds the operator's settings.

Example (every key optional; these are the defaults)::

    [sandbox]
    mode = "auto"            # "auto" | "bwrap" | "off"
    network = false
    env = ["PATH", "LANG", "LC_*", "TERM", "TZ"]
    readable = []            # extra absolute host paths made visible read-only
    caches = []              # workspace folders kept across checks, e.g. [".pytest_cache"]
    file_size_mib = 128
    address_space_mib = 8192
    open_files = 1024
    processes = 512
    memory_mib = 4096        # all of a check's processes together
    disk_mib = 1024          # all a check writes: its copy, /tmp (and HOME), /dev/shm
    cpus = 0                 # CPUs' worth of time a check may use; 0: all but one
    cpu_seconds = 0          # CPU time all of a check's processes may use; 0: no total
    check_uid = 65533        # the check's user and group when Flow runs as root
    check_gid = 65533
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

__all__ = ["DEFAULT_SANDBOX_ENV", "SandboxConfig", "SandboxMode"]

SandboxMode = Literal["auto", "bwrap", "off"]

#: Environment variables a jailed check receives by default (``*`` matches any suffix).
DEFAULT_SANDBOX_ENV: tuple[str, ...] = ("PATH", "LANG", "LC_*", "TERM", "TZ")

_ENV_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")


class SandboxConfig(BaseModel):
    """``[sandbox]``: the jail every named check runs in.

    Attributes:
        mode: ``"auto"`` (default): bubblewrap when ``bwrap`` is usable on this machine, else
            the check runs unjailed (still with the clean environment, private ``HOME`` and
            limits) and every report says so; ``"bwrap"``: refuse to run checks when
            bubblewrap is unusable (``sandbox_unavailable``, CLI exit 2); ``"off"``: no jail,
            no environment filtering, no limits (the check inherits Flow's environment).
        network: when false (default) the jail has its own network namespace with only a
            loopback interface: nothing outside it, not even the host's 127.0.0.1, is
            reachable.
        env: names of the environment variables passed through from Flow's environment; a
            trailing ``*`` matches any suffix (``LC_*``). ``HOME`` is always an empty private
            directory and ``TMPDIR`` is unset or ``/tmp``; every other variable is dropped.
        readable: absolute host paths made visible read-only inside the jail in addition to
            what Flow exposes itself (the system folders, a small ``/etc`` and the check's
            toolchain: ``verify/_jail_root.py``): anything else on the host a check reads,
            such as a data folder, a tool's own config, or ``/etc/gitconfig``.
        caches: workspace-relative folders a check may keep across checks (e.g.
            ``.mypy_cache``); each lies in Flow's cache folder
            (``$XDG_CACHE_HOME/flow/check-caches/<workspace>/``, ``verify/_caches.py``), never
            in the user's tree, and is bound read-write at its place in the check's copy.
            Off by default: what one check leaves there, the next one reads (a poisoned
            cache can change what a later check runs), so each result names them in
            ``sandbox_reason``. Bounded per file (``file_size_mib``), not by ``disk_mib``.
        file_size_mib: largest file a check may write, in MiB (``RLIMIT_FSIZE``).
        address_space_mib: virtual memory per process, in MiB (``RLIMIT_AS``).
        open_files: open file descriptors per process (``RLIMIT_NOFILE``).
        processes: processes and threads alive at once in the jail (a ``pids`` cgroup, which
            also binds root; see the flow-core README for where it cannot be created).
        memory_mib: memory of all the check's processes together, in MiB (a ``memory``
            cgroup); past it the kernel ends the check and its status is ``limit``.
        disk_mib: what a check may write in all, in MiB: its edits and new files in its
            private copy, ``/tmp`` (which holds ``HOME``) and ``/dev/shm`` together, on a
            tmpfs of its own (``verify/_disk.py``; where Flow cannot mount one, bubblewrap's,
            with ``/dev/shm`` an eighth of it); past it a write fails with ``ENOSPC`` and a check
            that ends with it full has status ``limit``. Its pages also count against
            ``memory_mib``.
        cpus: how many CPUs' worth of time the check's processes together may use (a ``cpu``
            cgroup quota; fractions allowed); 0 (default): all CPUs but one, at least one.
        cpu_seconds: CPU time, in seconds, all the check's processes together may use (a
            ``cpuacct`` cgroup v1 or cgroup v2 ``cpu.stat``, read every 0.1 s); past it the
            check is ended with status ``limit``. 0 (default): no total beyond what ``cpus``
            and the check's ``timeout`` allow (at most ``cpus`` times the timeout).

        check_uid / check_gid: when Flow runs as root, the unprivileged user and group a
            jailed check runs as (default 65533, an id no distribution gives out); the private
            copy of the workspace the check runs on is theirs. Not root: the check keeps
            Flow's own ids and no capability.

    Core dumps are always disabled (``RLIMIT_CORE = 0``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    mode: SandboxMode = "auto"
    network: bool = False
    env: tuple[str, ...] = DEFAULT_SANDBOX_ENV
    readable: tuple[str, ...] = ()
    caches: tuple[str, ...] = ()
    file_size_mib: int = Field(default=128, ge=1)
    address_space_mib: int = Field(default=8192, ge=256)
    open_files: int = Field(default=1024, ge=64)
    processes: int = Field(default=512, ge=16)
    memory_mib: int = Field(default=4096, ge=64)
    disk_mib: int = Field(default=1024, ge=16)
    cpus: float = Field(default=0.0, ge=0.0)
    cpu_seconds: float = Field(default=0.0, ge=0.0)
    check_uid: int = Field(default=65533, ge=1, le=4_294_967_294)
    check_gid: int = Field(default=65533, ge=1, le=4_294_967_294)

    @field_validator("env", "readable", "caches", mode="before")
    @classmethod
    def _list_to_tuple(cls, v: Any) -> Any:
        # TOML arrays arrive as lists; strict mode would refuse them for a tuple.
        return tuple(v) if isinstance(v, list) else v

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for i, name in enumerate(v):
            if not _ENV_PATTERN.fullmatch(name):
                raise PydanticCustomError(
                    "env_name",
                    "env[{index}] = {name} is not a variable name (letters, digits, '_', "
                    "optionally ending in '*')",
                    {"index": i, "name": repr(name)},
                )
            if name in ("HOME", "TMPDIR"):
                raise PydanticCustomError(
                    "env_name",
                    "env[{index}] = {name}: Flow sets this variable itself inside the jail",
                    {"index": i, "name": repr(name)},
                )
        return v

    @field_validator("caches")
    @classmethod
    def _cache_folders(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for i, name in enumerate(v):
            norm = os.path.normpath(name) if isinstance(name, str) and name else ""
            parts = norm.split("/")
            if not norm or os.path.isabs(norm) or ".." in parts or norm == "." or "\0" in norm:
                raise PydanticCustomError(
                    "cache_folder",
                    "caches[{index}] = {name} is not a folder path relative to the workspace",
                    {"index": i, "name": repr(name)},
                )
            if parts[0] == ".git":
                raise PydanticCustomError(
                    "cache_folder",
                    "caches[{index}] = {name}: .git is never a cache",
                    {"index": i, "name": repr(name)},
                )
            out.append(norm)
        return tuple(dict.fromkeys(out))

    @field_validator("readable")
    @classmethod
    def _absolute(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for i, path in enumerate(v):
            if not os.path.isabs(path) or "\x00" in path:
                raise PydanticCustomError(
                    "readable_path",
                    "readable[{index}] = {path} is not an absolute path",
                    {"index": i, "path": repr(path)},
                )
        return tuple(os.path.normpath(p) for p in v)

    @field_validator("cpus", "cpu_seconds", mode="before")
    @classmethod
    def _cpus_number(cls, v: Any) -> Any:
        # TOML writes 2 as an integer; strict mode would refuse it for a float.
        return float(v) if isinstance(v, int) and not isinstance(v, bool) else v

    def cpu_limit(self) -> float:
        """CPUs' worth of time for one check: ``cpus``, or all CPUs but one (at least one)."""
        return self.cpus if self.cpus > 0 else float(max(1, (os.cpu_count() or 1) - 1))

    def passes(self, name: str) -> bool:
        """Whether the environment variable ``name`` is passed into the jail."""
        return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in self.env)
