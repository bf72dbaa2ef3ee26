"""Isolated runs: a private tree outside the workspace where the whole workflow runs.

For a git workspace the tree is a linked worktree (``git worktree add --detach`` of ``HEAD``)
inside the run's record folder; the user's uncommitted state is then copied over it (every
path whose working-tree state differs from ``HEAD``: unstaged and staged changes, files added
with ``git add`` or removed with ``git rm``, deletions, and untracked files that are not
ignored), so the run starts from exactly what the user sees. Submodules are copied as they are
checked out in the workspace (their commit and local changes, without their ``.git``); one
that cannot be copied refuses the run (``isolate_failed``). A file whose ``filter`` attribute
is set (Git LFS, git-crypt) is in the tree as git stores it: no filter runs (every filter is
blanked, nothing is downloaded), so an LFS file is its pointer, also when the workspace holds
the downloaded content; a changed one gets the index's version (``git checkout-index``),
never the working copy's bytes (which differ from the stored form whether or not the user
changed anything). Ignored files (``.venv``, build
outputs) are not copied: checks keep using the executables resolved in the real workspace.
Git runs hardened (``flow_core/_git.py``: no hook, fsmonitor, filter, converter or
system/global configuration): a ``post-checkout`` hook or a smudge filter is project code
nobody approved.
Without git (or without a first commit) the tree is a private copy of the workspace that skips
the generated and environment folders (``flow_safeio.SKIPPED_DIRS``) and keeps symbolic links
as links. Afterwards the worktree is removed (``git worktree remove --force`` then
``git worktree prune``), so the user's ``.git`` holds no trace of it. Source: flow-core's
README, "Isolated runs".
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from flow_core._git import run_git
from flow_core.store._record import StoreError
from flow_safeio import is_generated_dir

__all__ = ["MAX_COPY_BYTES", "MAX_COPY_FILES", "IsolatedTree", "prepare_tree", "remove_tree"]

#: Largest workspace a private copy is made of: files and bytes.
MAX_COPY_FILES = 50_000
MAX_COPY_BYTES = 1024 * 1024 * 1024
_GIT_TIMEOUT_S = 120.0
#: ``git worktree add`` writes every tracked file: a 150,000-file repository took over 120 s
#: on a loaded two-core machine (``bench/bench_tree.py``). A bound against a hang, not a budget.
_CHECKOUT_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class IsolatedTree:
    """An isolated tree.

    Attributes:
        kind: ``"git-worktree"`` or ``"copy"``.
        top: the folder made (worktree or copy root).
        root: the workspace inside it (differs from ``top`` when the workspace is a
            subfolder of its git repository).
        git_top: the real repository's top level (worktrees only).
    """

    kind: Literal["git-worktree", "copy"]
    top: Path
    root: Path
    git_top: Path | None = None


def _git(
    cwd: Path, *args: str, timeout: float = _GIT_TIMEOUT_S
) -> subprocess.CompletedProcess[bytes]:
    return run_git(cwd, *args, timeout=timeout)


def _git_layout(workspace: Path) -> tuple[Path, str] | None:
    """``(top level, prefix)`` when ``workspace`` is in a git repository with a commit."""
    if shutil.which("git") is None:
        return None
    try:
        top = _git(workspace, "rev-parse", "--show-toplevel")
        prefix = _git(workspace, "rev-parse", "--show-prefix")
        head = _git(workspace, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    except (OSError, subprocess.TimeoutExpired):
        return None
    if top.returncode or prefix.returncode or head.returncode:
        return None
    return Path(os.fsdecode(top.stdout.strip())), os.fsdecode(prefix.stdout.strip())


def _copy_entry(src: Path, dst: Path) -> None:
    """Copy one file or symbolic link (never followed); remove ``dst`` when ``src`` is gone."""
    try:
        st = os.lstat(src)
    except (FileNotFoundError, NotADirectoryError):
        with contextlib.suppress(FileNotFoundError, NotADirectoryError, IsADirectoryError):
            os.unlink(dst)
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError, IsADirectoryError):
        os.unlink(dst)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), dst)
    elif stat.S_ISREG(st.st_mode):
        shutil.copy2(src, dst, follow_symlinks=False)


def _skipped(workspace: Path, rel: str) -> bool:
    """Whether ``rel`` lies in a generated folder (flow-safeio's rule, markers included)."""
    parent = str(workspace)
    for part in rel.split("/")[:-1]:
        if is_generated_dir(parent, part):
            return True
        parent = os.path.join(parent, part)
    return False


def _worktree(workspace: Path, dest: Path, top: Path, prefix: str) -> IsolatedTree:
    add = ("worktree", "add", "--detach", "--quiet", str(dest), "HEAD")
    made = _git(top, *add, timeout=_CHECKOUT_TIMEOUT_S)
    if made.returncode:
        raise StoreError(
            f"git worktree add failed: {made.stderr.decode(errors='replace').strip()}",
            code="isolate_failed",
        )
    tree = IsolatedTree("git-worktree", dest, dest / prefix, top)
    try:
        modes = _index_modes(workspace)
        submodules = {rel for rel, mode in modes.items() if mode == b"160000"}
        differing = [
            rel
            for rel in _differing(workspace)
            if rel not in submodules and not _skipped(workspace, rel)
        ]
        stored = _filtered(workspace, [r for r in differing if _regular_in(modes, workspace, r)])
        for rel in differing:
            if rel not in stored:
                _copy_entry(workspace / rel, tree.root / rel)
        _checkout_stored(workspace, tree, sorted(stored))
        for rel in sorted(submodules):
            _copy_submodule(workspace / rel, tree.root / rel)
    except BaseException:
        remove_tree(tree)
        raise
    return tree


def _listed(workspace: Path, *args: str) -> set[str]:
    """The NUL-separated paths a git command prints (relative to ``workspace``).

    Raises:
        StoreError: ``isolate_failed`` when git fails.
    """
    out = _git(workspace, *args)
    if out.returncode:
        raise _failed(args[0], out)
    return {os.fsdecode(raw) for raw in out.stdout.split(b"\0") if raw}


def _differing(workspace: Path) -> list[str]:
    """Every path whose working-tree state differs from ``HEAD``: unstaged and staged changes
    (a file added or ``git rm``-ed, whose working copy matches the index), deletions, and
    untracked files that are not ignored. Paths relative to ``workspace``, sorted."""
    index = _listed(workspace, "ls-files", "-z", "-m", "-o", "-d", "--exclude-standard", "--")
    head = _listed(workspace, "diff", "--name-only", "-z", "--no-renames", "--relative", "HEAD")
    return sorted(index | head)


def _failed(what: str, out: subprocess.CompletedProcess[bytes]) -> StoreError:
    err = out.stderr.decode(errors="replace").strip()
    return StoreError(f"git {what} failed: {err}", code="isolate_failed")


def _index_modes(workspace: Path) -> dict[str, bytes]:
    """Path (relative to ``workspace``) -> mode (``b"100644"``, ``b"160000"`` for a
    submodule, ...) of every stage-0 entry of the index."""
    out = _git(workspace, "ls-files", "-z", "-s", "--")
    if out.returncode:
        raise _failed("ls-files", out)
    found: dict[str, bytes] = {}
    for raw in out.stdout.split(b"\0"):
        meta, _, path = raw.partition(b"\t")
        mode, _, rest = meta.partition(b" ")
        if rest.endswith(b" 0"):
            found[os.fsdecode(path)] = mode
    return found


def _regular_in(modes: dict[str, bytes], workspace: Path, rel: str) -> bool:
    """A regular file in the index and in the workspace (a deleted one stays deleted)."""
    if modes.get(rel) not in (b"100644", b"100755"):
        return False
    try:
        return stat.S_ISREG(os.lstat(workspace / rel).st_mode)
    except OSError:
        return False


_BATCH = 500


def _filtered(workspace: Path, paths: list[str]) -> set[str]:
    """The paths among ``paths`` whose ``filter`` attribute is set (``git check-attr``)."""
    found: set[str] = set()
    for i in range(0, len(paths), _BATCH):
        out = _git(workspace, "check-attr", "-z", "filter", "--", *paths[i : i + _BATCH])
        if out.returncode:
            raise _failed("check-attr", out)
        parts = out.stdout.split(b"\0")
        for path, value in zip(parts[0::3], parts[2::3], strict=False):
            if value not in (b"unspecified", b"unset"):
                found.add(os.fsdecode(path))
    return found


def _checkout_stored(workspace: Path, tree: IsolatedTree, paths: list[str]) -> None:
    """Write the index's version of ``paths`` into the tree, unfiltered."""
    for i in range(0, len(paths), _BATCH):
        batch = paths[i : i + _BATCH]
        out = _git(workspace, "checkout-index", "--force", f"--prefix={tree.top}/", "--", *batch)
        if out.returncode:
            raise _failed("checkout-index", out)


def _copy_submodule(src: Path, dst: Path) -> None:
    """A submodule's files as the user has them checked out (its commit and local changes;
    not its ``.git``, not its generated folders); an empty folder stays empty.

    Raises:
        StoreError: ``isolate_failed`` when a checked-out submodule cannot be copied.
    """
    if not src.is_dir() or src.is_symlink():
        return
    try:
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(src, dst, symlinks=True, ignore=_not_copied_submodule)
    except (OSError, shutil.Error) as err:
        raise StoreError(
            f"the submodule {src.name} cannot be reproduced in the isolated tree ({err}); "
            "run without --isolate",
            code="isolate_failed",
        ) from err


def _not_copied_submodule(directory: str, names: list[str]) -> list[str]:
    """``_not_copied`` plus the submodule's own ``.git`` (a file pointing into the parent's)."""
    return [*_not_copied(directory, names), *(n for n in names if n == ".git")]


def _copy(workspace: Path, dest: Path) -> IsolatedTree:
    files = size = 0
    for dirpath, dirnames, filenames in os.walk(workspace):
        dirnames[:] = [d for d in dirnames if not is_generated_dir(dirpath, d)]
        files += len(filenames)
        for name in filenames:
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(dirpath, name)).st_size
        if files > MAX_COPY_FILES or size > MAX_COPY_BYTES:
            raise StoreError(
                f"the workspace is too large for a private copy (over {MAX_COPY_FILES} files "
                f"or {MAX_COPY_BYTES} bytes outside generated folders); fix: make it a git "
                "repository (an isolated run then uses a worktree) or run without --isolate",
                code="isolate_failed",
            )
    shutil.copytree(workspace, dest, symlinks=True, ignore=_not_copied)
    return IsolatedTree("copy", dest, dest)


