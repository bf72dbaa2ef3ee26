"""The verified runtime's facade: ``Runtime`` (status, check, run, rollback, interrupt, close).

Sources: ``docs/architecture.md`` ("The life of one flow run", "What verified means", "Trust").

The parts live next to it: the run itself (``_cycle``), the role loop (``_loop``), context
trimming (``_context``), change tracking (``_changes``), the prompt texts (``_prompts``), the
reviewer's reply (``_review``), per-run state (``_state``) and report assembly
(``_reporting``). ``Runtime`` owns the long-lived parts (backend, editor, workspace) and
creates one ``RunState`` per ``run``/``check``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flow_core._errors import (
    BackendError,
    EditorError,
    FlowError,
    NotTrustedError,
    UnknownCheckError,
)
from flow_core._protocols import ChatBackend, EditorBridge, EventSink, Role
from flow_core._report import CheckResult, ErrorInfo, Report, ReportStatus
from flow_core.run._baseline import BaselineGuard, baseline_check_names
from flow_core.run._changes import ChangeTracker, sha256_hex
from flow_core.run._evidence import RunEvidence, prepare
from flow_core.run._journal import NULL_JOURNAL, Journal
from flow_core.run._preflight import model_preflight, preflight
from flow_core.run._reporting import build_report
from flow_core.run._state import Interrupted, RunState
from flow_safeio import SafeIOError

if TYPE_CHECKING:
    from flow_core.config import FlowConfig
    from flow_core.run._budget import RoleBudget
    from flow_core.store import RunStore
    from flow_core.tools import ToolBox
    from flow_safeio import Workspace

__all__ = ["Runtime"]

#: The check runner's module. It, the run driver and the file tools are imported when a check
#: or a run first needs them, so ``status()`` (``flow status``) loads none of them.
_CHECKS_MODULE = "flow_core.verify._checks"


def _kill_check_groups(owner: object) -> None:
    """Kill ``owner``'s check process groups (``verify/_checks.kill_all_process_groups``).

    When the check runner was never imported no group was ever started, and nothing is
    imported here: this runs from signal handlers, which must not take the import lock.
    """
    checks = sys.modules.get(_CHECKS_MODULE)
    if checks is not None:
        checks.kill_all_process_groups(owner=owner)


class Runtime:
    """Plan → code → verify → review under host-enforced budgets.

    Args:
        config: a validated ``FlowConfig`` (checks already snapshotted).
        trusted: allow edits and the configured named checks (``docs/architecture.md``,
            "Trust"); default read-only.
        backend: the model server; built with ``make_backend(config)`` on first need when None
            (``status()`` never builds it, so it never imports httpx).
        editor: an attached Rose bridge; file reads and writes then go through it, checks refuse
            dirty buffers and the gate compares its freshness snapshots.
        on_event: receives progress ``Event``s; must be fast; exceptions from it are ignored.
        config_sources: the config files that were loaded (reported as-is).
        store: the run store (``flow_core.store.RunStore``); each ``run`` then gets a record
            there (transcript, pre-images, diff, report) and its report names it. None (the
            default for library use) records nothing, except that an isolated run uses the
            user's store.

    The runtime owns ``backend`` and ``editor``: ``close()`` closes both.
    """

    def __init__(
        self,
        config: FlowConfig,
        *,
        trusted: bool = False,
        backend: ChatBackend | None = None,
        editor: EditorBridge | None = None,
        on_event: EventSink | None = None,
        config_sources: Sequence[str] = (),
        store: RunStore | None = None,
    ) -> None:
        self.config = config
        self.trusted = trusted
        self._backend = backend
        self._editor = editor
        self._on_event = on_event
        self._config_sources = list(config_sources)
        self._store = store
        self._workspace: Workspace | None = None
        self._editor_schemas: list[dict[str, Any]] | None = None
        self._changes = ChangeTracker(self._get_workspace)
        self._evidence = RunEvidence()
        self._state = self._new_state()

    # -- public API -----------------------------------------------------------------------------

    def status(self) -> Report:
        """Describe the configuration: no model request, no project command, no httpx import.

        The only process it may start is the bubblewrap probe (``bwrap ... true``, once per
        process) behind ``Report.sandbox``.

        Returns:
            A report of kind ``"status"``, status ``"ok"`` (the configuration loaded); ``ok``
            is false, and ``warnings`` says why, when a run could not be verified as
            configured (``run/_preflight.py``: no required check, a required check's
            executable missing, the workspace gone).
        """
        from flow_core._factory import config_status

        return config_status(self.config, trusted=self.trusted, sources=self._config_sources)

    def check(self, name: str | None = None) -> Report:
        """Run one configured check by name, or every configured check (config order).

        Returns:
            A report of kind ``"check"``; ``ok`` is true when every selected check passed
            (status ``"passed"``), else status ``"failed"``, or ``"interrupted"`` after
            ``interrupt()`` or Ctrl-C (process groups are killed first).

        Raises:
            NotTrustedError: without ``trusted`` (named checks execute project code).
            UnknownCheckError: ``name`` is not configured.
            ConfigError: ``sandbox_unavailable``: ``[sandbox] mode = "bwrap"`` without a
                usable bubblewrap.
        """
        if not self.trusted:
            raise NotTrustedError(
                "named checks run project code, so they need --trusted; fix: review the "
                "[checks.*] tables in your operator config, then start Flow again with --trusted"
            )
        if name is not None and name not in self.config.checks:
            known = ", ".join(self.config.checks) or "none"
            raise UnknownCheckError(
                f"no check named {name!r} in the operator config (configured: {known}); "
                "fix: add [checks." + name + "] to the operator file or use a configured name"
            )
        from flow_core.verify._sandbox import require_sandbox

        require_sandbox(self.config.sandbox)
        missing = model_preflight(self.config, self._list_models_quietly)
        if missing:
            self._state = self._new_state()
            self._state.errors.extend(missing)
            return self._report("check", "error", ok=False)
        state = self._state = self._new_state()
        self._evidence = RunEvidence()
        names = [name] if name is not None else list(self.config.checks)
        status: ReportStatus
        try:
            results = [self._run_one_check(n, None) for n in names]
            state.final_checks = results
            if state.stop or any(r.status == "interrupted" for r in results):
                status = "interrupted"
            elif not results:
                state.error("no_checks", "no named checks are configured")
                status = "failed"
            else:
                status = "passed" if all(r.status == "passed" for r in results) else "failed"
        except (KeyboardInterrupt, Interrupted):
            _kill_check_groups(self)
            status = "interrupted"
        return self._report("check", status, ok=status == "passed")

    def run(self, task: str, *, isolate: bool | None = None) -> Report:
        """Run one task through plan → code → verify → review.

        Args:
            task: what to do, in natural language.
            isolate: run in a private tree and apply only a verified change
                (``run/_isolated.py``); None takes ``[runs] isolate``. Ignored for a read-only
                run and with an editor attached (Rose edits the real buffers).

        Returns:
            A report of kind ``"run"``; ``ok == verified``. Status ``"verified"``,
            ``"unverified"``, ``"read_only"`` (no trust), ``"failed"`` (the planner could not
            finish, or the backend/editor failed), ``"interrupted"``, or ``"error"`` (preflight
            refused it before any model request: ``preflight_*`` codes; or the run store
            could not be used). With a store, ``run_id``/``run_dir`` name the record.
        """
        problems = preflight(self.config, task=task, trusted=self.trusted)
        if not problems:
            problems = model_preflight(self.config, self._list_models_quietly)
        if problems:
            self._state = self._new_state(task)
            self._changes = ChangeTracker(self._get_workspace)
            self._state.errors.extend(problems)
            return self._report("run", "error", ok=False)
        isolate = self.config.runs.isolate if isolate is None else isolate
        writes = self.trusted and self._editor is None
        if isolate and writes:
            return self._run_isolated(task)
        if not self.trusted or self._store is None:
            return self._run_recorded(task)
        from flow_core.run._exclusive import run_exclusive

        return run_exclusive(self, task, self._store, may_isolate=writes)

    def _run_isolated(self, task: str) -> Report:
        """``run_isolated`` in the user's store (or the attached one)."""
        from flow_core.run._isolated import run_isolated
        from flow_core.store import RunStore, StoreError

        try:
            store = self._store or RunStore.for_workspace(
                self.config.workspace_dir, self.config.runs
            )
            return run_isolated(self, task, store)
        except StoreError as err:
            return self._failed_report(task, err.code, err.message)

    def _run_recorded(self, task: str) -> Report:
        """A run in the workspace itself, recorded when a store is attached."""
        from flow_core.store import StoreError

        journal = NULL_JOURNAL
        if self._store is not None:
            try:
                record = self._store.begin(workspace=str(self.config.workspace_dir), task=task)
            except StoreError as err:
                return self._failed_report(task, err.code, err.message)
            journal = Journal(record)
        report = self._run_journaled(task, journal)
        rolled: list[str] = []
        policy = self.config.runs.on_unverified
        if policy == "rollback" and not report.verified and report.changed_files:
            failed = self.rollback()
            rolled = [p for p in report.changed_files if p not in failed]
            journal.note("rollback", restored=rolled, failed=failed)
            for path in rolled:  # what the rollback's own writes left: the pre-images
                self._after_write(path, self._changes.pre.get(path))
        if journal.record is not None:
            record = journal.record
            report = report.model_copy(
                update={"run_id": record.id, "run_dir": str(record.dir), "rolled_back": rolled}
            )
            journal.finish(report)
        elif rolled:
            report = report.model_copy(update={"rolled_back": rolled})
        return report

    def _run_journaled(self, task: str, journal: Journal) -> Report:
        """The run itself, on the current config's workspace, written into ``journal``."""
        state = self._state = self._new_state(task)
        state.journal = journal
        self._changes = ChangeTracker(self._get_workspace)
        allow = self.config.agent.allow_failing_baseline
        self._evidence = RunEvidence(guard=BaselineGuard(allow_failing=allow))
        state.emit("run_started", detail={"task": task[:200]})
        journal.note("run_started", task=task, workspace=str(self.config.workspace_dir))
        status: ReportStatus
        try:
            from flow_core.run._cycle import RunDriver

            if self.trusted:
                from flow_core.verify._sandbox import require_sandbox

                require_sandbox(self.config.sandbox)  # before any model time is spent
            self._get_workspace()
            status = RunDriver(
                config=self.config,
                trusted=self.trusted,
                state=state,
                changes=self._changes,
                editor=self._editor,
                backend=self._get_backend,
                toolbox=self._toolbox,
                run_check=self._run_one_check,
                baseline=self._baseline,
                watch=self._watch,
            ).run(task)
        except (KeyboardInterrupt, Interrupted):
            _kill_check_groups(self)
            status = "interrupted"
        except (BackendError, EditorError) as err:
            state.error(err.code, err.message)
            status = "failed"
        except FlowError as err:
            state.error(err.code, err.message)
            status = "error"
        except SafeIOError as err:  # the workspace root is missing, replaced or unreadable
            state.error(err.code, f"workspace unusable: {err}")
            status = "error"
        report = self._report("run", status, ok=status == "verified")
        journal.note("run_finished", status=status, errors=[e.code for e in report.errors])
        state.emit("run_finished", ok=report.ok, detail={"status": status})
        return report

    def _failed_report(self, task: str, code: str, message: str) -> Report:
        """A run report for a run that could not start (status ``error``)."""
        self._state = self._new_state(task)
        self._changes = ChangeTracker(self._get_workspace)
        self._state.error(code, message)
        return self._report("run", "error", ok=False)

    def _use_config(self, config: FlowConfig) -> None:
        """Switch the workspace the next run works in (isolated runs); closes the old one."""
        if self._workspace is not None:
            self._workspace.close()
            self._workspace = None
        self.config = config

    def list_models(self) -> list[str]:
        """Models installed on the backend (builds the backend if needed).

        Raises:
            BackendError: the server could not be asked.
        """
        return self._get_backend().list_models()

    def role_budgets(self) -> dict[Role, RoleBudget]:
        """Each role's limits as a run enforces them (``run/_budget.py``): the window, the
        context's character budget and the reply cap, from the same function the run uses.

        Builds the backend if needed and asks it for each model's window (one request per
        model at most; a server that cannot say leaves ``agent.max_context_chars``).

        Raises:
            BackendError: the backend cannot be built (``remote_refused``, ...).
        """
        from flow_core._protocols import ROLES
        from flow_core.run._budget import role_budget

        backend = self._get_backend()
        config = self.config
        return {
            role: role_budget(
                backend, config.agent, config.model_for(role), config.options_for(role)
            )
            for role in ROLES
        }

    def _list_models_quietly(self) -> list[str]:
        """``list_models`` for the preflight; a backend that cannot be built lists nothing."""
        try:
            backend = self._get_backend()
        except FlowError:
            return []
        return backend.list_models()

    def interrupt(self) -> None:
        """Stop the current run or check: kill its process groups; it returns "interrupted".

        Thread-safe and usable from a signal handler (no lock is taken). A model request in
        flight is abandoned within ``POLL_S`` (20 ms; ``run/_interruptible.py``): its reply
        is dropped, no tool call or check starts after this returns.
        """
        self._state.stop = True
        _kill_check_groups(self)

    def rollback(self) -> list[str]:
        """Restore every file the last run wrote to its pre-image; remove the files it created.

        Removal goes through ``flow_safeio.Workspace.remove`` (regular files only, no link
        followed). With an editor bridge attached, created files are left in place: Rose offers
        no delete, and Flow never bypasses the editor.

        Returns:
            Paths that could not be restored or removed (already gone counts as removed).
        """
        return self._changes.rollback(self._editor)

    def close(self) -> None:
        """Kill this runtime's check groups; close the backend, the editor and the workspace.

        Each is closed even when closing an earlier one raised (the first error propagates).
        """
        with contextlib.ExitStack() as stack:
            if self._workspace is not None:
                stack.callback(self._workspace.close)
                self._workspace = None
            if self._editor is not None:
                stack.callback(self._editor.close)
            if self._backend is not None:
                stack.callback(self._backend.close)
            stack.callback(_kill_check_groups, self)

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- parts ----------------------------------------------------------------------------------

    def _new_state(self, task: str | None = None) -> RunState:
        return RunState(
            max_tool_calls=self.config.agent.max_tool_calls,
            on_event=self._on_event,
            task=task,
            max_seconds=self.config.agent.max_seconds,
        )

    def _report(self, kind: str, status: ReportStatus, *, ok: bool) -> Report:
        return build_report(
            kind,
            status,
            ok=ok,
            config=self.config,
            trusted=self.trusted,
            sources=self._config_sources,
            state=self._state,
            changes=self._changes,
            evidence=self._evidence,
        )

    def _get_backend(self) -> ChatBackend:
        if self._backend is None:
            from flow_core.models import make_backend

            self._backend = make_backend(self.config)
        return self._backend

    def _get_workspace(self) -> Workspace:
        if self._workspace is None:
            from flow_safeio import Workspace

            self._workspace = Workspace(
                self.config.workspace_dir, protected=tuple(self.config.protected)
            )
        return self._workspace

    def _run_one_check(
        self, name: str, cycle: int | None, *, baseline: bool = False
    ) -> CheckResult:
        state = self._state
        state.check_stop()
        # A check with structured results writes them to a private folder outside the
        # workspace; they are judged against the baseline (run/_evidence.py).
        prepared = prepare(self.config.checks[name], self.config.workspace_dir)
        state.emit("check_started", cycle=cycle, name=name, detail={"baseline": baseline})
        from flow_core.verify._checks import run_check

        result = run_check(
            name,
            prepared.check,
            cwd=self.config.workspace_dir,
            editor=self._editor,
            owner=self,
            should_stop=lambda: state.stop,
            sandbox=self.config.sandbox,
            protected=self.config.protected,
            writable=() if prepared.folder is None else (prepared.folder,),
        )
        result = self._evidence.conclude(result, prepared, baseline=baseline)
        if baseline:
            self._evidence.guard.add(result)
        else:
            result = self._evidence.guard.judge(result)
        state.journal.check(result, cycle)
        state.checks_ms += result.duration_ms
        state.emit(
            "check_finished",
            cycle=cycle,
            name=name,
            ok=result.status == "passed",
            detail={
                "status": result.status,
                "duration_ms": result.duration_ms,
                "baseline": baseline,
            },
        )
        if result.status == "interrupted":
            state.stop = True
        return result

    def _keep_pre_image(self, path: str) -> None:
        """Keep ``path``'s pre-image in memory and, before the write, in the run's record.

        Raises:
            ToolError: ``run_store_full`` / ``run_store_unusable`` when the record cannot
                keep it: the write is refused, because it could not be undone.
        """
        from flow_core.store import StoreError
        from flow_core.tools._toolbox import ToolError

        self._changes.keep_pre_image(path)
        try:
            pre = self._changes.pre[path]
            mode = None if pre is None else self._changes.mode_of(path)
            self._state.journal.pre_image(path, pre, mode)
        except StoreError as err:
            raise ToolError(err.code, err.message) from err
        except OSError as err:
            raise ToolError(
                "run_store_unusable",
                f"the run record cannot keep the pre-image of {path} ({err}); write refused",
            ) from err

    def _after_write(self, path: str, data: bytes | None) -> None:
        """Right after one of the run's own writes: record what it left (``Journal.written``).

        The hash is that of the bytes written (with an editor attached, of the file as the
        editor left it, read at once); the bits are read at once. Never refreshed later.
        """
        if self._editor is not None:
            data = self._changes.read_disk(path)
        mode = None if data is None else self._changes.mode_of(path)
        self._state.journal.written(path, sha256_hex(data), mode)

    def _baseline(self) -> list[ErrorInfo]:
        """Before any model request: run the baseline checks once (``run/_baseline.py``),
        then take the whole tree's base fingerprint (``run/_evidence.py``).

        Returns:
            ``baseline_failing`` entries that stop the run (empty: go on).
        """
        for name in baseline_check_names(self.config):
            self._run_one_check(name, None, baseline=True)
        self._state.check_stop()
        self._evidence.watch_start(self.config.workspace_dir, self.config.runs.watch_max_files)
        return self._evidence.guard.stops()

    def _watch(self, written: Mapping[str, str | None]) -> list[str]:
        """After a review: every change Flow's tools did not make, as gate reasons."""
        return self._evidence.watch_check(self.config.workspace_dir, written)

    def _check_editor_workspace(self, editor: EditorBridge) -> None:
        """Rose's resolved workspace must be Flow's (``docs/architecture.md``, "Rose").

        Raises:
            EditorError: code ``editor_workspace_mismatch`` when they differ.
        """
        theirs = editor.workspace()
        ours = str(self.config.workspace_dir)
        same = os.path.normpath(theirs) == ours
        if not same:
            with contextlib.suppress(OSError):
                same = os.path.samefile(theirs, ours)
        if not same:
            raise EditorError(
                f"the editor's workspace {theirs!r} is not Flow's workspace {ours!r}; "
                "start Rose and Flow on the same directory",
                code="editor_workspace_mismatch",
            )

    def _toolbox(self, role: Role, cycle: int | None) -> ToolBox:
        if self._editor is not None and self._editor_schemas is None:
            self._check_editor_workspace(self._editor)
            self._editor_schemas = self._editor.tool_schemas()
        from flow_core.tools import ToolBox

        return ToolBox(
            role=role,
            workspace=self._get_workspace(),
            ledger=self._state.ledger,
            trusted=self.trusted,
            check_names=list(self.config.checks),
            run_check=lambda name: self._run_one_check(name, cycle),
            before_write=self._keep_pre_image,
            after_write=self._after_write,
            editor=self._editor,
            editor_schemas=self._editor_schemas or (),
            cycle=cycle,
        )
