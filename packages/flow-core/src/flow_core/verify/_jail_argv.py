"""The bubblewrap command line of the check jail (mount order and what is exposed).

See ``flow_core.verify._sandbox`` for the jail as a whole. bubblewrap starts from an empty
root and applies its mount options in order, so the order here is the rule: the system
folders and the small ``/etc`` (``verify/_jail_root.py``), ``/dev`` and ``/proc``, the
private ``/tmp`` and ``/dev/shm``, the host paths the check's toolchain needs (read-only,
with ``0755`` folders above them), the private ``HOME``, the private copy of the workspace
at the workspace's path, then the read-only binds over it; the check's argv runs behind
``setpriv`` when Flow is root.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from flow_core.config._sandbox import SandboxConfig
from flow_core.verify._jail_root import SYSTEM, etc_plan, system_binds
from flow_core.verify._jail_user import (
    JAIL_HOME,
    SHM,
    TMP,
    VAR_TMP,
    CheckUser,
    check_user,
    jail_flags,
)

__all__ = [
    "JAIL_HOME",
    "TMP",
    "CheckUser",
    "JailFds",
    "JailLayout",
    "bwrap_argv",
    "check_user",
    "jail_flags",
]

#: Where the host copy is shown read-only while ``cp`` fills the check's sized tmpfs
#: (``JailLayout.sized``).
COPY_SOURCE = "/.flow-copy"
#: Exit status of the in-jail copy step when ``cp`` fails (before the check ran).
COPY_FAILED = 126


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _prefix_parts(prefix: str) -> list[str]:
    """``bin/`` and ``lib*/`` of an installation prefix (not ``share/`` or dotfiles)."""
    try:
        names = os.listdir(prefix)
    except OSError:
        return []
    return [os.path.join(prefix, n) for n in names if n == "bin" or n.startswith("lib")]


def _venv_of(path: str) -> str | None:
    here = os.path.dirname(path)
    for _ in range(6):
        if os.path.isfile(os.path.join(here, "pyvenv.cfg")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return None


def _venv_base(venv: str) -> str | None:
    try:
        text = Path(venv, "pyvenv.cfg").read_text("utf-8", "replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and os.path.isabs(value.strip()):
            return os.path.dirname(os.path.normpath(value.strip()))
    return None


def _shebang(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    if not words or not words[0].startswith(b"/") or words[0].endswith(b"/env"):
        return None
    return os.fsdecode(words[0])


def _pth_dirs(venv: str) -> list[str]:
    """Absolute folders a virtualenv's ``.pth`` files add to ``sys.path`` (editable installs)."""
    out: list[str] = []
    for pth in sorted(Path(venv).glob("lib*/python*/site-packages/*.pth"))[:200]:
        try:
            lines = pth.read_text("utf-8", "replace").splitlines()[:50]
        except OSError:
            continue
        out += [x.strip() for x in lines if x.startswith("/") and os.path.isdir(x.strip())]
    return out


def _needed(executable: str, cfg: SandboxConfig, env_path: str) -> list[str]:
    """Host paths the check needs: its program and the toolchain that program belongs to.

    The program, a script's ``#!`` interpreter, the virtualenv of either with the folders its
    ``.pth`` files add and the ``bin/``/``lib*/`` of the Python it was made from, the
    ``bin/``/``lib*/`` of the prefix each program lies in, the ``PATH`` entries, and
    ``sandbox.readable``. Paths inside the system folders are shown already.
    """
    out: list[str] = list(cfg.readable)
    programs = [executable]
    interpreter = _shebang(executable)
    if interpreter:
        programs.append(interpreter)
    for program in programs:
        for candidate in dict.fromkeys((os.path.normpath(program), os.path.realpath(program))):
            out.append(candidate)
            venv = _venv_of(candidate)
            if venv is not None:
                out += [venv, *_pth_dirs(venv)]
                base = _venv_base(venv)
                if base:
                    out += _prefix_parts(base)
                    out += _prefix_parts(os.path.realpath(base))
            out += _prefix_parts(os.path.dirname(os.path.dirname(candidate)))
    out += [p for p in env_path.split(os.pathsep) if os.path.isabs(p)]
    return out


