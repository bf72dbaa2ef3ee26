"""One run (or one ``Runtime.check``): the object that owns everything the run accumulates.

Source: ``docs/architecture.md``, "The life of one flow run". ``Runtime`` keeps what lives
across runs (config, backend, editor, store) and creates one ``Run`` per ``run``/``check``;
the ``Run`` owns the run's state (``RunState``), its changes (``ChangeTracker``), its evidence
(``RunEvidence``), its journal (the run record), its workspace handle, and the parts that act
for it: ``toolbox`` (the model's tools for a role), ``run_check`` (one named check, judged and
recorded), ``baseline`` and ``watch`` (the whole-tree evidence) and ``report``. The workflow
(``run/_cycle.RunDriver``) and an isolated run (``run/_isolated.py``) work on a ``Run``
through these public members; nothing reaches back into ``Runtime``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from flow_core._errors import BackendError, EditorError, FlowError
from flow_core._protocols import ChatBackend, EditorBridge, Event, EventSink, Role
from flow_core._report import CheckResult, ErrorInfo, Report, ReportStatus
from flow_core.run._baseline import BaselineGuard, baseline_check_names
from flow_core.run._changes import ChangeTracker, sha256_hex
from flow_core.run._evidence import Prepared, RunEvidence, collect_results, prepare
from flow_core.run._journal import NULL_JOURNAL, Journal
from flow_core.run._reporting import build_report
from flow_core.run._state import Interrupted, RunState
from flow_safeio import SafeIOError

if TYPE_CHECKING:
    from flow_core._codes import ErrorCode
    from flow_core.config import CheckConfig, FlowConfig
    from flow_core.store import RunRecord
    from flow_core.tools import ToolBox
    from flow_core.verify._harness import HarnessSplit
    from flow_core.verify._junit import JUnitResults
    from flow_core.verify._tree import TreeSpec
    from flow_safeio import Workspace

__all__ = ["Run", "RunSetup", "kill_check_groups"]

#: The check runner's module. It, the run driver and the file tools are imported when a check
#: or a run first needs them, so ``Runtime.status()`` (``flow status``) loads none of them.
_CHECKS_MODULE = "flow_core.verify._checks"


def kill_check_groups(owner: object) -> None:
    """Kill ``owner``'s check process groups (``verify/_checks.kill_all_process_groups``).

    When the check runner was never imported no group was ever started, and nothing is
    imported here: this runs from signal handlers, which must not take the import lock.
    """
    checks = sys.modules.get(_CHECKS_MODULE)
    if checks is not None:
        checks.kill_all_process_groups(owner=owner)


@dataclass(frozen=True)
class RunSetup:
    """What a ``Runtime`` hands each of its runs (all of it lives across runs).

    Attributes:
        config: the validated config; an isolated run swaps in its tree (``use_config``).
        trusted: edits and named checks allowed (``docs/architecture.md``, "Trust").
        editor: the attached Rose bridge, or None.
        on_event: the host's progress sink, or None.
        sources: the config files that were loaded (reported as-is).
    """

    config: FlowConfig
    trusted: bool
    editor: EditorBridge | None = None
    on_event: EventSink | None = None
    sources: Sequence[str] = ()


class Run:
    """One run or check (see the module docstring); created by ``Runtime`` once per call.

    Args:
        setup: the runtime's long-lived parts.
        task: the run's task (None for a check).
        record: the run's record in the run store (``flow_core.store.RunRecord``), or None
            (nothing is recorded).
    """

    def __init__(
        self, setup: RunSetup, task: str | None = None, record: RunRecord | None = None
    ) -> None:
        self.config = setup.config
        self.trusted = setup.trusted
        self.editor = setup.editor
        self.sources = list(setup.sources)
        self.changes = ChangeTracker(self.workspace)
        self.journal = NULL_JOURNAL if record is None else Journal(record)
        self.state = RunState(
            max_tool_calls=self.config.agent.max_tool_calls,
            on_event=setup.on_event,
            task=task,
            max_seconds=self.config.agent.max_seconds,
        )
        self.state.journal = self.journal
        allow = self.config.agent.allow_failing_baseline
        self.evidence = RunEvidence(guard=BaselineGuard(allow_failing=allow))
        self._workspace: Workspace | None = None
        self._editor_schemas: list[dict[str, Any]] | None = None

    # -- the workspace --------------------------------------------------------------------------

    def workspace(self) -> Workspace:
        """The run's workspace (``flow_safeio``), opened on first use.

        Raises:
            SafeIOError: the workspace root is missing, replaced or unreadable.
        """
        if self._workspace is None:
            from flow_safeio import Workspace

            self._workspace = Workspace(
                self.config.workspace_dir, protected=tuple(self.config.protected)
            )
        return self._workspace

    def use_config(self, config: FlowConfig) -> None:
        """Work in ``config``'s workspace from now on (an isolated run's tree, and back)."""
        self.close()
        self.config = config

    def close(self) -> None:
        """Close the workspace handle (a later use opens it again)."""
        if self._workspace is not None:
            self._workspace.close()
            self._workspace = None

    # -- running --------------------------------------------------------------------------------

    def execute(self, backend: ChatBackend) -> Report:
        """Plan → code → verify → review (``run/_cycle.RunDriver``) on ``backend``; the report.

        Every failure becomes a status, never an exception (``stopped_by``).
        """
        self._begin()
        try:
            from flow_core.run._cycle import RunDriver

            if self.trusted:
                from flow_core.verify._probe import require_sandbox

                require_sandbox(self.config.sandbox)  # before any model time is spent
            self.workspace()
            status = RunDriver(self, backend).drive(self.state.task or "")
        except (KeyboardInterrupt, Interrupted, FlowError, SafeIOError) as err:
            status = self.stopped_by(err)
        return self._finish(status)

    def not_started(self, err: FlowError) -> Report:
        """The report of a run whose backend could not be built: recorded like any run that
        ``err`` stopped (``stopped_by``)."""
        self._begin()
        return self._finish(self.stopped_by(err))

    def stopped_by(self, err: BaseException) -> ReportStatus:
        """The status of a run that ``err`` ended, with the error recorded: ``interrupted``
        (Ctrl-C, ``interrupt``; its check groups are killed), ``failed`` (the backend or the
        editor failed), ``error`` (any other ``FlowError``, an unusable workspace)."""
        state = self.state
        if isinstance(err, KeyboardInterrupt | Interrupted):
            kill_check_groups(self)
            return "interrupted"
        if isinstance(err, BackendError | EditorError):
            state.error(err.code, err.message)
            return "failed"
        if isinstance(err, FlowError):
            state.error(err.code, err.message)
            return "error"
        if isinstance(err, SafeIOError):  # the workspace root is missing, replaced or unreadable
            # flow-safeio's codes are rows of the catalogue too (area safeio; a test keeps them)
            state.error(cast("ErrorCode", err.code), f"workspace unusable: {err}")
            return "error"
        raise err

    def _begin(self) -> None:
        task = self.state.task or ""
        self.state.emit(Event("run_started", task=task[:200]))
        self.journal.note("run_started", task=task, workspace=str(self.config.workspace_dir))

    def _finish(self, status: ReportStatus) -> Report:
        report = self.report("run", status, ok=status == "verified")
        self.journal.note("run_finished", status=status, errors=[e.code for e in report.errors])
        self.state.emit(Event("run_finished", ok=report.ok, status=status))
        return report

    def check(self, names: Sequence[str]) -> Report:
        """Run the named checks in order (``Runtime.check``); a report of kind ``check``."""
        state = self.state
        status: ReportStatus
        try:
            results = [self.run_check(n, None) for n in names]
            state.final_checks = results
            if state.stop or any(r.status == "interrupted" for r in results):
                status = "interrupted"
            elif not results:
                state.error("no_checks", "no named checks are configured")
                status = "failed"
            else:
                status = "passed" if all(r.status == "passed" for r in results) else "failed"
        except (KeyboardInterrupt, Interrupted):
            kill_check_groups(self)
            status = "interrupted"
        return self.report("check", status, ok=status == "passed")

    def failed(self, kind: str, code: ErrorCode, message: str) -> Report:
        """The report of a run or check that could not start (status ``error``)."""
        self.state.error(code, message)
        return self.report(kind, "error", ok=False)

    def interrupt(self) -> None:
        """Ask the run to stop and kill its check groups (signal-safe: no lock, no import)."""
        self.state.stop = True
        kill_check_groups(self)

    def report(self, kind: str, status: ReportStatus, *, ok: bool) -> Report:
        """The run's report as it stands (``run/_reporting.build_report``)."""
        return build_report(kind, status, ok=ok, run=self)

    # -- the parts that act for the run ---------------------------------------------------------

    def run_check(
        self, name: str, cycle: int | None, *, baseline: bool = False, evidence: bool = False
    ) -> CheckResult:
        """Run one configured check, judge its evidence, record it; ``cycle`` None outside
        a cycle. A check with structured results writes them to a private folder outside the
        workspace; they are judged against the baseline (``run/_evidence.py``). The baseline
        and, with ``evidence``, the gate's checks run in the evidence run's tree
        (``evidence_tree``); the coder's own checks (feedback) run on the workspace."""
        state = self.state
        state.check_stop()
        prepared = prepare(self.config.checks[name], self.config.workspace_dir)
        try:  # the results folder goes whatever way the check ends (verify/_scratch.py)
            tree = self.evidence_tree(name, prepared.check) if baseline or evidence else None
            state.emit(Event("check_started", cycle=cycle, name=name, baseline=baseline))
            result = self._run_prepared(name, prepared, tree)
            result = self.evidence.conclude(result, prepared, baseline=baseline)
        finally:
            prepared.discard()
        if baseline:
            self.evidence.guard.add(result)
        else:
            result = self.evidence.guard.judge(result)
        self.journal.check(result, cycle)
        state.checks_ms += result.duration_ms
        state.emit(
            Event(
                "check_finished",
                cycle=cycle,
                name=name,
                ok=result.status == "passed",
                status=result.status,
                duration_ms=result.duration_ms,
                baseline=baseline,
            )
        )
        if result.status == "interrupted":
            state.stop = True
        return result

    def _run_prepared(self, name: str, prepared: Prepared, tree: TreeSpec | None) -> CheckResult:
        """``verify/_checks.run_check`` for this run: its sandbox, protected paths, results
        folder, tree, editor and stop flag."""
        from flow_core.verify._checks import CheckScope, CheckWatch, run_check

        state = self.state
        return run_check(
            name,
            prepared.check,
            cwd=self.config.workspace_dir,
            sandbox=self.config.sandbox,
            scope=CheckScope(
                protected=self.config.protected,
                writable=() if prepared.folder is None else (prepared.folder,),
                tree=tree,
            ),
            watch=CheckWatch(
                editor=self.editor,
                owner=self,
                should_stop=lambda: state.stop,
                on_start=self.journal.check_group,
            ),
        )

    def results_on(
        self, name: str, check: CheckConfig, tree: TreeSpec
    ) -> tuple[CheckResult, JUnitResults | None]:
        """Run ``check`` (a variant of check ``name``) in ``tree`` and read its JUnit results
        (None: it wrote none Flow could read); nothing is judged or recorded as a check.
        Used by the fail-to-pass runs (``run/_fail_to_pass.py``)."""
        self.state.check_stop()
        prepared = prepare(check, self.config.workspace_dir)
        try:  # the results folder goes whatever way the check ends (verify/_scratch.py)
            result = self._run_prepared(name, prepared, tree)
            parsed = collect_results(prepared)[0] if prepared.results_path is not None else None
        finally:
            prepared.discard()
        self.state.checks_ms += result.duration_ms
        if result.status == "interrupted":
            self.state.stop = True
        return result, parsed

    def baseline(self) -> list[ErrorInfo]:
        """Before any model request: run the baseline checks once (``run/_baseline.py``),
        then take the whole tree's base fingerprint (``run/_evidence.py``).

        Returns:
            ``baseline_failing`` entries that stop the run (empty: go on).
        """
        from flow_core.verify._tree import plan_workspace

        with contextlib.suppress(OSError):  # unreadable: the checks run on the workspace
            self.evidence.plan = plan_workspace(self.config.workspace_dir)
        for name in baseline_check_names(self.config):
            self.run_check(name, None, baseline=True)
        self.state.check_stop()
        self.evidence.watch_start(self.config.workspace_dir, self.config.runs.watch_max_files)
        return self.evidence.guard.stops()

    def evidence_tree(self, name: str, check: CheckConfig) -> TreeSpec | None:
        """The evidence run's tree for one check (``docs/architecture.md``, "The evidence
        run"): the workspace's files as the baseline found them, plus exactly the changes
        Flow's tools made; for a pytest check the harness keeps its baseline bytes and a
        change to it is ``tests_changed`` (``verify/_harness.py``). None before the baseline.
        """
        from flow_core.verify._results import pytest_position
        from flow_core.verify._tree import TreeSpec

        plan = self.evidence.plan
        if plan is None:
            return None
        if pytest_position(check.cmd) is None:
            return TreeSpec(plan, self.changes_now())
        split = self.harness_split(name, check)
        self.evidence.tests_changed |= split.changed
        return TreeSpec(plan, split.overlay)

    def changes_now(self) -> dict[str, bytes | None]:
        """Every path Flow's tools wrote -> its bytes on disk now (None: absent)."""
        return {p: self.changes.read_disk(p) for p in self.changes.pre}

    def harness_split(self, name: str, check: CheckConfig) -> HarnessSplit:
        """The changes split for pytest check ``name`` (``verify/_harness.split_changes``):
        the harness at its baseline bytes; call only once the baseline's plan is taken."""
        from flow_core.verify._harness import baseline_test_files, split_changes

        assert self.evidence.plan is not None
        files = set(self.evidence.plan.files)

        def at_baseline(path: str) -> bytes | None:
            if path in self.changes.pre:
                return self.changes.pre[path]
            return self.changes.read_disk(path) if path in files else None

        tests = baseline_test_files(self.evidence.baseline.get(name), files)
        return split_changes(self.changes_now(), at_baseline, tests=tests, argv=check.cmd)

    def watch(self, written: Mapping[str, str | None]) -> list[str]:
        """After a review: every change Flow's tools did not make, as gate reasons."""
        return self.evidence.watch_check(self.config.workspace_dir, written)

    def toolbox(self, role: Role, cycle: int | None) -> ToolBox:
        """The model's tools for ``role`` in ``cycle`` (``flow_core.tools.ToolBox``)."""
        if self.editor is not None and self._editor_schemas is None:
            self._check_editor_workspace(self.editor)
            self._editor_schemas = self.editor.tool_schemas()
        from flow_core.tools import ToolBox, ToolHost

        host = ToolHost(
            check_names=list(self.config.checks),
            run_check=lambda name: self.run_check(name, cycle),
            check_programs=[c.executable for c in self.config.checks.values()],
            before_write=self.keep_pre_image,
            after_write=self.after_write,
            editor=self.editor,
            editor_schemas=self._editor_schemas or (),
        )
        return ToolBox(
            role=role,
            workspace=self.workspace(),
            ledger=self.state.ledger,
            trusted=self.trusted,
            host=host,
            cycle=cycle,
        )

    def keep_pre_image(self, path: str) -> None:
        """Keep ``path``'s pre-image in memory and, before the write, in the run's record.

        Raises:
            ToolError: ``run_store_full`` / ``run_store_unusable`` when the record cannot
                keep it: the write is refused, because it could not be undone.
        """
        from flow_core.store import StoreError
        from flow_core.tools._calls import ToolError

        self.changes.keep_pre_image(path)
        try:
            pre = self.changes.pre[path]
            mode = None if pre is None else self.changes.mode_of(path)
            self.journal.pre_image(path, pre, mode)
        except StoreError as err:
            raise ToolError(err.code, err.message) from err
        except OSError as err:
            raise ToolError(
                "run_store_unusable",
                f"the run record cannot keep the pre-image of {path} ({err}); write refused",
            ) from err

    def after_write(self, path: str, data: bytes | None) -> None:
        """Right after one of the run's own writes: record what it left (``Journal.written``).

        The hash is that of the bytes written (with an editor attached, of the file as the
        editor left it, read at once); the bits are read at once. Never refreshed later.
        """
        if self.editor is not None:
            data = self.changes.read_disk(path)
        mode = None if data is None else self.changes.mode_of(path)
        self.journal.written(path, sha256_hex(data), mode)

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
