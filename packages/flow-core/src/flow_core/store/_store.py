"""The run store: one private folder per run under ``$XDG_STATE_HOME/flow/runs/``.

Source: flow-core's README, "Run store". The folder is never inside the
workspace (a model that can write the workspace must not be able to rewrite the record of what
it did, or the pre-images an undo restores). Folders are 0700 and files 0600. Old records are
pruned when a new one starts: beyond ``[runs] keep`` records or older than
``[runs] max_age_days`` days, never a record whose process is still running.
"""

from __future__ import annotations

import builtins
import datetime
import json
import os
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flow_core.__about__ import __version__
from flow_core.config._runs import RunsConfig
from flow_core.store._bytes import now_iso, read_small
from flow_core.store._record import RunRecord
from flow_core.store._where import StoreError, default_store_root, store_root_outside

if TYPE_CHECKING:
    from flow_core.store._lock import WorkspaceLock

__all__ = ["RunInfo", "RunStore", "default_store_root"]

_META_LIMIT = 1024 * 1024


_clock = {"last_us": 0}


def new_run_id() -> str:
    """``YYYYMMDDTHHMMSSffffffZ-xxxxxx``: UTC time to the microsecond, then 24 random bits.

    Ids sort by creation time as plain strings; within one process each id's time is later
    than the previous one's, even when the clock has not moved.
    """
    now = datetime.datetime.now(datetime.UTC)
    stamp = int(now.timestamp() * 1_000_000)
    stamp = max(stamp, _clock["last_us"] + 1)
    _clock["last_us"] = stamp
    moment = datetime.datetime.fromtimestamp(stamp / 1_000_000, datetime.UTC)
    return moment.strftime("%Y%m%dT%H%M%S%fZ-") + secrets.token_hex(3)


def _valid_id(run_id: str) -> bool:
    return (
        0 < len(run_id) <= 64
        and run_id[0].isdigit()
        and all(c.isalnum() or c == "-" for c in run_id)
    )


def process_start(pid: int) -> str | None:
    """The kernel's start time of process ``pid`` (``/proc/PID/stat`` field 22, in clock
    ticks since boot; proc(5)), or None where ``/proc`` cannot tell. With the pid it names one
    process: a pid the kernel reused for another process has another start time."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read(4096)
    except OSError:
        return None
    fields = raw.rsplit(b")", 1)[-1].split()
    return fields[19].decode() if len(fields) > 19 else None


def pid_alive(pid: Any, start: Any = None) -> bool:
    """Whether process ``pid`` exists and, when ``start`` is known, is the one that started
    then (not a later process that got the same pid)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if isinstance(start, str):
        now = process_start(pid)
        return now is None or now == start
    return True


@dataclass(frozen=True)
class RunInfo:
    """One record's summary, read from its ``meta.json``.

    Attributes:
        id: the run id.
        kind: ``"run"`` or ``"undo"``.
        created: UTC ISO 8601 time the record was started.
        workspace: the workspace root it changed (absolute path).
        status: ``"running"`` while it runs, then the report's status (``verified``,
            ``unverified``, ``interrupted``, ...), ``undone``/``failed`` for an undo, or
            ``abandoned`` for a record whose process died without finishing it (set by the
            first reader that finds the process gone: ``store/_reap.py``).
        task: the task text (runs), or None.
        changed_files: paths left changed, as recorded at the end (may be empty for a
            record that never finished; ``RunRecord.changed_files`` reads the live log).
        dir: the record's folder.
        meta: the whole ``meta.json``.
    """

    id: str
    kind: str
    created: str
    workspace: str
    status: str
    task: str | None
    changed_files: list[str]
    dir: Path
    meta: dict[str, Any] = field(repr=False)

    @property
    def interrupted(self) -> bool:
        """The record never finished and its process is gone (killed, crashed, power loss)."""
        return self.status == "abandoned" or (self.status == "running" and not self.alive)

    @property
    def alive(self) -> bool:
        """The process that writes this record is still running."""
        return pid_alive(self.meta.get("pid"), self.meta.get("pid_start"))


