"""Limits for a whole check, not each process: a cgroup per check (``docs/architecture.md``,
"Sandbox").

Each controller is taken where this machine has it: a cgroup v1 hierarchy that mounts it
(``/proc/mounts``, type ``cgroup``), else the cgroup v2 hierarchy (type ``cgroup2``), where a
child cgroup can use a controller only when Flow's own cgroup is the root or already delegates
it. Under Flow's own cgroup in each hierarchy Flow makes ``flow-check-PID-XXXX`` (kept for
the process's next check while it holds no process, ``make_cgroup``) and writes:

- ``pids``: ``pids.max`` = ``sandbox.processes`` (+1 for bubblewrap's pid 1);
- ``memory``: v1 ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes`` where swap
  accounting exists), v2 ``memory.max`` and ``memory.swap.max = 0``, from
  ``sandbox.memory_mib``;
- ``cpu``: v1 ``cpu.cfs_quota_us``/``cpu.cfs_period_us``, v2 ``cpu.max``, from
  ``sandbox.cpus`` (the check's processes together get at most that many CPUs' time);
- ``cpuacct`` (only with ``sandbox.cpu_seconds``): nothing is written; v1 ``cpuacct.usage`` or
  v2 ``cpu.stat`` (present in every v2 cgroup) is read by ``CheckCgroup.cpu_seconds``, and the
  jail ends the check once it passes the budget (``verify/_sandbox.py``, ``Jail.started``).

How the check gets in (``CheckCgroup.inside``): on v1, the thread that starts the check moves
itself into each check cgroup (``0`` written to its ``tasks``), forks, and moves itself back;
the child is born inside, so nothing is migrated. Moving the calling thread alone is the one
migration the kernel does without its global ``cgroup_threadgroup_rwsem`` write lock, whose
every first use after an idle spell waits for an RCU grace period (5-15 ms here, more than
bubblewrap's own start); writing another process's pid to ``cgroup.procs`` takes it. v2 keeps
every thread of a process in one cgroup, so there the child's pid is written to
``cgroup.procs`` (``CheckCgroup.join``).

Afterwards :meth:`CheckCgroup.hit` reads the controllers' event counters (``oom_kill`` of
``memory.oom_control``/``memory.events``, ``max`` of ``pids.events``) and names the limits
the check ran into. A controller that cannot be used is listed in ``CheckCgroup.missing``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from flow_core.verify import _reaper

__all__ = ["CheckCgroup", "cgroup_parents", "make_cgroup"]

_MIB = 1024 * 1024
_PERIOD_US = 100_000
#: The controllers a check's cgroup uses, with the config key each enforces.
CONTROLLERS: dict[str, str] = {
    "pids": "processes",
    "memory": "memory_mib",
    "cpu": "cpus",
    "cpuacct": "cpu_seconds",
}


def _mounts() -> tuple[dict[str, str], str | None]:
    """v1 mount point per controller, and the cgroup2 mount point (or None)."""
    v1: dict[str, str] = {}
    v2: str | None = None
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return v1, v2
    for line in lines:
        parts = line.split()
        if len(parts) < 4:
            continue
        if parts[2] == "cgroup2" and v2 is None:
            v2 = parts[1]
        elif parts[2] == "cgroup":
            for opt in parts[3].split(","):
                v1.setdefault(opt, parts[1])
    return v1, v2


def cgroup_parents() -> tuple[dict[str, tuple[str, int]], dict[str, str]]:
    """Where each controller's check cgroup can be made.

    Returns:
        ``({controller: (parent folder, version)}, {controller: why not})``.
    """
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError as err:
        why = f"/proc/self/cgroup unreadable ({err.strerror})"
        return {}, dict.fromkeys(CONTROLLERS, why)
    v1, v2 = _mounts()
    found: dict[str, tuple[str, int]] = {}
    missing: dict[str, str] = {}
    own_v2 = next((ln[3:] for ln in lines if ln.startswith("0::")), None)
    for controller in CONTROLLERS:
        own = next((ln for ln in lines if controller in ln.split(":", 2)[1].split(",")), None)
        if own is not None and controller in v1:
            parent = os.path.normpath(v1[controller] + "/" + own.split(":", 2)[2])
            if os.access(parent, os.W_OK):
                found[controller] = (parent, 1)
            else:
                missing[controller] = f"{parent} is not writable"
        elif v2 is not None and own_v2 is not None:
            parent = os.path.normpath(v2 + "/" + own_v2)
            if controller == "cpuacct":  # v2 counts CPU time in every cgroup (cpu.stat)
                refused = None if os.access(parent, os.W_OK) else f"{parent} is not writable"
            else:
                refused = _delegate_v2(parent, controller, own_v2 == "/")
            if refused is None:
                found[controller] = (parent, 2)
            else:
                missing[controller] = refused
        else:
            missing[controller] = f"no cgroup hierarchy has the {controller} controller"
    return found, missing


def _delegate_v2(parent: str, controller: str, root: bool) -> str | None:
    """Make sure ``controller`` is enabled for children of ``parent`` (v2); or say why not."""
    control = os.path.join(parent, "cgroup.subtree_control")
    try:
        if controller in Path(control).read_text().split():
            return None if os.access(parent, os.W_OK) else f"{parent} is not writable"
        if controller not in Path(parent, "cgroup.controllers").read_text().split():
            return f"the cgroup v2 controller {controller} is not available in {parent}"
        if not root:
            return f"{controller} is not delegated to Flow's cgroup {parent}"
        Path(control).write_text(f"+{controller}")
    except OSError as err:
        return f"cannot enable {controller} in {parent} ({err.strerror or err})"
    return None


@dataclass
class CheckCgroup:
    """The cgroups made for one check (one per hierarchy) and the limits they hold.

    Attributes:
        procs_fds: ``cgroup.procs`` of each v2 cgroup, open for writing (``join``).
        tasks_fds: ``(tasks of a v1 check cgroup, tasks of its parent)``, open for writing
            (``inside``).
        missing: ``{config key: why}`` for limits no cgroup enforces here.
    """

    procs_fds: list[int] = field(default_factory=list)
    tasks_fds: list[tuple[int, int]] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)
    _dirs: list[tuple[str, int, set[str]]] = field(default_factory=list)
    #: What each limit file holds (a reused set rewrites only what changed).
    _written: dict[str, str] = field(default_factory=dict)
    #: The event counters and CPU time when this check took the set (they only grow).
    _base: dict[str, float] = field(default_factory=dict)
    #: The layout this set was made for (``make_cgroup``), or None: never reused.
    _key: tuple[tuple[str, int, tuple[str, ...]], ...] | None = None
    #: The limits last asked for, and whether bubblewrap's monitor counts (``make_cgroup``).
    _asked: tuple[dict[str, float], bool] = ({}, False)
    _pid: int = field(default_factory=os.getpid)

    @contextlib.contextmanager
    def inside(self) -> Iterator[None]:
        """While the block runs, the calling thread is in every v1 check cgroup, so a process
        it forks there is born in them (see the module docstring); afterwards the thread is
        back in Flow's own cgroups, also when the block raises.

        Raises:
            OSError: a cgroup refused the thread (it is back where it was before).
        """
        entered: list[int] = []
        try:
            for into, home in self.tasks_fds:
                entered.append(home)
                os.write(into, b"0")
            yield
        finally:
            for home in reversed(entered):
                os.write(home, b"0")

    def join(self, pid: int) -> None:
        """Move ``pid`` into every v2 cgroup. Raises OSError when one refuses."""
        for fd in self.procs_fds:
            os.write(fd, str(pid).encode())

    def hit(self) -> list[str]:
        """The config keys of the limits the check ran into (``memory_mib``, ``processes``)."""
        now = self._counters()
        hits = ("memory_mib", "processes")
        return [k for k, v in now.items() if k in hits and v > self._base.get(k, 0)]

    def cpu_seconds(self) -> float | None:
        """CPU time the check's processes have used so far, in seconds (v1 ``cpuacct.usage``,
        v2 ``cpu.stat`` ``usage_usec``), or None where no cgroup counts it."""
        used = self._counters().get("cpu_seconds")
        return None if used is None else used - self._base.get("cpu_seconds", 0.0)

    def _counters(self) -> dict[str, float]:
        """The counters as the kernel has them now: OOM kills, refused forks, CPU seconds."""
        out: dict[str, float] = {"memory_mib": 0, "processes": 0}
        for path, version, controllers in self._dirs:
            if "memory" in controllers:
                name = "memory.oom_control" if version == 1 else "memory.events"
                out["memory_mib"] = _counter(os.path.join(path, name), "oom_kill")
            if "pids" in controllers:
                out["processes"] = _counter(os.path.join(path, "pids.events"), "max")
            if "cpuacct" in controllers:
                used = _cpu_usage(path, version)
                if used is not None:
                    out["cpu_seconds"] = used
        return out

    def _empty(self) -> bool:
        """Whether no process is in any of the cgroups and none is still counted there.

        A process that ran in the check's pid namespace can stay counted in ``pids.current``
        for seconds after it left ``cgroup.procs`` (seen here after every jailed check, one
        per check); a set taken then would refuse the next check's forks, bubblewrap's own
        start included: a ``limit`` that check never caused.
        """
        try:
            for path, _, controllers in self._dirs:
                if Path(path, "cgroup.procs").read_text().strip():
                    return False
                if "pids" in controllers and Path(path, "pids.current").read_text().strip() != "0":
                    return False
        except OSError:
            return False
        return True

    def _limit(self, path: str, version: int, values: dict[str, float], monitor: bool) -> None:
        """Write the limits of ``path``'s controllers (only what changed); raises OSError."""
        controllers = next(c for p, _, c in self._dirs if p == path)
        for c in sorted(controllers):
            value = values[c] + (1 if c == "pids" and monitor and version == 1 else 0)
            for name, content, required in _limit_files(c, version, value):
                where = os.path.join(path, name)
                if self._written.get(where) == content:
                    continue
                try:
                    Path(where).write_text(content)
                except OSError:
                    if required:
                        raise
                self._written[where] = content

    def close(self) -> None:
        """Hand the set back for the next check when it is empty (``make_cgroup``), else
        remove it and make a fresh one with the same limits for the next check (called on
        ``verify/_reaper.py``'s thread, off the check's path; nothing is kept once this
        process exits)."""
        ours = self._key is not None and self._pid == os.getpid() and not _reaper.exiting()
        if ours and self._empty() and _keep(self):
            return
        self.remove()
        if ours and self._key is not None and not _idle(self._key):
            values, monitor = self._asked
            by_parent = {(p, v): set(c) for p, v, c in self._key}
            fresh = _fresh(by_parent, values, monitor)
            fresh._asked = self._asked
            fresh._key = self._key if not fresh.missing else None
            if fresh._key is None or not _keep(fresh):
                fresh.remove()

    def remove(self) -> None:
        """Close the descriptors and remove the cgroups (bounded wait while they empty)."""
        for fd in [*self.procs_fds, *(fd for pair in self.tasks_fds for fd in pair)]:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.procs_fds, self.tasks_fds = [], []
        for path, _, _ in self._dirs:
            _remove(path)
        self._dirs = []