def _not_copied(directory: str, names: list[str]) -> list[str]:
    """Generated folders, and anything that is not a directory, file or link: shutil refuses
    a FIFO, socket or device, and one such entry would fail the whole copy."""
    skipped: list[str] = []
    for name in names:
        try:
            mode = os.lstat(os.path.join(directory, name)).st_mode
        except OSError:
            skipped.append(name)
            continue
        plain = stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)
        if not plain or is_generated_dir(directory, name):
            skipped.append(name)
    return skipped


def prepare_tree(workspace: Path, dest: Path) -> IsolatedTree:
    """Make the isolated tree for ``workspace`` at ``dest`` (which must not exist).

    Raises:
        StoreError: code ``isolate_failed`` (git failed, or the copy would be too large).
    """
    try:
        layout = _git_layout(workspace)
        if layout is not None:
            return _worktree(workspace, dest, *layout)
        return _copy(workspace, dest)
    except (OSError, subprocess.TimeoutExpired, shutil.Error) as err:
        shutil.rmtree(dest, ignore_errors=True)
        raise StoreError(f"could not make the isolated tree: {err}", code="isolate_failed") from err


def remove_tree(tree: IsolatedTree) -> None:
    """Remove the tree; for a worktree also its entry in the repository (best effort)."""
    if tree.git_top is not None:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            _git(tree.git_top, "worktree", "remove", "--force", str(tree.top))
        shutil.rmtree(tree.top, ignore_errors=True)
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            _git(tree.git_top, "worktree", "prune")
    shutil.rmtree(tree.top, ignore_errors=True)
