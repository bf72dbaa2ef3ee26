"""What the what-runs rule compares a write with: installed and workspace module names.

The rule itself is ``tools/_policy.py`` (:func:`~flow_core.tools._policy.what_runs_refusal`);
this module gathers its inputs (``docs/architecture.md``, "Writes that change what runs"):

* the top-level module names installed where the checks import from: the site folders of
  Flow's own interpreter and of each check program's environment (the ``lib/python3*``
  folders of the prefix of the program and of the interpreter its absolute ``#!`` line
  names), the folders their ``.pth`` files add, the names each distribution's
  ``top_level.txt`` declares and the ones a setuptools editable finder maps, all read as
  listings and text, never by running anything;
* the workspace's top-level module names, from one listing of the tree;
* whether a write creates a new top-level module.
"""

from __future__ import annotations

import ast
import functools
import glob
import os
import re
import site
import sys
import sysconfig
from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath

from flow_core.tools._policy import module_name
from flow_core.verify._jail_argv import _shebang

__all__ = [
    "git_exclude",
    "installed_top_level",
    "new_top_level",
    "top_level_of",
    "workspace_top_level",
]

_NOT_MODULES = (".dist-info", ".egg-info", ".data")


def _site_dirs(program: str) -> Iterator[str]:
    """Site folders of the environment ``program`` (an interpreter or script) belongs to."""
    for exe in (program, _shebang(program)):
        if not exe:
            continue
        prefix = os.path.dirname(os.path.dirname(os.path.abspath(exe)))
        for pattern in ("lib/python3*/site-packages", "lib/python3*/dist-packages"):
            yield from glob.glob(os.path.join(glob.escape(prefix), pattern))
        yield from glob.glob(os.path.join(glob.escape(prefix), "lib/python3/dist-packages"))


def _own_site_dirs() -> Iterator[str]:
    yield from site.getsitepackages() if hasattr(site, "getsitepackages") else ()
    for key in ("purelib", "platlib"):
        yield sysconfig.get_paths().get(key, "")
    yield from (p for p in sys.path if p.endswith(("site-packages", "dist-packages")))


@functools.lru_cache(maxsize=8)
def installed_top_level(programs: tuple[str | None, ...]) -> frozenset[str]:
    """Top-level module names in the site folders the checks import from.

    Args:
        programs: absolute paths of the check programs (``CheckConfig.executable``).

    Returns:
        Every name a folder entry there defines (``X/``, ``X.py``, ``X.cpython-312-...so``),
        bookkeeping folders (``*.dist-info``, ``__pycache__``) left out.
    """
    folders = dict.fromkeys(_own_site_dirs())
    for program in programs:
        if program:
            folders.update(dict.fromkeys(_site_dirs(program)))
    names: set[str] = set()
    extra: dict[str, None] = {}
    for folder in folders:
        names.update(_listed_modules(folder, site_dir=True, pth=extra))
    for folder in extra:
        if folder not in folders:
            names.update(_listed_modules(folder, site_dir=False, pth={}))
    return frozenset(names)