def _counter(path: str, key: str) -> int:
    try:
        for line in Path(path).read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except OSError:
        return 0
    return 0


def _limit_files(controller: str, version: int, value: float) -> list[tuple[str, str, bool]]:
    """``(file, content, required)`` that set one controller's limit."""
    if controller == "pids":
        return [("pids.max", str(int(value)), True)]
    if controller == "memory":
        size = str(int(value) * _MIB)
        if version == 1:
            swap = "memory.memsw.limit_in_bytes"
            return [("memory.limit_in_bytes", size, True), (swap, size, False)]
        return [("memory.max", size, True), ("memory.swap.max", "0", False)]
    if controller == "cpuacct":
        return []  # nothing to write: the usage is read (CheckCgroup.cpu_seconds)
    quota = str(max(1000, int(value * _PERIOD_US)))
    if version == 1:
        return [("cpu.cfs_period_us", str(_PERIOD_US), True), ("cpu.cfs_quota_us", quota, True)]
    return [("cpu.max", f"{quota} {_PERIOD_US}", True)]


def make_cgroup(values: dict[str, float], *, monitor: bool = False) -> CheckCgroup:
    """The check's cgroups with their limits written; never raises.

    A set an earlier check of this process handed back (``CheckCgroup.close``) is taken when
    it has the same layout and holds and counts no process (``pids.current`` 0: a process
    that left a pid namespace can stay counted for seconds after it exited); its limits are
    rewritten where they differ and its counters read from where they stand. Making and
    removing a cgroup costs the kernel far more than a check's own start (a memory cgroup
    above all); a set is removed when this process exits, and a killed Flow's sets by the
    next Flow (``sweep_once``).

    Args:
        values: ``{controller: limit}``: ``pids`` (processes), ``memory`` (MiB), ``cpu``
            (CPUs, fractional allowed), ``cpuacct`` (CPU seconds: counted, enforced by the
            caller); a controller left out is not limited.
        monitor: the check is started by a process that stays outside its pid namespace
            (bubblewrap's first process): born inside a v1 cgroup (``CheckCgroup.inside``),
            it counts there, so a v1 ``pids.max`` allows one more process.

    Returns:
        A :class:`CheckCgroup`; what could not be enforced is in ``missing``.
    """
    found, why = cgroup_parents()
    by_parent: dict[tuple[str, int], set[str]] = {}
    missing: dict[str, str] = {}
    for controller in values:
        if controller in found:
            by_parent.setdefault(found[controller], set()).add(controller)
        else:
            missing[CONTROLLERS[controller]] = why.get(controller, "unavailable")
    key = tuple(sorted((p, v, tuple(sorted(c))) for (p, v), c in by_parent.items()))
    group = _take(key)
    if group is not None:
        try:
            for path, version, _ in group._dirs:
                group._limit(path, version, values, monitor)
        except OSError:  # e.g. a memory limit below what the set holds: start afresh
            group.remove()
            group = None
    if group is None:
        group = _fresh(by_parent, values, monitor)
        group._key = key if not group.missing else None
    group._asked = (dict(values), monitor)
    group.missing.update(missing)
    group._base = group._counters()
    return group


