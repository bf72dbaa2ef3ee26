"""The verified runtime's facade: ``Runtime`` (status, check, run, rollback, interrupt, close).

Sources: ``docs/architecture.md`` ("The life of one flow run", "What verified means", "Trust").

``Runtime`` keeps what lives across runs: the config, the backend, the editor bridge and the
run store. Each ``run`` or ``check`` creates one ``Run`` (``run/_run.py``), which owns the run's
state, changes, evidence, journal, workspace handle, tools and check runner; the runtime keeps
a reference to the latest one only for ``interrupt`` and ``rollback``. An isolated run is a
``Run`` whose workspace is a private tree (``run/_isolated.py``).
"""

from __future__ import annotations

import contextlib
import functools
from typing import TYPE_CHECKING

from flow_core._errors import FlowError, NotTrustedError, UnknownCheckError
from flow_core._protocols import ChatBackend, EditorBridge, EventSink, Role
from flow_core._report import Report
from flow_core.run._preflight import model_preflight, preflight
from flow_core.run._run import Run, RunSetup, kill_check_groups

if TYPE_CHECKING:
    from flow_core.config import FlowConfig, LoadedConfig
    from flow_core.run._budget import RoleBudget
    from flow_core.store import RunRecord, RunStore

__all__ = ["Runtime"]