@dataclass(frozen=True)
class JailLayout:
    """Where things are shown in the jail (``bwrap_argv``'s input besides the descriptors).

    Attributes:
        workspace: the workspace's real path (where the copy is bound and the check starts).
        argv: the check's argv, ``argv[0]`` the resolved executable.
        user: the check's user (``check_user``): privilege flags and the ``setpriv`` prefix.
        protected: workspace-relative paths bound read-only from the workspace over the copy.
        writable: absolute folders bound read-write (the check's private results folder).
        tree: the private copy of the workspace (``verify/_tree.py``), or None: the workspace.
        scratch: folders on the check's own tmpfs (``verify/_disk.py``) bound at ``/tmp`` and
            ``/dev/shm``; None: bubblewrap tmpfs of ``disk_mib`` each.
        caches: ``(host folder, place in the copy)`` of ``verify/_caches.py``, bound
            read-write over the copy before the read-only binds.
        sized: ``(tmpfs bytes, RLIMIT_FSIZE bytes, sh, cp)`` when Flow could not mount the
            check's own tmpfs (``verify/_disk.JailDisk``): a bubblewrap tmpfs of that size
            holds the workspace's path, ``tree`` is shown read-only at ``COPY_SOURCE``,
            and ``sh`` runs ``cp`` into it, sets the file-size limit and execs the check.
        disk_at: with ``sized``, where that tmpfs is mounted so that it also holds ``/tmp``
            (``verify/_disk.disk_home``); None: at the workspace's path, ``/tmp`` apart.
        shm_size: with ``disk_at``, the size of ``/dev/shm`` in bytes (``_disk.shm_share``).
    """

    workspace: str
    argv: Sequence[str]
    user: CheckUser = CheckUser(None, None, None)  # noqa: RUF009 - frozen, shared safely
    protected: Sequence[str] = ()
    writable: Sequence[str] = ()
    tree: str | None = None
    scratch: tuple[str, str] | None = None
    caches: Sequence[tuple[str, str]] = ()
    sized: tuple[int, int, str, str] | None = None
    disk_at: str | None = None
    shm_size: int = 0


@dataclass(frozen=True)
class JailFds:
    """Descriptors bubblewrap reads: ``--info-fd``, ``--block-fd``, ``--seccomp``
    (``verify/_seccomp.py``; -1: none), the generated ``/etc/passwd`` and ``/etc/group``
    (``_jail_root.data_fds`` of ``identity_files``) and the ``/etc`` files copied into the
    jail (``_jail_root.open_etc_files``: descriptor, path)."""

    info: int
    block: int
    seccomp: int = -1
    identity: Sequence[int] = ()
    etc_files: Sequence[tuple[int, str]] = ()


def bwrap_argv(
    bwrap: str,
    cfg: SandboxConfig,
    layout: JailLayout,
    fds: JailFds,
    environ: Mapping[str, str],
) -> list[str]:
    """The whole bubblewrap command line (mount order matters: see the module docstring).

    The system folders, ``/etc``, ``/dev``, ``/proc``, the private ``/tmp`` and ``/dev/shm``
    and the toolchain the check needs (read-only); then ``_workspace_part``: the private
    ``HOME``, ``layout.tree`` at the workspace's path, the caches, the writable folders and
    the read-only binds; then the jail's own root (bubblewrap's tmpfs, holding ``/etc`` and
    the folders made) is made read-only, so a check writes only where a bound place lets
    it; then the ``setpriv`` prefix and the argv.
    """
    who = layout.user
    out = [bwrap, *jail_flags(cfg.network, who), "--info-fd", str(fds.info)]
    out += ["--seccomp", str(fds.seccomp)] if fds.seccomp >= 0 else []
    out += ["--block-fd", str(fds.block), *system_binds(), "--dev", "/dev", "--proc", "/proc"]
    etc = etc_plan(cfg.network)
    made = set(etc.made)
    out += etc.options
    for fd, path in fds.etc_files:
        out += ["--perms", "0644", "--file", str(fd), path]
    for fd, name in zip(fds.identity, ("/etc/passwd", "/etc/group"), strict=False):
        out += ["--perms", "0644", "--ro-bind-data", str(fd), name]
    shown = [s for s in SYSTEM if os.path.exists(s)] + ["/dev", "/proc"]
    out += _scratch_part(bwrap, cfg, layout, shown, made)
    out += ["--perms", "0755", "--dir", "/var", "--symlink", "../tmp", VAR_TMP]
    made.update(("/var", TMP))
    needed = _needed(layout.argv[0], cfg, environ.get("PATH", "") if cfg.passes("PATH") else "")
    needed += [who.setpriv] if who.setpriv else []
    for path in sorted(dict.fromkeys(os.path.normpath(p) for p in needed), key=len):
        if path != "/" and not any(_under(path, s) for s in shown) and os.path.exists(path):
            shown.append(path)
            out += [*_open_parents(path, shown, made), "--ro-bind-try", path, path]
    out += [*_workspace_part(layout, shown, made), "--remount-ro", "/"]
    return [*out, "--chdir", layout.workspace, "--", *_copy_step(layout), *layout.argv]


