"""``flow runs``, ``flow show``, ``flow undo`` and ``flow apply``: the run store from the shell.

The run store (``flow_core.store``) keeps every run's record under
``$XDG_STATE_HOME/flow/runs/``. These commands read it and, for undo and apply, write the
workspace through flow-safeio with the operator's protected paths.

Output: ``flow runs`` prints an aligned table (``--json``: one JSON object ``{"runs": [...]}``);
``flow show`` prints a summary, or exactly one part of the record (``--diff``,
``--transcript``, ``--plan``, ``--json`` for the report); ``flow undo`` and ``flow apply`` say
what they did on stderr and print one JSON object on stdout. Exit codes: 0 done, 1 refused
(a conflict, nothing to undo), 2 no such run or a configuration/usage error.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flow_cli._options import CommonOptions
from flow_cli._summary import clean, shorten

if TYPE_CHECKING:
    from flow_core import FlowConfig
    from flow_core.store import RunInfo, RunStore

EXIT_OK = 0
EXIT_FAILED = 1


def _exit_code(code: str) -> int:
    """The exit code of an error code: its category's in flow-core's catalogue (2, 1, 130)."""
    from flow_core import EXIT_CODES, error_category

    return EXIT_CODES[error_category(code)]


@dataclass
class StoreContext:
    """The store, the config when one loads, and the workspace that filters the runs.

    ``explicit`` is True when ``--workspace`` or a config file named the workspace; otherwise
    ``workspace`` is the current directory and filters only the runs whose workspace holds it.
    """

    store: RunStore
    config: FlowConfig | None
    workspace: str
    explicit: bool = True

    def runs_here(self) -> list[RunInfo]:
        """The runs of this workspace, newest first: exactly ``workspace``'s when it was
        named, else those whose workspace is the current directory or holds it."""
        if self.explicit:
            return self.store.list(self.workspace)
        return [i for i in self.store.list() if _holds(i.workspace, self.workspace)]


def _holds(root: str, path: str) -> bool:
    root, path = os.path.normpath(root), os.path.normpath(path)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def say(message: str) -> None:
    """One human line on stderr."""
    sys.stderr.write(f"flow: {message}\n")
    sys.stderr.flush()


def open_context(opts: CommonOptions) -> StoreContext:
    """Load the config if one loads (its ``[runs]`` caps, its protected paths) and the store.

    These commands work from any folder: they read records (and undo/apply write the run's
    own workspace), which gives no model anything, so the store is not refused for lying
    inside the current directory (``flow run`` still refuses that: a run's model must not
    reach its record). The workspace only filters: ``--workspace`` or the config's
    ``workspace_dir``, else the current directory.

    Raises:
        flow_core.store.StoreError: the store path is not absolute.
    """
    from flow_core import ConfigError, load_config
    from flow_core.config._runs import RunsConfig
    from flow_core.store import RunStore, default_store_root

    config: FlowConfig | None = None
    try:
        config = load_config(config_file=opts.config, workspace=opts.workspace).config
    except ConfigError:
        config = None
    cwd = os.path.abspath(os.getcwd())
    if config is not None:
        workspace = str(config.workspace_dir)
    else:
        workspace = os.path.abspath(opts.workspace or cwd)
    explicit = opts.workspace is not None or os.path.normpath(workspace) != cwd
    limits = config.runs if config is not None else RunsConfig()
    return StoreContext(RunStore(default_store_root(), limits), config, workspace, explicit)


def pick(ctx: StoreContext, run_id: str | None) -> RunInfo:
    """The run ``run_id`` (a unique prefix is enough), or this workspace's latest run.

    Raises:
        flow_core.store.StoreError: code ``run_not_found``.
    """
    from flow_core.store import StoreError

    if run_id:
        return ctx.store.get(run_id)
    latest = next((i for i in ctx.runs_here() if i.kind == "run"), None)
    if latest is None:
        raise StoreError(
            f"no run recorded for the workspace {ctx.workspace}; flow runs --all lists every "
            "workspace's runs; give a run id",
            code="run_not_found",
        )
    return latest


def describe_status(info: RunInfo) -> str:
    """The status with what happened to the record afterwards (undone, applied, isolated)."""
    meta = info.meta
    status = "abandoned (process gone)" if info.interrupted else info.status
    extra: list[str] = []
    if meta.get("isolated"):
        extra.append("applied" if meta.get("applied") else "isolated, not applied")
    if meta.get("undone_by"):
        extra.append(f"undone by {meta['undone_by']}")
    if info.kind == "undo" and meta.get("target"):
        extra.append(f"undo of {meta['target']}")
    return status + (f" ({', '.join(extra)})" if extra else "")


def info_json(info: RunInfo, changed: list[str]) -> dict[str, Any]:
    """One run as a JSON object (``flow runs --json``)."""
    meta = info.meta
    return {
        "id": info.id,
        "kind": info.kind,
        "created": info.created,
        "ended": meta.get("ended"),
        "workspace": info.workspace,
        "status": info.status,
        "interrupted": info.interrupted,
        "verified": bool(meta.get("verified")),
        "task": info.task,
        "changed_files": changed,
        "isolated": bool(meta.get("isolated")),
        "applied": meta.get("applied") if meta.get("isolated") else None,
        "undone_by": meta.get("undone_by"),
        "target": meta.get("target"),
        "dir": str(info.dir),
    }


def changed_of(ctx: StoreContext, info: RunInfo) -> list[str]:
    """The files a run changed: from its end, or from its live file log when it never ended."""
    if info.status != "running" and "changed_files" in info.meta:
        return info.changed_files
    return [e.path for e in ctx.store.open(info).changed_files()]


def list_runs(opts: CommonOptions, *, as_json: bool, limit: int, everywhere: bool) -> int:
    """``flow runs``: the newest ``limit`` runs (0: all); this workspace's unless ``everywhere``."""
    from flow_core.store import StoreError

    try:
        ctx = open_context(opts)
    except StoreError as err:
        say(f"{err.message} [{err.code}]")
        return _exit_code(err.code)
    infos = ctx.store.list() if everywhere else ctx.runs_here()
    if not infos and not everywhere and not ctx.explicit:
        infos = ctx.store.list()
        if infos:
            say(f"no runs recorded for {ctx.workspace}; listing every workspace's runs")
    if limit > 0:
        infos = infos[:limit]
    rows = [info_json(i, changed_of(ctx, i)) for i in infos]
    if as_json:
        sys.stdout.write(json.dumps({"store": str(ctx.store.root), "runs": rows}) + "\n")
        return EXIT_OK
    if not rows:
        where = "any workspace" if everywhere else ctx.workspace
        say(f"no runs recorded for {where} in {ctx.store.root}")
        return EXIT_OK
    table = [("ID", "TIME (UTC)", "STATUS", "CHANGED", "WORKSPACE", "TASK")]
    for info, row in zip(infos, rows, strict=True):
        changed = row["changed_files"]
        files = ", ".join(changed[:3]) + (f" +{len(changed) - 3}" if len(changed) > 3 else "")
        table.append(
            (
                info.id,
                info.created.replace("T", " ")[:19],
                describe_status(info),
                clean(files) or "-",
                info.workspace,
                shorten(clean(info.task or "").replace("\n", " "), 50) or "-",
            )
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]) - 1)]
    for r in table:
        cells = [c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)]
        sys.stdout.write("  ".join([*cells, r[-1]]).rstrip() + "\n")
    return EXIT_OK


