"""The bubblewrap command line of the check jail (mount order and what is exposed).

See ``flow_core.verify._sandbox`` for the jail as a whole. bubblewrap applies its mount
options in order, so the order here is the rule: the read-only root, the private ``/tmp``,
``/run`` and homes, the paths shown again from those, the private ``HOME``, the writable
workspace, then the read-only binds over it.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping, Sequence
from pathlib import Path

from flow_core.config._sandbox import SandboxConfig

__all__ = ["JAIL_HOME", "TMP", "bwrap_argv", "jail_flags"]

#: Where the jail's private ``HOME`` lives (on the jail's own ``/tmp`` tmpfs).
JAIL_HOME = "/tmp/.flow-home"  # noqa: S108 - inside the jail, on its private tmpfs
#: The jail's private, empty ``/tmp`` (a tmpfs; the host's ``/tmp`` is hidden).
TMP = "/tmp"  # noqa: S108 - a mount point inside the jail, not a file Flow writes


def jail_flags(network: bool) -> list[str]:
    flags = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"]
    flags.append("--unshare-uts")
    if not network:
        flags.append("--unshare-net")
    return flags


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _homes(environ: Mapping[str, str]) -> list[str]:
    out = []
    for home in (environ.get("HOME"), _passwd_home()):
        if home and os.path.isabs(home):
            real = os.path.realpath(home)
            if real != "/" and real not in out and os.path.isdir(real):
                out.append(real)
    return out


def _passwd_home() -> str | None:
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None


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


def _needed(executable: str, cfg: SandboxConfig, env_path: str) -> list[str]:
    """Host paths the check needs that a hidden place (``/tmp``, a home) may cover."""
    out: list[str] = list(cfg.readable)
    programs = [executable]
    interpreter = _shebang(executable)
    if interpreter:
        programs.append(interpreter)
    for program in programs:
        for candidate in dict.fromkeys((os.path.normpath(program), os.path.realpath(program))):
            venv = _venv_of(candidate)
            if venv is not None:
                out.append(venv)
                base = _venv_base(venv)
                if base:
                    out += _prefix_parts(base)
                    out += _prefix_parts(os.path.realpath(base))
            out += _prefix_parts(os.path.dirname(os.path.dirname(candidate)))
    out += [p for p in env_path.split(os.pathsep) if os.path.isabs(p)]
    return out


def bwrap_argv(
    bwrap: str,
    cfg: SandboxConfig,
    *,
    workspace: str,
    protected: Sequence[str],
    argv: list[str],
    environ: Mapping[str, str],
    info_fd: int,
    block_fd: int,
    writable: Sequence[str] = (),
) -> list[str]:
    """The whole bubblewrap command line (mount order matters: see the module docstring)."""
    hidden = [TMP, "/run", *(h for h in _homes(environ) if not _under(h, TMP))]
    out = [bwrap, *jail_flags(cfg.network), "--info-fd", str(info_fd), "--block-fd", str(block_fd)]
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for place in hidden:
        out += ["--tmpfs", place]
    needed = _needed(argv[0], cfg, environ.get("PATH", "") if cfg.passes("PATH") else "")
    if cfg.network:
        needed.append("/run/systemd/resolve")  # where /etc/resolv.conf often points
    shown: list[str] = []
    for path in sorted(dict.fromkeys(os.path.normpath(p) for p in needed), key=len):
        inside_hidden = any(_under(path, h) for h in hidden)
        if inside_hidden and not any(_under(path, s) for s in shown) and os.path.exists(path):
            shown.append(path)
            out += ["--ro-bind-try", path, path]
    out += ["--dir", JAIL_HOME, "--bind", workspace, workspace]
    for folder in writable:  # the check's private results folder (run/_evidence.py)
        out += ["--bind", folder, folder]
    return [*out, *_read_only_binds(workspace, protected), "--chdir", workspace, "--", *argv]


def _read_only_binds(workspace: str, protected: Sequence[str]) -> list[str]:
    """``--ro-bind-try`` for ``.git`` and each protected path that exists, parents first.

    A symlink cannot be bound over; its target, when inside the workspace, is protected on its
    own, and the executable's identity check refuses a check whose program was replaced.
    """
    out: list[str] = []
    bound: list[str] = []
    targets = {os.path.normpath(os.path.join(workspace, rel)) for rel in (".git", *protected)}
    for target in sorted(targets, key=len):
        if not _under(target, workspace) or target == workspace or os.path.islink(target):
            continue
        if any(_under(target, b) for b in bound) or not os.path.exists(target):
            continue
        bound.append(target)
        out += ["--ro-bind-try", target, target]
    return out
