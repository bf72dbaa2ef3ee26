"""Operator-named caches a check keeps across checks (``[sandbox] caches``).

``docs/architecture.md``, "Sandbox". A check runs on a fresh private copy of the workspace
(``verify/_tree.py``), so tool caches start empty every time. An operator who wants a cache
kept (``.mypy_cache``, ``.pytest_cache``) names it; Flow then keeps one folder per workspace
and name under ``$XDG_CACHE_HOME/flow/check-caches/`` (``flow_core._xdg.cache_dir``), never in
the user's tree, and binds it read-write at that name in the check's copy. Flow's own
programs never read it. The folder is the check user's (``sandbox.check_uid`` when Flow is
root), mode 0700, under folders only Flow's user may pass through.

This is a deliberate hole in "nothing is kept": what one check leaves there the next reads,
so a model-written test could poison it (a cache can change which tests run). That is why it
is off unless configured and why every result names the caches in ``sandbox_reason``, as
Docker BuildKit's cache mounts and Bazel's writable paths are explicit per build.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from urllib.parse import quote

from flow_core._xdg import cache_dir

__all__ = ["cache_folders"]


def cache_folders(
    workspace: str,
    names: Sequence[str],
    owner: tuple[int, int] | None,
    environ: Mapping[str, str] | None = None,
) -> tuple[list[tuple[str, str]], str | None]:
    """The host folder of each named cache (made when missing), with its place in the jail.

    Args:
        workspace: the workspace root (a real path).
        names: ``sandbox.caches`` (validated: relative, no ``..``, never ``.git``).
        owner: ``(uid, gid)`` the folders are given to, or None (Flow's own user).
        environ: where ``XDG_CACHE_HOME``/``HOME`` are read (default ``os.environ``).

    Returns:
        ``([(host folder, jail path)], None)``, or ``([], why)`` when the cache folder cannot
        be used (inside the workspace, or not writable). Never raises.
    """
    if not names:
        return [], None
    key = hashlib.sha256(os.fsencode(workspace)).hexdigest()[:16]
    base = cache_dir(environ) / "check-caches" / key
    real = os.path.realpath(base)
    if (real + "/").startswith(workspace.rstrip("/") + "/"):
        return [], f"the cache folder {base} lies inside the workspace"
    out: list[tuple[str, str]] = []
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
        for name in names:
            host = os.path.join(base, quote(name, safe=""))
            os.makedirs(host, mode=0o700, exist_ok=True)
            if owner is not None:
                os.chown(host, *owner)
            out.append((host, os.path.join(workspace, name)))
    except OSError as err:
        return [], f"cannot make the cache folders under {base} ({err.strerror or err})"
    return out, None
