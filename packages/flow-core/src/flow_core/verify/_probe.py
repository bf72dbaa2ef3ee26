"""Whether a check jail can start here: the bubblewrap probe and the ``sandbox`` status.

Kept apart from the jail itself (``verify/_sandbox.py``, which builds the private tree, the
mounts, the cgroup and the filter for one check) so that ``flow status``, which only reports
what a check would run in (``docs/architecture.md``, "Sandbox"), loads what the probe needs
and nothing of the jail's construction.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from dataclasses import dataclass

from flow_core._errors import ConfigError
from flow_core._report import SandboxKind, SandboxStatus
from flow_core.config._sandbox import SandboxConfig
from flow_core.verify._cgroup import cgroup_parents
from flow_core.verify._jail_argv import TMP, CheckUser, check_user, jail_flags
from flow_core.verify._seccomp import seccomp_program

__all__ = [
    "BWRAP_PACKAGE",
    "UNBOUND",
    "Probe",
    "probe_bwrap",
    "require_sandbox",
    "sandbox_status",
    "search_path",
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
    search = path_env if path_env is not None else os.environ.get("PATH", os.defpath)
    exe = shutil.which("bwrap", path=search)
    if exe is None:
        return Probe(
            False,
            None,
            f"bwrap was not found on PATH; install the {BWRAP_PACKAGE!r} package "
            f"(apt-get install {BWRAP_PACKAGE})",
        )
    exe = os.path.abspath(exe)
    with _PROBE_LOCK:
        if (exe, user) in _PROBES:
            return _PROBES[exe, user]
        true = shutil.which("true", path=search) or "/bin/true"
        argv = [exe, *jail_flags(False, user), "--ro-bind", "/", "/", "--dev", "/dev"]
        argv += ["--proc", "/proc", "--tmpfs", TMP, "--", *(user.prefix() if user else []), true]
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
            probe = Probe(False, None, f"{exe} could not be run: {err}")
        else:
            if done.returncode == 0:
                probe = Probe(True, exe, None)
            else:
                said = done.stderr.decode("utf-8", "replace").strip().splitlines()
                probe = Probe(
                    False,
                    None,
                    f"{exe} cannot create a jail here (exit {done.returncode}: "
                    f"{said[-1] if said else 'no message'}); user or mount namespaces may be "
                    "disabled (e.g. in a container without CAP_SYS_ADMIN)",
                )
        _PROBES[exe, user] = probe
        return probe


def sandbox_status(cfg: SandboxConfig, path_env: str | None = None) -> SandboxStatus:
    """What ``flow status`` reports under ``sandbox`` (runs the bubblewrap probe once)."""
    user = check_user(cfg, search_path(path_env))
    probe = probe_bwrap(path_env, user)
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