class Runtime:
    """Plan → code → verify → review under host-enforced budgets.

    Args:
        config: a validated ``FlowConfig`` (checks already snapshotted), or the
            ``LoadedConfig`` that ``load_config`` returned: its config, with the files it was
            loaded from (reported as-is by ``status``; none for a bare ``FlowConfig``).
        trusted: allow edits and the configured named checks (``docs/architecture.md``,
            "Trust"); default read-only.
        backend: the model server; built with ``make_backend(config)`` on first need when None
            (``status()`` never builds it, so it never imports httpx).
        editor: an attached Rose bridge; file reads and writes then go through it, checks refuse
            dirty buffers and the gate compares its freshness snapshots.
        on_event: receives progress ``Event``s; must be fast; exceptions from it are ignored.
        store: the run store (``flow_core.store.RunStore``); each ``run`` then gets a record
            there (transcript, pre-images, diff, report) and its report names it. None (the
            default for library use) records nothing, except that an isolated run uses the
            user's store.

    The runtime owns ``backend`` and ``editor``: ``close()`` closes both.
    """

    def __init__(
        self,
        config: FlowConfig | LoadedConfig,
        *,
        trusted: bool = False,
        backend: ChatBackend | None = None,
        editor: EditorBridge | None = None,
        on_event: EventSink | None = None,
        store: RunStore | None = None,
    ) -> None:
        from flow_core.config._schema import LoadedConfig

        loaded = config if isinstance(config, LoadedConfig) else LoadedConfig(config, [])
        self.config = loaded.config
        self.trusted = trusted
        self._backend = backend
        self._editor = editor
        self._on_event = on_event
        self._config_sources = list(loaded.sources)
        self._store = store
        #: The run or check in progress (or the latest), for ``interrupt`` and ``close``.
        self._active: Run | None = None
        #: The latest ``run``, whose writes ``rollback`` restores (a check writes nothing).
        self._last_run: Run | None = None

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
        from flow_core.verify._probe import require_sandbox

        require_sandbox(self.config.sandbox)
        run = self._new_run(checking=True)
        missing = model_preflight(self.config, functools.partial(self._listed_models, run))
        if missing:
            run.state.errors.extend(missing)
            return run.report("check", "error", ok=False)
        return run.check([name] if name is not None else list(self.config.checks))

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
            asking = self._new_run(task)  # interrupt() stops the model listing through it
            problems = model_preflight(self.config, functools.partial(self._listed_models, asking))
            if asking.state.stop:
                return asking.report("run", "interrupted", ok=False)
        if problems:
            run = self._new_run(task)
            run.state.errors.extend(problems)
            return run.report("run", "error", ok=False)
        isolate = self.config.runs.isolate if isolate is None else isolate
        writes = self.trusted and self._editor is None
        if isolate and writes:
            return self._run_isolated(task)
        if not self.trusted or self._store is None:
            return self._run_recorded(task)
        return self._run_exclusive(task, self._store, may_isolate=writes)

    def _run_exclusive(self, task: str, store: RunStore, *, may_isolate: bool) -> Report:
        """A trusted run in place, under the workspace's writer lock (``run/_exclusive.py``);
        ``may_isolate``: the run could go isolated (no editor attached)."""
        from flow_core.run._exclusive import wait_or_refuse
        from flow_core.store import StoreError

        try:
            lock = store.workspace_lock(self.config.workspace_dir)
            busy = lock.try_acquire(what="run")
            if busy is not None and self.config.runs.when_busy == "isolate" and may_isolate:
                return self._run_isolated(task)
            if busy is not None:
                state = self._new_run(task).state  # interrupt() stops the wait through it
                wait_or_refuse(lock, busy, self.config.runs, lambda: state.stop)
        except StoreError as err:
            return self._new_run(task).failed("run", err.code, err.message)
        with lock:
            return self._run_recorded(task)

    def _run_isolated(self, task: str) -> Report:
        """A run in a private tree inside its record (``run/_isolated.py``)."""
        from flow_core.run._isolated import apply_or_keep, enter_tree, leave_tree
        from flow_core.store import RunStore, StoreError

        try:
            store = self._store or RunStore.for_workspace(
                self.config.workspace_dir, self.config.runs
            )
            record = store.begin(workspace=str(self.config.workspace_dir), task=task, isolated=True)
        except StoreError as err:
            return self._new_run(task).failed("run", err.code, err.message)
        run = self._new_run(task, record)
        original = run.config
        tree = enter_tree(run)
        if isinstance(tree, Report):
            return tree
        try:
            report = self._execute(run)
        finally:
            leave_tree(run, tree, original)
        return apply_or_keep(run, store, tree, report)

    def _run_recorded(self, task: str) -> Report:
        """A run in the workspace itself, recorded when a store is attached."""
        from flow_core.store import StoreError

        record = None
        if self._store is not None:
            try:
                record = self._store.begin(workspace=str(self.config.workspace_dir), task=task)
            except StoreError as err:
                return self._new_run(task).failed("run", err.code, err.message)
        run = self._new_run(task, record)
        journal = run.journal
        report = self._execute(run)
        rolled: list[str] = []
        policy = self.config.runs.on_unverified
        if policy == "rollback" and not report.verified and report.changed_files:
            failed = run.changes.rollback(run.editor)
            rolled = [p for p in report.changed_files if p not in failed]
            journal.note("rollback", restored=rolled, failed=failed)
            for path in rolled:  # what the rollback's own writes left: the pre-images
                run.after_write(path, run.changes.pre.get(path))
        if journal.record is not None:
            record = journal.record
            report = report.model_copy(
                update={"run_id": record.id, "run_dir": str(record.dir), "rolled_back": rolled}
            )
            journal.finish(report)
        elif rolled:
            report = report.model_copy(update={"rolled_back": rolled})
        return report

    def _execute(self, run: Run) -> Report:
        """``run.execute`` on this runtime's backend (built now when it was not given)."""
        try:
            backend = self._get_backend()
        except FlowError as err:
            return run.not_started(err)
        return run.execute(backend)

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

    def _listed_models(self, run: Run) -> list[str]:
        """``list_models`` for the model preflight, abandoned (listing nothing) when ``run``
        is asked to stop or reaches its ``max_seconds`` (``run/_loop.guarded``): a server busy
        generating for another client can hold ``GET /models`` for minutes (llama.cpp's
        Python server answers it only between generations)."""
        from flow_core.run._loop import guarded
        from flow_core.run._state import Interrupted, RunEnded

        try:
            return guarded(run.state, self._list_models_quietly, name="flow-preflight-models")
        except (Interrupted, RunEnded):
            return []

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
        run = self._active
        if run is not None:
            run.interrupt()

    def rollback(self) -> list[str]:
        """Restore every file the last run wrote to its pre-image; remove the files it created.

        Removal goes through ``flow_safeio.Workspace.remove`` (regular files only, no link
        followed). With an editor bridge attached, created files are left in place: Rose offers
        no delete, and Flow never bypasses the editor.

        Returns:
            Paths that could not be restored or removed (already gone counts as removed).
        """
        if self._last_run is None:
            return []
        return self._last_run.changes.rollback(self._editor)

    def close(self) -> None:
        """Kill this runtime's check groups; close the backend, the editor and the workspace.

        Each is closed even when closing an earlier one raised (the first error propagates).
        """
        with contextlib.ExitStack() as stack:
            for kept in {id(r): r for r in (self._last_run, self._active) if r}.values():
                stack.callback(kept.close)
            run = self._active
            if self._editor is not None:
                stack.callback(self._editor.close)
            if self._backend is not None:
                stack.callback(self._backend.close)
            if run is not None:
                stack.callback(kill_check_groups, run)

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- parts ----------------------------------------------------------------------------------

    def _new_run(
        self, task: str | None = None, record: RunRecord | None = None, *, checking: bool = False
    ) -> Run:
        """A new ``Run`` on this runtime's long-lived parts; it becomes the active one and,
        unless ``checking`` (``check``), the one ``rollback`` restores."""
        run = self._active = Run(
            RunSetup(
                config=self.config,
                trusted=self.trusted,
                editor=self._editor,
                on_event=self._on_event,
                sources=self._config_sources,
            ),
            task,
            record,
        )
        if not checking:
            self._last_run = run
        return run

    def _get_backend(self) -> ChatBackend:
        if self._backend is None:
            from flow_core.models import make_backend

            self._backend = make_backend(self.config)
        return self._backend