def _pth_paths(path: str) -> Iterator[str]:
    """The folders a ``.pth`` file adds to ``sys.path`` (its plain path lines)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read(65536).splitlines()
    except OSError:
        return
    for raw in lines:
        line = raw.strip()
        if line and not line.startswith(("#", "import ", "import\t")):
            folder = os.path.join(os.path.dirname(path), line)
            if os.path.isdir(folder):
                yield os.path.normpath(folder)


def _listed_modules(folder: str, *, site_dir: bool, pth: dict[str, None]) -> set[str]:
    """Top-level module names one folder on ``sys.path`` defines; the folders its ``.pth``
    files add are put in ``pth`` (editable installs)."""
    names: set[str] = set()
    try:
        entries = os.listdir(folder) if folder else []
    except OSError:
        return names
    for entry in entries:
        full = os.path.join(folder, entry)
        if entry.endswith(".pth"):
            pth.update(dict.fromkeys(_pth_paths(full)))
        elif entry.endswith(_NOT_MODULES) or entry == "__pycache__":
            if site_dir and entry.endswith((".dist-info", ".egg-info")):
                names.update(_declared_top_level(os.path.join(full, "top_level.txt")))
            continue
        elif entry.isidentifier() and os.path.isdir(full):
            # Site folders hold namespace packages too; elsewhere only regular packages.
            if site_dir or os.path.isfile(os.path.join(full, "__init__.py")):
                names.add(entry)
        else:
            name = module_name(entry)
            if name is not None:
                names.add(name)
            if site_dir and entry.startswith("__editable__") and entry.endswith("_finder.py"):
                names.update(_finder_mapping(full))
    return names


def _read_small(path: str, limit: int = 1 << 18) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(limit)
    except OSError:
        return ""


def _declared_top_level(path: str) -> set[str]:
    """The names a distribution's ``top_level.txt`` declares (setuptools writes it, editable
    installs included, whose modules no folder listing shows)."""
    return {n.strip() for n in _read_small(path).splitlines() if n.strip().isidentifier()}


_MAPPING = re.compile(r"^MAPPING\b[^=\n]*=\s*(\{[^\n]*\})\s*$", re.MULTILINE)


def _finder_mapping(path: str) -> set[str]:
    """The module names a setuptools editable finder (``__editable___*_finder.py``) maps to
    folders outside the site folder: the keys of its ``MAPPING`` literal, read, never run."""
    found = _MAPPING.search(_read_small(path))
    try:
        mapping = ast.literal_eval(found.group(1)) if found else {}
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return set()
    if not isinstance(mapping, dict):
        return set()
    return {k for k in mapping if isinstance(k, str) and k.isidentifier()}


def _package_dirs(files: Iterable[str]) -> set[str]:
    return {str(PurePosixPath(f).parent) for f in files if PurePosixPath(f).name == "__init__.py"}


def top_level_of(path: str, packages: set[str]) -> str | None:
    """The top-level module name ``path`` defines itself, or None.

    A module file or a package's ``__init__.py`` is top level when the folder holding it
    (the package folder's parent, for ``__init__.py``) is not a package: that folder is what
    a test runner or the interpreter puts on ``sys.path``.
    """
    p = PurePosixPath(path)
    name = module_name(path)
    if name is None:
        return None
    holder = p.parent.parent if p.name == "__init__.py" else p.parent
    return None if str(holder) in packages else name


def workspace_top_level(files: Iterable[str], *, besides: str) -> frozenset[str]:
    """Top-level module names the workspace's ``files`` define, ``besides`` left out."""
    listed = [f for f in files if f != besides]
    packages = _package_dirs(listed)
    names = {top_level_of(f, packages) for f in listed}
    names.discard(None)
    return frozenset(n for n in names if n is not None)


def new_top_level(path: str, exists: bool, files: Iterable[str]) -> str | None:
    """The top-level module a write of ``path`` creates, or None (the file exists already,
    or it is not a top-level module)."""
    if exists:
        return None
    return top_level_of(path, _package_dirs(files))


def git_exclude(root: str, limit: int = 1 << 18) -> bytes:
    """The repository's own ignore file ``ROOT/.git/info/exclude`` (linters obey it like a
    ``.gitignore``), at most ``limit`` bytes; ``b""`` when absent or unreadable.

    The workspace tools never open ``.git``; this reads that one file, each component opened
    with ``O_NOFOLLOW`` so a link cannot lead the read elsewhere.
    """
    fds: list[int] = []
    try:
        fds.append(os.open(root, os.O_RDONLY | os.O_DIRECTORY))
        for name in (".git", "info"):
            fds.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fds[-1]))
        fds.append(os.open("exclude", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fds[-1]))
        return os.read(fds[-1], limit)
    except OSError:
        return b""
    finally:
        for fd in fds:
            os.close(fd)
