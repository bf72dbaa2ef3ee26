"""Whether a check jail can start here: the bubblewrap probe and the ``sandbox`` status.

Kept apart from the jail itself (``verify/_sandbox.py``, which builds the private tree, the
mounts, the cgroup and the filter for one check) so that ``flow status``, which only reports
what a check would run in (``docs/architecture.md``, "Sandbox"), loads what the probe needs
and nothing of the jail's construction.
"""

from __future__ import annotations

import os
import shutil
import threading
from dataclasses import dataclass

from flow_core._errors import ConfigError
from flow_core._report import SandboxKind, SandboxStatus
from flow_core.config._sandbox import SandboxConfig
from flow_core.verify import _reaper
from flow_core.verify._cgroup import cgroup_parents
from flow_core.verify._jail_user import TMP, CheckUser, check_user, jail_flags
from flow_core.verify._seccomp import seccomp_program

__all__ = [
    "BWRAP_PACKAGE",
    "UNBOUND",
    "Probe",
    "probe_bwrap",
    "require_sandbox",
    "sandbox_status",
    "search_path",
    "status_probe",
]

#: The Debian/Ubuntu (and Fedora, Arch) package that provides ``bwrap``.
BWRAP_PACKAGE = "bubblewrap"
#: Seconds the probe command may take.
_PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Probe:
    """Whether bubblewrap can start a jail here: ``bwrap`` is its path when usable."""

    usable: bool
    bwrap: str | None
    reason: str | None


_PROBES: dict[tuple[str, CheckUser | None], Probe] = {}
_PROBE_LOCK = threading.Lock()


def probe_bwrap(path_env: str | None = None, user: CheckUser | None = None) -> Probe:
    """Find ``bwrap`` on ``PATH`` and run ``true`` in a jail like a check's (once per path).

    Args:
        path_env: the ``PATH`` to search (default: Flow's own).
        user: who the check runs as (``check_user``); None: Flow's own user.

    Returns:
        A ``Probe``; ``reason`` names what failed and the package to install. Never raises.
    """
    search = search_path(path_env)
    exe = _find_bwrap(search)
    if exe is None:
        return _NOT_FOUND
    with _PROBE_LOCK:
        if (exe, user) not in _PROBES:
            _PROBES[exe, user] = _run_probe(exe, _probe_argv(exe, search, user), search)
        return _PROBES[exe, user]


_NOT_FOUND = Probe(
    False,
    None,
    f"bwrap was not found on PATH; install the {BWRAP_PACKAGE!r} package "
    f"(apt-get install {BWRAP_PACKAGE})",
)


def _find_bwrap(search: str) -> str | None:
    exe = shutil.which("bwrap", path=search)
    return os.path.abspath(exe) if exe is not None else None


def _probe_argv(exe: str, search: str, user: CheckUser | None) -> list[str]:
    true = shutil.which("true", path=search) or "/bin/true"
    mounts = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", TMP]
    return [exe, *jail_flags(False, user), *mounts, "--", *(user.prefix() if user else []), true]


def _run_probe(exe: str, argv: list[str], search: str) -> Probe:
    import subprocess  # only here: a remembered probe (flow status) starts no process

    # The probe binds / recursively and makes each mount below it read-only: one that this
    # process is unmounting meanwhile (a check's tmpfs, verify/_reaper.py) would fail it.
    _reaper.settle()
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
            env={"PATH": search},
        )
    except (OSError, subprocess.SubprocessError) as err:
        return Probe(False, None, f"{exe} could not be run: {err}")
    if done.returncode == 0:
        return Probe(True, exe, None)
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return Probe(
        False,
        None,
        f"{exe} cannot create a jail here (exit {done.returncode}: "
        f"{said[-1] if said else 'no message'}); user or mount namespaces may be "
        "disabled (e.g. in a container without CAP_SYS_ADMIN)",
    )


