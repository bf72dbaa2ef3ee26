"""The jail a named check runs in: bubblewrap, a clean environment, resource limits.

A check's argv is the operator's, but what it executes is workspace code the model may just
have written (a test file, a conftest, a build script). ``prepare_jail`` turns one check into
what ``run_check`` starts, according to ``[sandbox]`` (``flow_core.config._sandbox``):

``bwrap`` (bubblewrap, https://github.com/containers/bubblewrap), mounts applied in order:

1. an empty root with only the system folders (``/usr``, ``/bin``, ``/sbin``, ``/lib*``)
   read-only and a small ``/etc`` (``verify/_jail_root.py``: the linker cache, name-service,
   time-zone and certificate files, toolchain configuration, ``resolv.conf`` only with the
   network, generated ``passwd``/``group``); nothing else of the host (``/opt``, ``/srv``,
   ``/var``, ``/run``, homes, ``/sys``, and every socket or FIFO in them) exists there;
2. ``--dev /dev``, ``--proc /proc`` (the jail's own pid namespace), a private, empty
   ``/tmp`` and ``/dev/shm`` on the check's own disk (``verify/_disk.py``; ``/var/tmp``
   links to ``/tmp``), then ``/dev`` made read-only;
3. ``--ro-bind`` the paths the check needs: the executable, its virtualenv (with the
   folders its ``.pth`` files add) and the Python it was made from, ``bin/`` and ``lib*/``
   of the prefix an executable lives in, a script's ``#!`` interpreter, ``PATH`` entries,
   and ``sandbox.readable``;
4. ``--bind`` a private copy of the workspace (``verify/_tree.py``, owned by the check's user,
   removed afterwards) at the workspace's path (after ``--tmpfs /tmp``, so a workspace under
   ``/tmp`` stays visible), then ``--ro-bind`` over it, from the workspace, ``.git``, the
   virtualenvs and dependency folders, and every protected path that exists.

Privilege (``_jail_user.CheckUser``): as root the check runs as ``sandbox.check_uid`` and
``check_gid`` through ``setpriv`` inside the jail, with no capability and ``no_new_privs``;
as another user bubblewrap's user namespace keeps no capability and refuses nested ones.

Namespaces: ``--unshare-pid --unshare-ipc --unshare-uts``, and ``--unshare-net`` unless
``sandbox.network``; ``--die-with-parent`` and ``--new-session``. The check's process group
is bubblewrap's; when it is killed, bubblewrap's pid 1 dies with it and the kernel ends every
process of the pid namespace, so no double-forked daemon survives.

Limits: bubblewrap is born in the check's v1 cgroups (``CheckCgroup.inside``: the starting
thread enters them for the fork); its pid 1 waits on ``--block-fd`` until Flow has applied the
rlimits to it with ``prlimit`` and moved it into any v2 cgroup (``Jail.started``), so the
check and all it starts inherit them; without a jail the rlimits are set in a
``preexec_fn``. ``RLIMIT_CORE`` 0,
``RLIMIT_FSIZE``,
``RLIMIT_AS``, ``RLIMIT_NOFILE``. The process count uses a ``pids`` cgroup (cgroup v1 ``pids``
hierarchy, or the root of a cgroup v2 hierarchy with ``pids`` enabled), because
``RLIMIT_NPROC`` is not enforced for root; where no such cgroup can be created the result
says so in ``sandbox_reason``. ``sandbox.cpu_seconds`` is a total: a thread reads the
cgroup's CPU time every 0.1 s and ends the check past it (``verify/_jail.py``, ``Jail._watch``).
Everything a jailed check writes lies on its own tmpfs of ``disk_mib`` beyond its copy
(``verify/_disk.py``: Flow's when root, else bubblewrap's); the results folder
(``writable``) is bounded per file only.

The environment is rebuilt from ``sandbox.env`` (default ``PATH LANG LC_* TERM TZ``), with
``HOME`` an empty private directory. ``mode = "auto"`` without a usable bubblewrap still
applies the environment, the private ``HOME`` (a temporary directory) and the limits, and
reports ``sandbox: "none"`` with the reason. ``mode = "off"`` applies nothing.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from flow_core.config._sandbox import SandboxConfig
from flow_core.verify import _reaper
from flow_core.verify._caches import cache_folders
from flow_core.verify._cgroup import CheckCgroup, make_cgroup
from flow_core.verify._disk import JailDisk, disk_home, make_disk, shm_share, sized_copy_tools
from flow_core.verify._jail import CheckScope, Jail
from flow_core.verify._jail_argv import (
    JAIL_HOME,
    JailFds,
    JailLayout,
    _has_size,
    bwrap_argv,
    check_user,
)
from flow_core.verify._jail_root import data_fds, etc_plan, identity_files, open_etc_files
from flow_core.verify._probe import (
    BWRAP_PACKAGE,
    UNBOUND,
    Probe,
    probe_bwrap,
    require_sandbox,
    sandbox_status,
    search_path,
)
from flow_core.verify._scratch import make_scratch, remove_scratch
from flow_core.verify._seccomp import seccomp_fd, seccomp_program
from flow_core.verify._tree import TreeSpec, build_tree, plan_workspace

__all__ = [
    "BWRAP_PACKAGE",
    "Jail",
    "Probe",
    "prepare_jail",
    "probe_bwrap",
    "require_sandbox",
    "sandbox_status",
]

_MIB = 1024 * 1024


def _limit_values(cfg: SandboxConfig) -> list[tuple[int, int]]:
    """``(resource, value)`` for each rlimit, never above this process's hard limit."""
    wanted = [
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_FSIZE, cfg.file_size_mib * _MIB),
        (resource.RLIMIT_AS, cfg.address_space_mib * _MIB),
        (resource.RLIMIT_NOFILE, cfg.open_files),
    ]
    pairs: list[tuple[int, int]] = []
    for res, value in wanted:
        hard = resource.getrlimit(res)[1]
        pairs.append((res, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return pairs


def _limits(cfg: SandboxConfig, group: CheckCgroup) -> Callable[[], None]:
    """A ``preexec_fn`` (no jail): join the v2 cgroups (v1: ``CheckCgroup.inside``), then
    set the rlimits."""
    pairs = _limit_values(cfg)
    fds = list(group.procs_fds)

    def preexec() -> None:  # pragma: no cover - runs in the forked child
        for fd in fds:
            os.write(fd, str(os.getpid()).encode())
        for res, value in pairs:
            resource.setrlimit(res, (value, value))

    return preexec


def _clean_env(cfg: SandboxConfig, environ: Mapping[str, str], home: str) -> dict[str, str]:
    """The passed-through variables, ``HOME``, and ``PYTHONDONTWRITEBYTECODE=1``.

    Python validates a ``.pyc`` by its source's mtime in whole seconds and its size, so a check
    that wrote bytecode for a file Flow then edits again within the same second to the same
    size would run the stale bytecode in the next cycle. With the variable set (unless it is
    passed through) a check reads the installed packages' caches but writes none, and leaves no
    ``__pycache__`` in the workspace. (A private ``PYTHONPYCACHEPREFIX`` would recompile every
    import on every check: a pytest suite took 1.3x as long.)
    """
    env = {k: v for k, v in environ.items() if cfg.passes(k)}
    env["HOME"] = home
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


def prepare_jail(
    executable: str,
    argv: Sequence[str],
    cfg: SandboxConfig | None,
    *,
    workspace: str | Path,
    scope: CheckScope | None = None,
    environ: Mapping[str, str] | None = None,
) -> Jail:
    """Build how one check is started. Call ``Jail.close()`` after the check, always.

    Args:
        executable: the check's resolved executable (absolute path).
        argv: the check's argv (``argv[0]`` is replaced by ``executable`` inside a jail).
        cfg: ``[sandbox]``; None behaves as ``mode = "off"`` (library callers that ask for
            no jail).
        workspace: the workspace root (its private copy is bound read-write).
        scope: the protected paths bound read-only over the workspace, the writable folders
            outside it (a check's private results folder, where ``{junit_xml}`` points) and
            what the private copy holds (``CheckScope.tree``, the evidence run; None copies
            the workspace as it is now; ignored without bubblewrap: the caller makes the
            unjailed tree, ``verify/_tree.build_unjailed``).
        environ: Flow's environment (default ``os.environ``).

    Raises:
        ConfigError: ``sandbox_unavailable`` when ``mode = "bwrap"`` and bubblewrap is unusable.
        OSError: the private copy could not be made (nothing is left behind).
    """
    env_in = os.environ if environ is None else environ
    if cfg is None or cfg.mode == "off":
        why = 'sandbox.mode = "off"' if cfg is not None else "run without a [sandbox] config"
        return Jail("none", why, list(argv), executable)
    place = os.path.realpath(workspace)
    _reaper.settle(place)  # the last check of this workspace is cleaned up (Jail.close)
    require_sandbox(cfg, env_in.get("PATH"))
    user = check_user(cfg, search_path(env_in.get("PATH")))
    probe = probe_bwrap(env_in.get("PATH"), user)
    scope = scope or CheckScope()
    if probe.usable and probe.bwrap is not None:
        jail = Jail("bwrap", None, [], probe.bwrap, env=_clean_env(cfg, env_in, JAIL_HOME))
    else:
        jail = _unjailed(cfg, env_in, list(argv), executable, probe.reason)
    jail.place = place
    try:
        if jail.kind == "bwrap":
            layout = JailLayout(
                workspace=place,
                argv=[executable, *argv[1:]],
                user=user,
                protected=scope.protected,
                writable=[os.path.realpath(w) for w in scope.writable],
            )
            layout, fds = _furnish(jail, cfg, layout, env_in, scope.tree)
            jail.argv = bwrap_argv(jail.executable, cfg, layout, fds, env_in)
        unenforced = _setup_limits(jail, cfg)
    except BaseException:
        jail.close()
        raise
    if unenforced is not None:
        jail.reason = unenforced if jail.reason is None else f"{jail.reason}; {unenforced}"
    return jail


def _unjailed(
    cfg: SandboxConfig,
    environ: Mapping[str, str],
    argv: list[str],
    executable: str,
    why: str | None,
) -> Jail:
    """``auto`` without a usable bubblewrap: a clean environment and a private ``HOME``."""
    private = make_scratch("flow-check-")
    home = os.path.join(private, "home")
    os.mkdir(home, 0o700)
    jail = Jail(
        "none",
        f"no jail: {why}; the check ran with a clean environment, a private HOME and limits only",
        argv,
        executable,
        env=_clean_env(cfg, environ, home),
    )
    jail._cleanups.append(lambda: remove_scratch(private))
    return jail


def _furnish(
    jail: Jail,
    cfg: SandboxConfig,
    layout: JailLayout,
    environ: Mapping[str, str],
    spec: TreeSpec | None,
) -> tuple[JailLayout, JailFds]:
    """Furnish a bubblewrap jail: a private copy of ``layout.workspace`` owned by the check's
    user (the workspace as it is now, or what ``spec`` says: the evidence run), on the check's
    own tmpfs where Flow can mount one, the seccomp filter, the identity files, the caches
    and the pipes. Each is registered on ``jail`` for ``close`` as soon as it exists;
    ``jail.reason`` says what is missing.

    Returns:
        The layout with the copy, the scratch folders and the caches, and the descriptors.

    Raises:
        OSError: the private copy could not be made (the caller's ``close`` removes the rest).
    """
    workspace, user = layout.workspace, layout.user
    plan = plan_workspace(workspace) if spec is None else spec.plan
    disk, no_disk = make_disk(workspace)
    if disk is not None:
        jail.disk = disk
        jail._later.append(disk.close)
    caches, no_cache = cache_folders(workspace, cfg.caches, user.owner, environ)
    tools = sized_copy_tools() if disk is None and user.owner is None else None
    sized = tools is not None and _has_size(jail.executable)
    files, overlay = plan.files, None if spec is None else spec.usable_overlay()
    if sized:  # what read-only or cache binds shadow is not copied: cp cannot write there
        shadowed = [*plan.read_only, *layout.protected, ".git"]
        shadowed += [os.path.relpath(place, workspace) for _, place in caches]
        files = tuple(f for f in files if not _shadowed(f, shadowed))
        overlay = {k: v for k, v in (overlay or {}).items() if not _shadowed(k, shadowed)}
    tree = build_tree(
        workspace,
        files,
        owner=user.owner,
        overlay=overlay,
        mount_points=() if sized else plan.read_only,
        parent=disk.tree if disk is not None else None,
    )
    # on Flow's tmpfs the copy goes with its unmount, so that runs first (_later: LIFO)
    jail._later.insert(0 if disk is not None else len(jail._later), tree.close)
    if disk is not None:
        disk.bound(cfg.disk_mib)
    elif sized and tools is not None:
        layout = _one_disk(jail, cfg, layout, tree.space, tools)
    if user.owner is not None:
        for folder in layout.writable:  # the results folder: the check writes there
            os.chown(folder, *user.owner)
    program, no_filter = seccomp_program(cfg.network)
    filter_fd = _keep(jail, seccomp_fd(program)) if program is not None else -1
    uid, gid = user.owner or (os.getuid(), os.getgid())
    identity = [_keep(jail, fd) for fd in data_fds(identity_files(uid, gid, JAIL_HOME))]
    etc_files = open_etc_files(etc_plan(cfg.network))
    for fd, _ in etc_files:
        _keep(jail, fd)
    jail.info_fd, write_fd = os.pipe()
    _keep(jail, write_fd)
    block_r, jail.block_fd = os.pipe()
    _keep(jail, block_r)
    notes = [user.missing] if user.missing else []
    notes += [f"no seccomp filter: {no_filter}"] if no_filter else []
    if no_disk and layout.disk_at is None:  # else bounded in all (_one_disk)
        notes.append(f"{UNBOUND['disk_per_place' if sized else 'disk_mib']}: {no_disk}")
    notes += [f"kept across checks (sandbox.caches): {', '.join(cfg.caches)}"] if caches else []
    notes += [f"sandbox.caches not kept: {no_cache}"] if no_cache else []
    jail.reason = "; ".join(notes) or None
    layout = replace(
        layout,
        protected=[*plan.read_only, *layout.protected],
        tree=tree.root,
        scratch=(disk.tmp, disk.shm) if disk is not None else None,
        caches=caches,
    )
    return layout, JailFds(write_fd, block_r, filter_fd, identity, etc_files)


def _one_disk(
    jail: Jail, cfg: SandboxConfig, layout: JailLayout, space: int, tools: tuple[str, str]
) -> JailLayout:
    """Not root, with bubblewrap's ``--size``: the check's disk is one bubblewrap tmpfs of the
    copy's ``space`` (bytes) plus ``disk_mib`` that holds the copy and ``/tmp``, and a
    ``/dev/shm`` whose size is taken off it (``verify/_disk.py``: ``disk_home``,
    ``shm_share``); where no place holds both, a tmpfs at the workspace's path alone."""
    home = disk_home(layout.workspace)
    shm = shm_share(cfg.disk_mib) if home is not None else 0
    jail.disk = JailDisk(home or layout.workspace, space + cfg.disk_mib * _MIB - shm, shm)
    jail._later.append(jail.disk.close)
    fsize = dict(_limit_values(cfg))[resource.RLIMIT_FSIZE]
    sized = (jail.disk.size, fsize, *tools)
    return replace(layout, sized=sized, disk_at=home, shm_size=shm)


def _shadowed(rel: str, places: Sequence[str]) -> bool:
    """Whether workspace-relative ``rel`` is one of ``places`` or lies below one."""
    return any(rel == p or rel.startswith(p.rstrip("/") + "/") for p in places)


def _keep(jail: Jail, fd: int) -> int:
    """Hand ``fd`` to the child: ``Jail.started`` closes Flow's copy, or ``Jail.close``."""
    jail.pass_fds = (*jail.pass_fds, fd)
    return fd


def _setup_limits(jail: Jail, cfg: SandboxConfig) -> str | None:
    """Prepare the rlimits and the check's cgroups (``verify/_cgroup.py``) for the jail.

    bubblewrap: ``jail.limits`` and ``jail.cgroup``, applied by ``Jail.started``; no jail:
    ``jail.preexec``.

    Returns:
        None when every whole-check limit is enforced, else what is not and why.
    """
    jailed = jail.block_fd >= 0  # bubblewrap's pid 1 (and on v1 its monitor) count too
    values: dict[str, float] = {
        "pids": cfg.processes + (1 if jailed else 0),
        "memory": cfg.memory_mib,
        "cpu": cfg.cpu_limit(),
    }
    if cfg.cpu_seconds > 0:
        values["cpuacct"] = cfg.cpu_seconds
        jail.cpu_budget_s = cfg.cpu_seconds
    group = make_cgroup(values, monitor=jailed)
    jail._later.append(group.close)
    jail.cgroup = group  # read after the check (limits_hit) and for cpu_seconds
    if jail.block_fd >= 0:  # bubblewrap: applied to its pid 1 by Jail.started()
        jail.limits = _limit_values(cfg)
        if isinstance(jail.disk, JailDisk):  # set after the in-jail copy (_jail_argv)
            jail.limits = [(r, v) for r, v in jail.limits if r != resource.RLIMIT_FSIZE]
    else:
        jail.preexec = _limits(cfg, group)
    counted = "cpu_seconds" in group.missing or group.cpu_seconds() is not None
    if jail.cpu_budget_s > 0 and not counted:  # made, but nothing there counts CPU time
        group.missing["cpu_seconds"] = "the check's cgroup does not count CPU time"
        jail.cpu_budget_s = 0.0
    notes = [f"{UNBOUND[key]}: {why}" for key, why in group.missing.items()]
    return "; ".join(notes) or None
