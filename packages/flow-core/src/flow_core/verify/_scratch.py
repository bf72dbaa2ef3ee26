"""The temporary folders Flow makes for checks, and the one place that removes them.

A check's private copy (``verify/_tree.py``, ``flow-tree-``), the private ``HOME`` of an
unjailed check (``verify/_sandbox.py``, ``flow-check-``) and a check's private results folder
(``run/_evidence.py``, ``flow-results-``) are each made by :func:`make_scratch` and removed by
:func:`remove_scratch`, whatever way the check ended (``docs/architecture.md``, "Sandbox").
Three owners back each other up:

1. the code that made it removes it in a ``finally`` (``Jail.close``, ``Run.run_check``);
2. what is still registered when Flow exits normally (an exception, ``sys.exit``, a handled
   signal) is removed at exit (``atexit``);
3. a folder's name carries the pid of the Flow that made it (``PREFIX-PID-XXXXXXXX``), so the
   next Flow removes the folders of a Flow that is gone (killed with SIGKILL) the first time
   it makes one of the same kind there (``_cgroup.sweep_once``).

Removal copes with what a check can leave: files and folders owned by the check's user (Flow
is root then, so it may remove them) and folders the check made unreadable or unwritable to
their owner (Flow runs as that user when not root: the modes are opened up first).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import stat
import tempfile
import threading

from flow_core.verify._cgroup import sweep_once

__all__ = ["live_scratch", "make_scratch", "remove_scratch"]

_LIVE: set[str] = set()
_LOCK = threading.Lock()


def make_scratch(prefix: str, base: str | None = None, *, sweep: bool = True) -> str:
    """Make a fresh folder ``BASE/PREFIX-PID-XXXXXXXX`` (mode 0700) and register it.

    Args:
        prefix: ``flow-tree-``, ``flow-check-`` or ``flow-results-``.
        base: where (default: the system temporary folder).
        sweep: remove the leftovers of gone Flows in ``base`` first (once per process and
            ``(base, prefix)``); False for a folder on a check's own tmpfs.

    Raises:
        OSError: the folder could not be made.
    """
    where = base if base is not None else tempfile.gettempdir()
    if sweep:
        sweep_once(where, prefix, _remove_tree)
    path = tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=where)
    with _LOCK:
        _LIVE.add(path)
    return path


def remove_scratch(path: str) -> None:
    """Remove a folder made by :func:`make_scratch` and all it holds; never raises."""
    _remove_tree(path)
    with _LOCK:
        _LIVE.discard(path)


def live_scratch() -> list[str]:
    """The folders made and not yet removed (for tests and diagnostics)."""
    with _LOCK:
        return sorted(_LIVE)


def _remove_tree(path: str) -> None:
    """``rmtree``; where that leaves something, open up the folders' modes and retry."""
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
        return
    with contextlib.suppress(OSError):
        if not os.path.islink(path):
            os.chmod(path, stat.S_IRWXU)
    for here, dirs, _ in os.walk(path, onerror=lambda err: None):
        for name in dirs:
            folder = os.path.join(here, name)
            with contextlib.suppress(OSError):
                if not os.path.islink(folder):  # the check's processes are gone by now
                    os.chmod(folder, stat.S_IRWXU)
    shutil.rmtree(path, ignore_errors=True)


@atexit.register
def _remove_all() -> None:
    for path in live_scratch():
        remove_scratch(path)