def status_probe(path_env: str | None = None, user: CheckUser | None = None) -> Probe:
    """``probe_bwrap`` for the status report: a usable probe remembered on disk under the same
    binary, command line, user, namespaces and kernel settings, under ten minutes old
    (``verify/_probe_cache.py``), stands in for starting bubblewrap again. Never raises.

    A probe made in this process wins; a probe that ran here is remembered when usable. Only
    the ``flow status`` command uses this (``sandbox_status(remembered=True)``): a check's
    jail and every other report probe in their own process.
    """
    search = search_path(path_env)
    exe = _find_bwrap(search)
    if exe is None:
        return _NOT_FOUND
    with _PROBE_LOCK:
        made = _PROBES.get((exe, user))
    if made is not None:
        return made
    from flow_core.verify._probe_cache import probe_key, recall, remember

    key = probe_key(exe, _probe_argv(exe, search, user), search)
    if key is not None and recall(key):
        return Probe(True, exe, None)
    probe = probe_bwrap(path_env, user)
    if key is not None and probe.usable and probe.bwrap == exe:
        remember(key)
    return probe


def sandbox_status(
    cfg: SandboxConfig, path_env: str | None = None, *, remembered: bool = False
) -> SandboxStatus:
    """What a report says under ``sandbox``: the bubblewrap probe, the seccomp filter and the
    cgroups, each looked at now.

    Args:
        cfg: ``[sandbox]``.
        path_env: the ``PATH`` to search (default: Flow's own).
        remembered: the ``flow status`` command may take a usable probe remembered under
            the same conditions (``status_probe``); every other report (``Runtime.status()``,
            checks, runs) probes once per process and leaves nothing on disk.
    """
    user = check_user(cfg, search_path(path_env))
    probe = status_probe(path_env, user) if remembered else probe_bwrap(path_env, user)
    runs_as: SandboxKind = "bwrap" if probe.usable and cfg.mode != "off" else "none"
    reason = probe.reason
    if cfg.mode == "off":
        reason = 'sandbox.mode = "off": checks run unjailed with Flow\'s whole environment'
    elif not probe.usable and cfg.mode == "auto":
        reason = f"warning: checks run without a jail: {probe.reason}"
    elif not probe.usable:
        reason = f'sandbox.mode = "bwrap" but {probe.reason}; checks are refused'
    else:
        notes = [user.missing] if user.missing else []
        no_filter = seccomp_program(cfg.network)[1]
        notes += [f"warning: no seccomp filter: {no_filter}"] if no_filter else []
        missing = cgroup_parents()[1]
        notes += [
            f"{UNBOUND[c]}: {why}"
            for c, why in missing.items()
            if c != "cpuacct" or cfg.cpu_seconds > 0
        ]
        reason = "; ".join(notes) or None
    return SandboxStatus(
        mode=cfg.mode, usable=probe.usable, runs_as=runs_as, network=cfg.network, reason=reason
    )


def require_sandbox(cfg: SandboxConfig, path_env: str | None = None) -> None:
    """Raise when ``mode = "bwrap"`` and bubblewrap is unusable.

    Raises:
        ConfigError: code ``sandbox_unavailable``; the message names the package to install.
    """
    if cfg.mode != "bwrap":
        return
    probe = probe_bwrap(path_env, check_user(cfg, search_path(path_env)))
    if not probe.usable:
        raise ConfigError(
            f'sandbox.mode = "bwrap" but {probe.reason}; fix: install the {BWRAP_PACKAGE!r} '
            'package, or set sandbox.mode = "auto" to run checks unjailed when it is missing',
            code="sandbox_unavailable",
        )


def search_path(path_env: str | None) -> str:
    return path_env if path_env is not None else os.environ.get("PATH", os.defpath)


#: How a report names a whole-check limit no cgroup enforces, by config key or controller.
UNBOUND = {
    "processes": "process count not enforced",
    "pids": "process count not enforced",
    "memory_mib": "memory not bounded",
    "memory": "memory not bounded",
    "cpus": "CPU not bounded",
    "cpu": "CPU not bounded",
    "cpu_seconds": "CPU time not bounded",
    "cpuacct": "CPU time not bounded",
    "disk_mib": "disk bounded for /tmp only, not the private copy",
    "disk_per_place": (
        "disk bounded per place, not in all: the copy, /tmp and /dev/shm may each take disk_mib"
    ),
}
