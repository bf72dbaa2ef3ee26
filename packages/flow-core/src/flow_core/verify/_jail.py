"""What ``run_check`` starts for one jailed check, and what it cleans up afterwards.

``verify/_sandbox.py`` (``prepare_jail``) builds a ``Jail``; ``verify/_checks.py`` starts its
argv, calls ``Jail.started`` once the process exists (the limits, the cgroup, the CPU-time
watch; ``docs/architecture.md``, "Sandbox"), reads ``Jail.limits_hit`` after the check and
calls ``Jail.close``.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from flow_core._report import SandboxKind
from flow_core.verify import _reaper
from flow_core.verify._cgroup import CheckCgroup
from flow_core.verify._disk import CheckDisk, JailDisk

if TYPE_CHECKING:
    from flow_core._protocols import EditorBridge
    from flow_core.verify._tree import TreeSpec

__all__ = ["CheckScope", "CheckWatch", "Jail"]

#: Seconds to wait for bubblewrap's ``--info-fd`` report after it started.
_INFO_TIMEOUT_S = 5.0
#: Seconds between two reads of a check's CPU time (``sandbox.cpu_seconds``) and free disk.
_POLL_S = 0.1


@dataclass(frozen=True)
class CheckScope:
    """What a jailed check sees beyond the workspace's own files (``run_check``,
    ``prepare_jail``; ``docs/architecture.md``, "Sandbox").

    Attributes:
        protected: workspace-relative paths bound read-only over the private copy (besides
            ``.git``): ``FlowConfig.protected``.
        writable: absolute folders outside the workspace the check may write: the private
            results folder of a ``results = "junit"`` check (``run/_evidence.py``).
        tree: what the private copy holds (the evidence run, ``verify/_tree.TreeSpec``); None
            copies the workspace as it is now.
    """

    protected: Sequence[str] = ()
    writable: Sequence[str] = ()
    tree: TreeSpec | None = None


@dataclass(frozen=True)
class CheckWatch:
    """Who a check runs for and how it is watched (``run_check``).

    Attributes:
        editor: when attached, the check is refused while any buffer is unsaved
            (``docs/architecture.md``, "Rose": named checks refuse unsaved buffers).
        owner: tag for ``kill_all_process_groups`` (the run that started it).
        should_stop: polled while waiting; True ends the check as ``"interrupted"``.
        on_start: called with the check's process group id once it runs (the run record
            keeps it, ``store/_reap.py``); an exception it raises is ignored.
    """

    editor: EditorBridge | None = None
    owner: object | None = None
    should_stop: Callable[[], bool] | None = None
    on_start: Callable[[int], None] | None = None


@dataclass
class Jail:
    """What ``run_check`` starts for one check, and what it cleans up afterwards.

    Attributes:
        kind: ``"bwrap"`` or ``"none"`` (reported as ``CheckResult.sandbox``).
        reason: why ``"none"``, or what the jail lacks (``CheckResult.sandbox_reason``).
        argv / executable / env: for ``subprocess.Popen`` (``env`` None: Flow's own).
        preexec: runs in the child before ``exec`` (limits, cgroup), or None.
        pass_fds: descriptors the child keeps (bubblewrap's ``--info-fd`` and ``--block-fd``).
        info_fd: read end of the ``--info-fd`` pipe, or -1.
        block_fd: write end of the ``--block-fd`` pipe, or -1: bubblewrap's pid 1 waits on it
            before it starts the check, so the limits and the cgroup are in place first.
        limits: ``(resource, value)`` pairs applied with ``prlimit`` to the jail's pid 1.
        cgroup: the check's cgroups (``verify/_cgroup.py``: processes, memory, CPU), or None.
        disk: the check's own tmpfs (``verify/_disk.py``: Flow's, holding its copy, ``/tmp``
            and ``/dev/shm``; or bubblewrap's at the workspace's path, ``JailDisk``), or None.
        cpu_budget_s: ``sandbox.cpu_seconds`` (0: none); ``cpu_over`` is set when the check
            used more and was ended for it; ``disk_full`` when its disk was seen full while
            it ran (``_watch``).
        place: the workspace the check ran on (the key of its deferred cleanup).
    """

    kind: SandboxKind
    reason: str | None
    argv: list[str]
    executable: str
    env: dict[str, str] | None = None
    preexec: Callable[[], None] | None = None
    pass_fds: tuple[int, ...] = ()
    info_fd: int = -1
    block_fd: int = -1
    limits: list[tuple[int, int]] = field(default_factory=list)
    cgroup: CheckCgroup | None = None
    disk: CheckDisk | JailDisk | None = None
    cpu_budget_s: float = 0.0
    cpu_over: bool = False
    disk_full: bool = False
    place: str = ""
    _cleanups: list[Callable[[], None]] = field(default_factory=list)
    #: Cleanups ``close`` hands to ``verify/_reaper.py`` (last registered runs first).
    _later: list[Callable[[], None]] = field(default_factory=list)

    def spawning(self) -> contextlib.AbstractContextManager[None]:
        """Wrap the ``Popen`` of the check: the starting thread is in the check's v1 cgroups
        meanwhile, so the check is born in them (``CheckCgroup.inside``). Raises OSError."""
        return self.cgroup.inside() if self.cgroup is not None else contextlib.nullcontext()

    def started(self, kill: Callable[[], None]) -> int | None:
        """After ``Popen``: limit the jail's pid 1 and let it run the check; return its pid.

        Reads bubblewrap's ``--info-fd`` JSON (waiting at most ``_INFO_TIMEOUT_S``), applies
        the rlimits to pid 1 with ``prlimit`` and moves it into any v2 cgroup (v1 ones it was
        born in, ``spawning``) while it waits on ``--block-fd``, then releases it: what the
        check starts inherits both. No ``preexec_fn`` is needed, so ``Popen`` can use
        ``vfork``. When any of it fails, ``kill`` ends the jail before the check runs
        unlimited, and ``reason`` says why.

        Returns:
            The host pid of the jail's pid 1, or None (no jail, or it could not be limited).
        """
        pid = self._read_info()
        watched = (self.cpu_budget_s > 0 and self.cgroup is not None) or self.disk is not None
        if self.block_fd < 0:
            if watched:
                self._watch(kill)
            return pid
        try:
            if pid is None:
                raise OSError("bubblewrap reported no pid")
            for res, value in self.limits:
                resource.prlimit(pid, res, (value, value))
            if isinstance(self.disk, JailDisk):
                self.disk.attach(pid)  # bubblewrap has mounted it: it waits on block_fd
            if self.cgroup is not None:
                self.cgroup.join(pid)
            os.write(self.block_fd, b"1")
        except OSError as err:
            # Kill before anything unblocks pid 1: the pipe stays open until close().
            if pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            kill()
            note = f"the jail was ended before the check ran: limits not applied ({err})"
            self.reason = note if self.reason is None else f"{self.reason}; {note}"
            return None
        os.close(self.block_fd)
        self.block_fd = -1
        if watched:  # off the start's path: the check's first sample is 0.1 s away anyway
            self._watch(kill)
        return pid

    def _watch(self, kill: Callable[[], None]) -> None:
        """Every ``_POLL_S`` while the check runs: read its CPU time and, past
        ``cpu_budget_s``, ``kill`` it (``cpu_over``); see whether its disk is full
        (``disk_full``).

        The kernel has no total CPU-time limit for a group of processes (``RLIMIT_CPU`` is
        per process, a ``cpu`` quota is a rate), so the cgroup's usage is polled; the check
        may overrun by up to one interval times the CPUs it has. A tmpfs keeps no high-water
        mark, so a check that filled its disk and deleted what it wrote is seen only when
        the disk stayed full across one poll.
        """
        stop = threading.Event()
        group, disk = self.cgroup, self.disk

        def watch() -> None:
            while not stop.wait(_POLL_S):
                if disk is not None and not self.disk_full and disk.full():
                    self.disk_full = True
                used = group.cpu_seconds() if group is not None and self.cpu_budget_s else None
                if used is not None and used > self.cpu_budget_s and not self.cpu_over:
                    self.cpu_over = True
                    kill()

        thread = threading.Thread(target=watch, name="flow-check-watch", daemon=True)
        thread.start()

        def end() -> None:
            stop.set()
            thread.join(1.0)

        self._cleanups.append(end)

    def limits_hit(self) -> list[str]:
        """The ``[sandbox]`` keys of the whole-check limits the check ran into (call before
        ``close``): ``memory_mib``, ``processes``, ``cpu_seconds``, ``disk_mib``."""
        hit = self.cgroup.hit() if self.cgroup is not None else []
        hit += ["cpu_seconds"] if self.cpu_over else []
        full = self.disk is not None and (self.disk_full or self.disk.full())
        return hit + (["disk_mib"] if full else [])

    def _read_info(self) -> int | None:
        """Close the child's ends; parse ``child-pid`` from bubblewrap's ``--info-fd``."""
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = ()
        if self.info_fd < 0:
            return None
        data = b""
        poller = select.poll()
        poller.register(self.info_fd, select.POLLIN)
        try:
            while b"}" not in data and poller.poll(int(_INFO_TIMEOUT_S * 1000)):
                chunk = os.read(self.info_fd, 4096)
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(self.info_fd)
            self.info_fd = -1
        try:
            pid = json.loads(data.decode()).get("child-pid")
        except (ValueError, UnicodeDecodeError, AttributeError):
            return None
        return pid if isinstance(pid, int) and pid > 0 else None

    def close(self) -> None:
        """Release what the jail held; never raises.

        The pipes, the watch thread and a private ``HOME`` are released now; the private
        copy, the check's tmpfs and its cgroups (``_later``) by ``verify/_reaper.py`` once
        this returns: before a check of the same workspace starts and before Flow exits.
        """
        for fd in (*self.pass_fds, self.info_fd, self.block_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.pass_fds, self.info_fd, self.block_fd = (), -1, -1
        while self._cleanups:
            with contextlib.suppress(Exception):
                self._cleanups.pop()()
        if self._later:
            jobs, self._later = self._later, []

            def clean() -> None:
                while jobs:
                    with contextlib.suppress(Exception):
                        jobs.pop()()

            _reaper.later(self.place, clean)