def _fresh(
    by_parent: dict[tuple[str, int], set[str]], values: dict[str, float], monitor: bool
) -> CheckCgroup:
    """Make a new cgroup under each parent for its controllers; failures go to ``missing``."""
    group = CheckCgroup()
    for (parent, version), controllers in by_parent.items():
        sweep_once(parent, "flow-check-", _rmdir)
        try:
            path = tempfile.mkdtemp(prefix=f"flow-check-{os.getpid()}-", dir=parent)
        except OSError as err:
            for c in controllers:
                group.missing[CONTROLLERS[c]] = f"cannot create a cgroup under {parent} ({err})"
            continue
        group._dirs.append((path, version, controllers))
        try:
            group._limit(path, version, values, monitor)
            _open_entry(group, path, parent, version)
        except OSError as err:
            for c in controllers:
                group.missing[CONTROLLERS[c]] = f"cannot set up the cgroup {path} ({err})"
            group._dirs.pop()
            _remove(path)
    return group


#: Sets handed back by finished checks, by layout (``make_cgroup``), at most ``_POOL_MAX``
#: each; removed at exit.
_POOL: dict[tuple[tuple[str, int, tuple[str, ...]], ...], list[CheckCgroup]] = {}
_POOL_LOCK = threading.Lock()
_POOL_MAX = 4