def show_summary(ctx: StoreContext, info: RunInfo) -> str:
    """A run's record as a few human lines (what ``flow show`` prints by default)."""
    record = ctx.store.open(info)
    meta = info.meta
    lines = [f"{info.kind} {info.id}"]
    ended = meta.get("ended")
    lines.append(f"  time:      {info.created}" + (f" to {ended}" if ended else ""))
    lines.append(f"  workspace: {info.workspace}")
    if info.task:
        lines.append("  task:      " + shorten(clean(info.task).replace("\n", " "), 200))
    lines.append(f"  status:    {describe_status(info)}")
    entries = record.changed_files()
    if entries:
        lines.append("  changed:")
        for e in entries:
            what = "created" if e.created else "changed"
            if not e.post_known:
                what += ", the run ended while writing it"
            lines.append(f"    {clean(e.path)} ({what})")
    else:
        lines.append("  changed:   nothing")
    present = [n for n in _PARTS.values() if (info.dir / n).exists()]
    lines.append(f"  record:    {info.dir} ({', '.join(present)})")
    lines.extend(f"  next:      {hint}" for hint in next_steps(info, bool(entries)))
    return "\n".join(lines) + "\n"


def next_steps(info: RunInfo, changed: bool) -> list[str]:
    """The commands that make sense for a run now (undo, apply, redo)."""
    meta = info.meta
    if meta.get("undone_by"):
        return [f"flow undo {meta['undone_by']}   (puts the change back)"]
    if meta.get("isolated") and not meta.get("applied"):
        return [f"flow show {info.id} --diff", f"flow apply {info.id}"] if changed else []
    return [f"flow undo {info.id}"] if changed else []


