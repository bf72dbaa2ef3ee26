"""Who a check runs as, and the jail's namespace and privilege flags.

Apart from the command line (``verify/_jail_argv.py``, which re-exports these) so that the
bubblewrap probe behind ``flow status`` (``verify/_probe.py``) loads only what it runs:
``docs/architecture.md``, "Sandbox" (privilege).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flow_core.config._sandbox import SandboxConfig

__all__ = ["JAIL_HOME", "SHM", "TMP", "VAR_TMP", "CheckUser", "check_user", "jail_flags"]

#: Where the jail's private ``HOME`` lives (on the jail's own ``/tmp`` tmpfs).
JAIL_HOME = "/tmp/.flow-home"  # noqa: S108 - inside the jail, on its private tmpfs
#: The jail's private, empty ``/tmp`` (a tmpfs; the host's ``/tmp`` is hidden).
TMP = "/tmp"  # noqa: S108 - a mount point inside the jail, not a file Flow writes
#: The jail's private shared-memory folder (a tmpfs of ``disk_mib`` like ``TMP``).
SHM = "/dev/shm"  # noqa: S108 - a mount point inside the jail
#: A link to ``TMP`` in the jail, for programs that keep larger files there.
VAR_TMP = "/var/tmp"  # noqa: S108 - a symlink inside the jail


#: Where ``setpriv`` (util-linux) is looked for when it is not on ``PATH``.
_SETPRIV_PLACES = ("/usr/bin/setpriv", "/bin/setpriv")


@dataclass(frozen=True)
class CheckUser:
    """Who the check runs as (``docs/architecture.md``, "Sandbox": privilege).

    Attributes:
        uid / gid: the check's user and group on the host; ``None`` keeps Flow's own (Flow is
            not root, so there is nothing to give up but capabilities).
        setpriv: the ``setpriv`` program that switches to ``uid``/``gid`` inside the jail when
            Flow is root, or None (not root, or not found: then ``missing`` says so).
        missing: why Flow runs as root but the check cannot change its uid, or None.
    """

    uid: int | None
    gid: int | None
    setpriv: str | None
    missing: str | None = None

    @property
    def owner(self) -> tuple[int, int] | None:
        """``(uid, gid)`` the private tree is given to, or None (Flow's own user)."""
        if self.uid is None or self.gid is None or self.setpriv is None:
            return None
        return self.uid, self.gid

    def bwrap_flags(self) -> list[str]:
        """Capability and user-namespace flags for bubblewrap.

        As root, the check's pid 1 keeps only the capabilities ``setpriv`` needs to become
        ``uid`` and bubblewrap needs to enter the check's own (perhaps mode 0700) copy, all
        dropped there; otherwise bubblewrap's own user namespace holds
        no capability (``--cap-drop ALL``) and refuses nested user namespaces
        (``--disable-userns``).
        """
        if self.owner is not None:
            keep = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_DAC_READ_SEARCH")
            return ["--cap-drop", "ALL", *(w for c in keep for w in ("--cap-add", c))]
        if os.geteuid() == 0:
            return ["--cap-drop", "ALL"]
        return ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]

    def prefix(self) -> list[str]:
        """What runs before the check's argv inside the jail: the uid change, or nothing.

        ``setpriv`` clears the supplementary groups, the inheritable and bounding capability
        sets and sets ``no_new_privs``; changing from uid 0 clears the permitted, effective and
        ambient sets (``capabilities(7)``).
        """
        if self.owner is None or self.setpriv is None:
            return []
        return [
            self.setpriv,
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]


def check_user(cfg: SandboxConfig, path_env: str) -> CheckUser:
    """The check's user: ``sandbox.check_uid``/``check_gid`` when Flow is root, else Flow's."""
    if os.geteuid() != 0:
        return CheckUser(None, None, None)
    found = shutil.which("setpriv", path=path_env)
    setpriv = os.path.abspath(found) if found else None
    if setpriv is None:
        setpriv = next((p for p in _SETPRIV_PLACES if os.access(p, os.X_OK)), None)
    if setpriv is None:
        why = "setpriv was not found (install util-linux): the check runs as root without "
        return CheckUser(None, None, None, why + "capabilities")
    return CheckUser(cfg.check_uid, cfg.check_gid, setpriv)


def jail_flags(network: bool, user: CheckUser | None = None) -> list[str]:
    """Namespace, lifetime and privilege flags (``user`` None: those of Flow's own user)."""
    flags = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"]
    flags.append("--unshare-uts")
    if not network:
        flags.append("--unshare-net")
    return flags + (user or CheckUser(None, None, None)).bwrap_flags()