def _take(key: tuple[tuple[str, int, tuple[str, ...]], ...]) -> CheckCgroup | None:
    """An idle set of this layout that holds no process (one that does is removed)."""
    while True:
        with _POOL_LOCK:
            idle = _POOL.get(key)
            group = idle.pop() if idle else None
        if group is None or group._pid != os.getpid():
            return None
        if group._empty():
            group.missing = {}
            return group
        group.remove()


def _keep(group: CheckCgroup) -> bool:
    """Put ``group`` in the pool unless its layout has ``_POOL_MAX`` idle sets already."""
    assert group._key is not None
    with _POOL_LOCK:
        idle = _POOL.setdefault(group._key, [])
        if len(idle) >= _POOL_MAX:
            return False
        idle.append(group)
    _reaper.on_exit(_drain)  # after the reaper's pending jobs, which may hand sets back
    return True


def _idle(key: tuple[tuple[str, int, tuple[str, ...]], ...]) -> bool:
    """Whether the pool holds a set of this layout."""
    with _POOL_LOCK:
        return bool(_POOL.get(key))


def _drain() -> None:
    with _POOL_LOCK:
        sets = [g for idle in _POOL.values() for g in idle]
        _POOL.clear()
    for group in sets:
        if group._pid == os.getpid():
            group.remove()


