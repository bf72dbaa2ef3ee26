"""Preflight: the problems that make a run unverifiable, found before any model request.

A trusted run can only end verified when at least one required check exists and every
required check's executable is there (flow-core's README, "What \"verified\" means"); a run
needs a task and a workspace. ``Runtime.run`` refuses a run with any of these
problems before the planner's first request (status ``error``, the CLI exits 2), and
``Runtime.status`` reports them as ``warnings``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from flow_core._report import ErrorInfo

if TYPE_CHECKING:
    from flow_core.config import FlowConfig

__all__ = ["config_hints", "preflight"]  # and PREFLIGHT_CODES, built on first read


def __getattr__(name: str) -> dict[str, str]:
    """``PREFLIGHT_CODES``: the preflight codes, each with its meaning (a view of the
    catalogue's rows, ``flow_core._catalogue.codes_of``), built when first read, so that
    ``flow status`` does not load the error table (PEP 562)."""
    if name == "PREFLIGHT_CODES":
        from flow_core._catalogue import codes_of

        return codes_of("preflight")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Check timeouts below this many milliseconds are almost surely seconds written by mistake.
SHORT_TIMEOUT_MS = 1000


def config_hints(config: FlowConfig) -> list[ErrorInfo]:
    """Likely mistakes that do not stop a run: a check timeout under ``SHORT_TIMEOUT_MS``, a
    test check whose pass would rest on its exit status alone (``verify/_results.py``).

    Returns:
        ``ErrorInfo`` entries (codes ``check_timeout_short``, ``weak_evidence``), each naming
        the fix.
    """
    from flow_core.verify._results import is_weak

    hints = [
        ErrorInfo(
            code="check_timeout_short",
            message=f"checks.{name}.timeout = {check.timeout} is in milliseconds "
            f"({check.timeout / 1000:g} s); did you mean {check.timeout * 1000} "
            f"({check.timeout} seconds)? fix: timeout = {check.timeout * 1000}",
        )
        for name, check in config.checks.items()
        if check.timeout < SHORT_TIMEOUT_MS
    ]
    hints.extend(
        ErrorInfo(
            code="weak_evidence",
            message=f"check {name}: its pass rests on the exit status alone (Flow reads no "
            "test results from this runner), so code that ends it with status 0 passes it; "
            'fix: run pytest, or set results = "junit" with {junit_xml} where the runner '
            "writes JUnit XML",
        )
        for name, check in config.checks.items()
        if is_weak(check)
    )
    return hints


def _tree_size(root: str, cap: int) -> list[ErrorInfo]:
    """``preflight_tree_too_large`` when ``root`` holds more than ``cap`` files and links
    outside generated folders (the whole-tree watch's rule, ``verify/_fingerprint.py``);
    the count stops at ``cap + 1``."""
    from flow_safeio import is_generated_dir

    count = 0
    stack = [root]
    while stack and count <= cap:
        directory = stack.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        git = entry.name.rstrip(". ").casefold() == ".git"
                        if not git and not is_generated_dir(directory, entry.name):
                            stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False) or entry.is_symlink():
                        count += 1
        except OSError:
            continue
    if count <= cap:
        return []
    return [
        ErrorInfo(
            code="preflight_tree_too_large",
            message=f"the workspace {root} holds more than {cap} files outside generated "
            "folders, more than the whole-tree watch records, so this run could never be "
            f"verified; fix: raise [runs] watch_max_files above {cap} in the operator config",
        )
    ]


def _executable_ok(path: str | None) -> bool:
    return path is not None and os.path.isfile(path) and os.access(path, os.X_OK)


def preflight(config: FlowConfig, *, task: str | None, trusted: bool) -> list[ErrorInfo]:
    """The problems that would stop a run from being verified, each with its fix.

    Args:
        config: the validated configuration.
        task: the run's task, or None (``status``: the task is not checked).
        trusted: whether edits and checks are allowed; a read-only run needs no check.

    Returns:
        ``ErrorInfo`` entries with ``preflight_*`` codes; empty when a run may start.
    """
    problems: list[ErrorInfo] = []
    ws = str(config.workspace_dir)
    if not os.path.isdir(ws):
        problems.append(
            ErrorInfo(
                code="preflight_workspace_missing",
                message=f"the workspace {ws} does not exist or is not a directory; fix "
                "workspace_dir in the operator config or pass --workspace DIR",
            )
        )
    if task is not None and not task.strip():
        problems.append(
            ErrorInfo(
                code="preflight_empty_task",
                message="the task is empty; fix: say what to change, e.g. "
                "flow run --trusted 'Fix the failing parser tests'",
            )
        )
    if not trusted and task is not None:
        return problems
    if task is not None and os.path.isdir(ws):
        problems.extend(_tree_size(ws, config.runs.watch_max_files))
    required = {name: c for name, c in config.checks.items() if c.required}
    if not required:
        configured = ", ".join(config.checks) or "none"
        problems.append(
            ErrorInfo(
                code="preflight_no_required_check",
                message=f"no required check is configured (configured: {configured}), so no "
                "run can be verified; fix: add a [checks.NAME] table with cmd and "
                "required = true to the operator config",
            )
        )
    for name, check in required.items():
        if not _executable_ok(check.executable):
            problems.append(
                ErrorInfo(
                    code="preflight_check_missing",
                    message=f"required check {name!r}: executable {check.cmd[0]!r} was not "
                    f"found; fix: install it, or correct checks.{name}.cmd[0]",
                )
            )
    return problems


def _installed(name: str, models: Sequence[str]) -> bool:
    """Whether ``name`` is among ``models`` (Ollama's implicit ``:latest`` tag included)."""
    return name in models or (":" not in name and f"{name}:latest" in models)


def model_preflight(
    config: FlowConfig, list_models: Callable[[], Sequence[str]]
) -> list[ErrorInfo]:
    """Each role's model must be installed on the server, where the server lists its models.

    Args:
        config: the validated configuration (``model_for`` gives each role's model; ``""``
            leaves the choice to the server and is not checked).
        list_models: the backend's ``list_models``.

    Returns:
        One ``preflight_model_missing`` entry per missing model, naming the installed ones;
        empty when every model is there or the server cannot list them (its failure then
        shows on the first model request, with its own code).
    """
    from flow_core._errors import BackendError
    from flow_core._roles import ROLES

    try:
        models = list(list_models())
    except BackendError:
        return []
    if not models:
        return []
    wanted: dict[str, list[str]] = {}
    for role in ROLES:
        name = config.model_for(role)
        if name and not _installed(name, models):
            wanted.setdefault(name, []).append(role)
    table = "ollama" if config.backend == "ollama" else "openai"
    shown = ", ".join(models[:20]) + (" ..." if len(models) > 20 else "")
    return [
        ErrorInfo(
            code="preflight_model_missing",
            message=f"model {name!r} ({', '.join(roles)}) is not installed on the "
            f"{config.backend} server; installed: {shown}; fix: pass --model with an installed "
            f"model, or set {table}.model or [models] {roles[0]} in the operator config"
            + (f", or run `ollama pull {name}`" if config.backend == "ollama" else ""),
        )
        for name, roles in wanted.items()
    ]