#: ``flow show`` flags and the record file each prints.
_PARTS = {
    "diff": "diff.patch",
    "transcript": "transcript.jsonl",
    "plan": "plan.md",
    "json": "report.json",
}


def show_run(opts: CommonOptions, run_id: str | None, part: str | None) -> int:
    """``flow show [ID] [--diff|--transcript|--plan|--json]``."""
    from flow_core.store import StoreError

    try:
        ctx = open_context(opts)
        info = pick(ctx, run_id)
    except StoreError as err:
        say(f"{err.message} [{err.code}]")
        return _exit_code(err.code)
    if part is None:
        sys.stdout.write(show_summary(ctx, info))
        return EXIT_OK
    text = ctx.store.open(info).read_text(_PARTS[part])
    if text is None:
        why = "it never finished" if info.status == "running" else "it has none"
        say(f"run {info.id} has no {_PARTS[part]} ({why}); flow show {info.id} summarises it")
        return EXIT_FAILED
    if sys.stdout.isatty() and part != "transcript":
        # Model text can hold terminal escape sequences; a pipe (git apply) gets the bytes.
        text = clean(text)
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    return EXIT_OK


def workspace_for(ctx: StoreContext, info: RunInfo) -> Any:
    """The run's workspace under flow-safeio, with the operator's protected paths when the
    loaded config is for that workspace (else the built-in protected list)."""
    from flow_core.config._protected import protected_paths
    from flow_safeio import Workspace

    protected = protected_paths()
    if ctx.config is not None and os.path.normpath(str(ctx.config.workspace_dir)) == (
        os.path.normpath(info.workspace)
    ):
        protected = tuple(ctx.config.protected)
    return Workspace(info.workspace, protected=protected)


def _emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def undo(opts: CommonOptions, run_id: str | None, *, force: bool) -> int:
    """``flow undo [ID] [--force]``: put back what a run changed (see ``undo_run``)."""
    from flow_core.store import StoreError, undo_run
    from flow_safeio import SafeIOError

    try:
        ctx = open_context(opts)
        info = pick(ctx, run_id)
        with workspace_for(ctx, info) as ws:
            result = undo_run(ctx.store, info, ws, force=force)
    except (StoreError, SafeIOError) as err:
        code = getattr(err, "code", "undo_failed")
        message = getattr(err, "message", str(err))
        say(f"{message} [{code}]")
        _emit({"ok": False, "error": {"code": code, "message": message}})
        return _exit_code(code)
    for path in result.restored:
        say(f"restored {path}")
    for path in result.removed:
        say(f"removed {path} (the run created it)")
    for path in result.forced:
        say(f"{path} had changed since the run; restored anyway (--force)")
    if result.undo_id:
        say(f"undid {info.id}; to put it back: flow undo {result.undo_id}")
    else:
        say(f"nothing to undo: every file of {info.id} already holds its pre-run content")
    _emit({"ok": True, **result.__dict__})
    return EXIT_OK


def apply(opts: CommonOptions, run_id: str) -> int:
    """``flow apply ID``: write an isolated run's change into the workspace (see ``apply_run``)."""
    from flow_core.store import StoreError, apply_run
    from flow_safeio import SafeIOError

    try:
        ctx = open_context(opts)
        info = pick(ctx, run_id)
        with workspace_for(ctx, info) as ws:
            result = apply_run(ctx.store, info, ws)
    except (StoreError, SafeIOError) as err:
        code = getattr(err, "code", "apply_conflict")
        message = getattr(err, "message", str(err))
        say(f"{message} [{code}]")
        _emit({"ok": False, "error": {"code": code, "message": message}})
        return _exit_code(code)
    for path in result.written:
        say(f"applied {path}")
    for path in result.removed:
        say(f"removed {path}")
    say(f"applied {info.id}; to take it back: flow undo {info.id}")
    _emit({"ok": True, **result.__dict__})
    return EXIT_OK