def _cpu_usage(path: str, version: int) -> float | None:
    """CPU seconds a cgroup counted: v2 ``cpu.stat`` ``usage_usec``, v1 ``cpuacct.usage``."""
    if version == 2:
        stat = os.path.join(path, "cpu.stat")
        return _counter(stat, "usage_usec") / 1e6 if os.path.exists(stat) else None
    try:
        return int(Path(path, "cpuacct.usage").read_text().strip()) / 1e9
    except (OSError, ValueError):
        return None


def _open_entry(group: CheckCgroup, path: str, parent: str, version: int) -> None:
    """Open how the check gets into ``path``: v1 ``tasks`` of it and of ``parent`` (Flow's
    own cgroup, where the starting thread returns), v2 ``cgroup.procs``. Raises OSError."""
    flags = os.O_WRONLY | os.O_CLOEXEC
    if version == 2:
        group.procs_fds.append(os.open(os.path.join(path, "cgroup.procs"), flags))
        return
    into = os.open(os.path.join(path, "tasks"), flags)
    try:
        home = os.open(os.path.join(parent, "tasks"), flags)
    except OSError:
        os.close(into)
        raise
    group.tasks_fds.append((into, home))


_SWEPT: set[tuple[str, str]] = set()
_SWEEP_LOCK = threading.Lock()


def sweep_once(parent: str, prefix: str, remove: Callable[[str], None]) -> None:
    """Call ``remove`` on each ``PREFIX-PID-*`` folder in ``parent`` whose Flow process is gone
    (once per process and ``(parent, prefix)``).

    A Flow killed with SIGKILL cannot remove what it made for the check it was running (a
    cgroup here, a tmpfs in ``verify/_disk.py``).
    """
    with _SWEEP_LOCK:
        if (parent, prefix) in _SWEPT:
            return
        _SWEPT.add((parent, prefix))
    with contextlib.suppress(OSError):
        for name in os.listdir(parent):
            owner = name[len(prefix) :].split("-")[0] if name.startswith(prefix) else ""
            if not owner.isdigit() or int(owner) == os.getpid():
                continue
            try:
                os.kill(int(owner), 0)
            except ProcessLookupError:
                remove(os.path.join(parent, name))
            except PermissionError:
                continue


def _rmdir(path: str) -> None:
    with contextlib.suppress(OSError):
        os.rmdir(path)  # fails while not empty


def _remove(path: str) -> None:
    for _ in range(400):  # bounded (2 s): the jail's processes are gone or going
        try:
            os.rmdir(path)
        except FileNotFoundError:
            return
        except OSError:
            threading.Event().wait(0.005)
        else:
            return