class RunStore:
    """Opens, lists, prunes and creates run records under ``root``.

    Args:
        root: the store folder (``default_store_root()`` for the user's).
        limits: the ``[runs]`` table (caps and pruning).

    Raises:
        StoreError: code ``run_store_unusable`` when ``root`` is relative.
    """

    def __init__(self, root: Path, limits: RunsConfig | None = None) -> None:
        if not root.is_absolute():
            raise StoreError(f"the run store {str(root)!r} must be an absolute path")
        self.root = root
        self.limits = limits or RunsConfig()

    @classmethod
    def for_workspace(
        cls,
        workspace: str | os.PathLike[str],
        limits: RunsConfig | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> RunStore:
        """The user's store, refused when it lies inside ``workspace``.

        Raises:
            StoreError: code ``run_store_unusable`` naming the fix (set XDG_STATE_HOME).
        """
        return cls(store_root_outside(workspace, environ), limits)

    def _ensure_root(self) -> None:
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = os.lstat(self.root)
        except OSError as err:
            raise StoreError(
                f"the run store {self.root} cannot be created ({err.strerror}); fix: make "
                "its parent writable or set XDG_STATE_HOME"
            ) from err
        if not os.path.isdir(self.root) or os.path.islink(self.root):
            raise StoreError(f"the run store {self.root} is not a directory; remove it")
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(self.root, 0o700)

    def workspace_lock(self, workspace: str | os.PathLike[str]) -> WorkspaceLock:
        """The writer's lock of ``workspace`` (``store/_lock.py``), not yet taken.

        Raises:
            StoreError: the store cannot be created.
        """
        from flow_core.store._lock import WorkspaceLock

        self._ensure_root()
        return WorkspaceLock(self.root, workspace)

    # -- creating -------------------------------------------------------------------------------

    def begin(
        self,
        *,
        workspace: str,
        kind: str = "run",
        task: str | None = None,
        **meta: Any,
    ) -> RunRecord:
        """Create a new record (prunes old ones first) and write its first ``meta.json``.

        Raises:
            StoreError: the store cannot be created or written.
        """
        self._ensure_root()
        self.prune()
        for _ in range(8):
            run_id = new_run_id()
            directory = self.root / run_id
            try:
                directory.mkdir(mode=0o700)
            except FileExistsError:
                continue
            except OSError as err:
                raise StoreError(f"cannot create a run record in {self.root}: {err}") from err
            break
        else:
            raise StoreError(f"could not pick a free run id in {self.root}")
        record = RunRecord(
            directory,
            {
                "id": run_id,
                "kind": kind,
                "created": now_iso(),
                "workspace": workspace,
                "task": task,
                "status": "running",
                "pid": os.getpid(),
                "pid_start": process_start(os.getpid()),
                "flow_version": __version__,
                **meta,
            },
            max_file_bytes=self.limits.max_file_bytes,
            max_run_bytes=self.limits.max_run_bytes,
        )
        record.save_meta()
        return record

    # -- reading --------------------------------------------------------------------------------

    def _info(self, directory: Path) -> RunInfo | None:
        """A record's summary; one whose process died without finishing it is first settled
        as ``abandoned`` (``store/_reap.py``), so no reader ever sees a dead ``running``."""
        info = self._read_info(directory)
        if info is not None and info.status == "running" and not info.alive:
            from flow_core.store._reap import abandon

            abandon(self, info)
            info = self._read_info(directory)
        return info

    def _read_info(self, directory: Path) -> RunInfo | None:
        try:
            meta = json.loads(read_small(directory / "meta.json", _META_LIMIT))
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or meta.get("id") != directory.name:
            return None
        changed = meta.get("changed_files")
        return RunInfo(
            id=directory.name,
            kind=str(meta.get("kind", "run")),
            created=str(meta.get("created", "")),
            workspace=str(meta.get("workspace", "")),
            status=str(meta.get("status", "running")),
            task=meta.get("task") if isinstance(meta.get("task"), str) else None,
            changed_files=[str(p) for p in changed] if isinstance(changed, list) else [],
            dir=directory,
            meta=meta,
        )

    def list(self, workspace: str | None = None) -> list[RunInfo]:
        """Every readable record, newest first; only ``workspace``'s when given."""
        try:
            names = [n for n in os.listdir(self.root) if _valid_id(n)]
        except FileNotFoundError:
            return []
        except OSError as err:
            raise StoreError(f"the run store {self.root} cannot be read ({err.strerror})") from err
        infos = [i for n in sorted(names, reverse=True) if (i := self._info(self.root / n))]
        if workspace is not None:
            infos = [i for i in infos if _same_dir(i.workspace, workspace)]
        return infos

    def get(self, run_id: str) -> RunInfo:
        """The record ``run_id``; a unique prefix of an id is accepted.

        Raises:
            StoreError: code ``run_not_found`` (none, or the prefix is ambiguous).
        """
        if _valid_id(run_id):
            exact = self._info(self.root / run_id)
            if exact is not None:
                return exact
            matches = [i for i in self.list() if i.id.startswith(run_id)]
            if len(matches) == 1:
                return matches[0]
            if len(matches) > 1:
                raise StoreError(
                    f"run id {run_id!r} matches {len(matches)} runs; give more of it "
                    "(flow runs lists them)",
                    code="run_not_found",
                )
        raise StoreError(
            f"no run {run_id!r} in {self.root}; flow runs lists the recorded runs",
            code="run_not_found",
        )

    def latest(self, workspace: str, *, kind: str | None = "run") -> RunInfo | None:
        """The newest record of ``workspace`` (of ``kind``, when given), or None."""
        for info in self.list(workspace):
            if kind is None or info.kind == kind:
                return info
        return None

    def open(self, info: RunInfo) -> RunRecord:
        """A reader (and late writer: undo and apply update it) for an existing record."""
        return RunRecord(
            info.dir,
            dict(info.meta),
            max_file_bytes=self.limits.max_file_bytes,
            max_run_bytes=self.limits.max_run_bytes,
        )

    # -- pruning --------------------------------------------------------------------------------

    def prune(self, *, now: datetime.datetime | None = None) -> builtins.list[str]:
        """Remove records beyond ``limits.keep`` (oldest first) or older than ``max_age_days``.

        A record whose process is still alive is never removed. Returns the removed ids.
        """
        moment = now or datetime.datetime.now(datetime.UTC)
        horizon = self.limits.max_age_days
        removed: list[str] = []
        for index, info in enumerate(self.list()):
            if info.status == "running" and info.alive:
                continue
            too_many = index >= self.limits.keep - 1  # room for the one about to start
            too_old = horizon > 0 and _age_days(info.created, moment) > horizon
            if too_many or too_old:
                _remove_tree(info.dir)
                removed.append(info.id)
        return removed


def _age_days(created: str, now: datetime.datetime) -> float:
    try:
        then = datetime.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return (now - then).total_seconds() / 86_400.0


def _same_dir(a: str, b: str) -> bool:
    return os.path.normpath(a) == os.path.normpath(b) or (
        os.path.realpath(a) == os.path.realpath(b)
    )


def _remove_tree(directory: Path) -> None:
    """Remove a record folder (a leftover git worktree inside it is removed as files)."""
    shutil.rmtree(directory, ignore_errors=True)
