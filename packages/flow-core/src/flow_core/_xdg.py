"""Flow's per-user state and cache folders, by the XDG Base Directory Specification.

One rule for every front end: the run store (``store/``) keeps runs under the state folder and
the TUI keeps its input history there; the checks' operator-named caches
(``[sandbox] caches``, ``verify/_caches.py``) lie under the cache folder.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["cache_dir", "state_dir"]


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/flow``, or ``~/.local/state/flow`` when it is unset, empty or relative.

    The XDG Base Directory Specification ("XDG_STATE_HOME") says a relative value is invalid
    and must be ignored. Nothing is created here.

    Args:
        environ: the environment to read (default ``os.environ``); ``HOME`` is taken from it
            too, falling back to the password database.
    """
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME", "")
    if not state or not os.path.isabs(state):
        home = env.get("HOME") or os.path.expanduser("~")
        state = os.path.join(home, ".local", "state")
    return Path(os.path.normpath(state)) / "flow"


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/flow``, or ``~/.cache/flow`` when it is unset, empty or relative.

    Same rules as ``state_dir`` (the specification's "XDG_CACHE_HOME"). Nothing is created.
    """
    env = os.environ if environ is None else environ
    cache = env.get("XDG_CACHE_HOME", "")
    if not cache or not os.path.isabs(cache):
        home = env.get("HOME") or os.path.expanduser("~")
        cache = os.path.join(home, ".cache")
    return Path(os.path.normpath(cache)) / "flow"