def _scratch_part(
    bwrap: str, cfg: SandboxConfig, layout: JailLayout, shown: list[str], made: set[str]
) -> list[str]:
    """``/tmp`` and ``/dev/shm``, then bubblewrap's ``/dev`` made read-only (the check's user
    owns it when Flow is not root: unbounded otherwise; its device nodes and ``/dev/pts``
    are mounts of their own and stay usable).

    Flow's tmpfs (``layout.scratch``, root): its folders. ``layout.disk_at`` (not root, with
    ``--size``): one tmpfs there that holds the workspace's path and ``/tmp`` (a relative link
    to its ``.flow-tmp`` unless it is ``/tmp``), and ``/dev/shm`` of ``layout.shm_size``
    (``verify/_disk.py``). Else a tmpfs of ``disk_mib`` at each.
    """
    home = layout.disk_at
    if layout.scratch is not None:
        out = ["--bind", layout.scratch[0], TMP, "--bind", layout.scratch[1], SHM]
    elif home is not None and layout.sized is not None:
        perms = "1777" if home == TMP else "0755"
        out = [*_open_parents(home, shown, made), "--perms", perms]
        out += ["--size", str(layout.sized[0]), "--tmpfs", home]
        made.add(home)
        if home != TMP:
            inner = os.path.join(home, ".flow-tmp")
            out += ["--perms", "1777", "--dir", inner, "--symlink", inner.lstrip("/"), TMP]
        out += ["--perms", "1777", "--size", str(layout.shm_size), "--tmpfs", SHM]
    else:
        size = ["--size", str(cfg.disk_mib * 1024 * 1024)] if _has_size(bwrap) else []
        out = [w for p in (TMP, SHM) for w in ("--perms", "1777", *size, "--tmpfs", p)]
    return [*out, "--remount-ro", "/dev"]


def _copy_step(layout: JailLayout) -> list[str]:
    """What runs before the check's argv: ``setpriv`` (root), or the in-jail copy onto the
    sized tmpfs (``layout.sized``: ``cp``, then the file-size limit ``cp`` must not have,
    then ``exec``), or nothing."""
    if layout.sized is None:
        return layout.user.prefix()
    _, fsize, sh, cp = layout.sized
    script = (
        f"{cp} -a {COPY_SOURCE}/. . || exit {COPY_FAILED}; "
        f'ulimit -f {fsize // 512} || exit {COPY_FAILED}; exec "$@"'
    )
    return [sh, "-c", script, "sh"]


def _workspace_part(layout: JailLayout, shown: list[str], made: set[str]) -> list[str]:
    """The private ``HOME``, the copy at the workspace's path, the caches and writable
    folders bound read-write over it, then the read-only binds from the workspace."""
    workspace = layout.workspace
    out = ["--perms", "0777", "--dir", JAIL_HOME, *_open_parents(workspace, shown, made)]
    if layout.sized is not None and layout.tree is not None:
        out += ["--ro-bind", layout.tree, COPY_SOURCE, "--perms", "0755"]
        if layout.disk_at is not None:  # a folder of the check's one tmpfs (_scratch_part)
            out += ["--dir", workspace]
        else:
            out += ["--size", str(layout.sized[0]), "--tmpfs", workspace]
    else:
        out += ["--bind", layout.tree or workspace, workspace]
    for host, place in layout.caches:  # operator-named caches kept across checks
        out += [*_open_parents(place, shown, made), "--bind", host, place]
    for folder in layout.writable:  # the check's private results folder (run/_evidence.py)
        out += [*_open_parents(folder, shown, made), "--bind", folder, folder]
    return out + _read_only_binds(workspace, layout.protected)


_SIZE_SUPPORT: dict[str, bool] = {}


def _has_size(bwrap: str) -> bool:
    """Whether this bubblewrap knows ``--size`` (0.7 and later), asked once per program."""
    if bwrap not in _SIZE_SUPPORT:
        try:
            done = subprocess.run(
                [bwrap, "--help"], capture_output=True, timeout=10, check=False, env={}
            )
            _SIZE_SUPPORT[bwrap] = b"--size" in done.stdout + done.stderr
        except (OSError, subprocess.SubprocessError):
            _SIZE_SUPPORT[bwrap] = False
    return _SIZE_SUPPORT[bwrap]


def _open_parents(path: str, shown: Sequence[str], made: set[str]) -> list[str]:
    """``--perms 0755 --dir`` for each folder above ``path`` the jail does not show yet.

    bubblewrap would make them itself, but mode 0700: only its owner could pass through
    them. Folders inside a shown (bound) path exist already and are left alone.
    """
    out: list[str] = []
    here = "/"
    for part in os.path.normpath(path).split("/")[1:-1]:
        here = os.path.join(here, part)
        if here not in made and not any(_under(here, s) for s in shown):
            made.add(here)
            out += ["--perms", "0755", "--dir", here]
    return out


def _read_only_binds(workspace: str, protected: Sequence[str]) -> list[str]:
    """``--ro-bind-try`` for ``.git`` and each protected path that exists, parents first.

    A symlink cannot be bound over; its target, when inside the workspace, is protected on its
    own, and the executable's identity check refuses a check whose program was replaced.
    """
    out: list[str] = []
    bound: list[str] = []
    targets = {os.path.normpath(os.path.join(workspace, rel)) for rel in (".git", *protected)}
    for target in sorted(targets, key=len):
        if not _under(target, workspace) or target == workspace:
            continue
        if any(_under(target, b) for b in bound) or not _exists_not_link(target):
            continue
        bound.append(target)
        out += ["--ro-bind-try", target, target]
    return out


def _exists_not_link(path: str) -> bool:
    """One ``lstat``: ``path`` exists and is not a symbolic link."""
    try:
        return not stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False
