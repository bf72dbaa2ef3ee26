"""Short human text derived from a report: check reasons, plan excerpts, setup warnings.

Shared by the CLI's stderr lines and the TUI's tables. Pure string work: no rich, no
flow-core import at module level, so ``flow status`` stays lean. Everything here comes from
model output, check output or config values, so it is cleaned of terminal control sequences
before it is shown; callers that print through rich must still escape it (``[`` is text).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from flow_core import CheckResult, CheckSpec, FlowConfig, Report, Role
    from flow_core.run._budget import RoleBudget

#: ANSI escape sequences (CSI and OSC) a check may print when it thinks it has a terminal.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def clean(text: str) -> str:
    """``text`` without ANSI sequences or control characters (newlines kept, tabs as spaces)."""
    text = _ANSI.sub("", text).replace("\t", "    ").replace("\r\n", "\n")
    return _CONTROL.sub("", text)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with ``…`` when something was cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + "…"


def check_reason_lines(result: CheckResult, *, max_lines: int, width: int = 120) -> list[str]:
    """Why a check did not pass, as at most ``max_lines`` short lines (empty when it passed).

    For a ``failed`` check the last non-empty lines of its output say most (the exit code is
    shown separately); for ``missing``, ``timeout``, ``refused``, ``interrupted`` and
    ``error`` the check's error message does. Either falls back to the other.
    """
    if result.status == "passed":
        return []
    tail = [shorten(line.strip(), width) for line in clean(result.output_tail).splitlines()]
    tail = [line for line in tail if line]
    # Flow's own messages are written to be read whole; only output lines are cut to width.
    message = shorten(clean(result.error.message).strip(), 300) if result.error else ""
    if result.status == "failed" and tail:
        return tail[-max_lines:]
    if message:
        return [message]
    return tail[-max_lines:]


def check_line(result: CheckResult) -> str:
    """One stderr line for a check that did not pass: status, required, exit code, reason."""
    facts = ["required" if result.required else "optional"]
    if result.exit_code is not None:
        facts.append(f"exit {result.exit_code}")
    reason = " | ".join(check_reason_lines(result, max_lines=2, width=160))
    line = f"check {result.name}: {result.status} ({', '.join(facts)})"
    if reason:
        line = f"{line}: {shorten(reason, 320)}"
    code = result.error.code if result.error is not None else None
    return f"{line} [{code}]" if code else line


def missing_executable(spec: CheckSpec, workspace: str | None) -> str | None:
    """A warning for a configured check whose executable was not found at load, else None."""
    if spec.executable is not None or not spec.argv:
        return None
    argv0 = spec.argv[0]
    if "/" in argv0:
        where = argv0 if argv0.startswith("/") or workspace is None else f"{workspace}/{argv0}"
        what = f"{argv0!r} is not an executable file ({clean(where)})"
    else:
        what = f"executable {argv0!r} was not found on PATH"
    return (
        f"warning: check {spec.name}: {clean(what)}; "
        f"install it, or correct checks.{spec.name}.cmd[0] in your config [check_missing]"
    )


def plan_excerpt(plan: str | None, max_lines: int) -> tuple[list[str], int]:
    """The first ``max_lines`` lines of a plan (blank runs collapsed) and how many are left."""
    if not plan:
        return [], 0
    lines = clean(plan).strip("\n").splitlines()
    # Collapse runs of blank lines so the excerpt shows content.
    kept: list[str] = []
    for line in lines:
        if line.strip() or (kept and kept[-1].strip()):
            kept.append(line.rstrip())
    return kept[:max_lines], max(0, len(kept) - max_lines)


def backend_summary(config: FlowConfig, *, label: bool = True) -> str:
    """``backend NAME at URL`` for a ``flow_core.FlowConfig``; ``NAME at URL`` without the
    label (a table row that is already called "backend")."""
    section = config.ollama if config.backend == "ollama" else config.openai
    text = f"{config.backend} at {section.base_url}"
    return f"backend {text}" if label else text


def models_summary(models: dict[str, str]) -> list[str]:
    """Models grouped by name: ``["qwen (planner, coder, reviewer)"]`` or one entry each."""
    roles_by_model: dict[str, list[str]] = {}
    for role, name in models.items():
        roles_by_model.setdefault(name, []).append(role)
    return [f"{name} ({', '.join(roles)})" for name, roles in roles_by_model.items()]


def status_line(report: Report, config: Any) -> str:
    """The one-line human summary ``flow status`` prints on a terminal stderr."""
    checks = len(report.configured_checks)
    parts = [
        backend_summary(config),
        "models " + "; ".join(models_summary(report.models)) if report.models else "no models",
        f"{checks} check{'s' if checks != 1 else ''} configured",
        "trusted" if report.trusted else "read-only",
    ]
    return clean(" · ".join(parts))


def token_lines(report: Report) -> list[str]:
    """One line per role: model turns, prompt and completion tokens as the server reported
    them, how tool results reached the model, and the context trims and cuts."""
    lines = []
    for role, usage in report.roles.items():
        parts = [f"{usage.turns} turns", f"{usage.prompt_tokens} prompt tokens"]
        parts.append(f"{usage.completion_tokens} completion tokens")
        if usage.context_window:
            parts.append(f"window {usage.context_window}")
        if usage.tool_results:
            parts.append(f"tool results as {usage.tool_results}")
        if usage.trims:
            parts.append(f"{len(usage.trims)} trims/cuts")
        lines.append(f"{role}: " + ", ".join(parts))
    return lines


def _per_role(values: Mapping[Role, str]) -> str:
    """``"63484 for planner, coder"`` lines, roles with the same value on one line."""
    roles_by_value: dict[str, list[str]] = {}
    for role, value in values.items():
        roles_by_value.setdefault(value, []).append(role)
    return "\n".join(f"{value} for {', '.join(roles)}" for value, roles in roles_by_value.items())


def budget_rows(budgets: Mapping[Role, RoleBudget]) -> list[tuple[str, str]]:
    """The ``/status`` rows of each role's enforced limits (``Runtime.role_budgets``): the
    same numbers a run enforces and reports (``roles.*.context_chars_limit``,
    ``reply_chars_limit``, ``context_window``)."""
    windows = {
        r: "unknown" if b.window is None else f"{b.window} tokens" for r, b in budgets.items()
    }
    chars = {
        r: f"{b.context_chars} ("
        + ("window less the reply's reserve" if b.from_window else "agent.max_context_chars")
        + ")"
        for r, b in budgets.items()
    }
    replies = {r: str(b.reply_chars) for r, b in budgets.items()}
    return [
        ("context window", _per_role(windows)),
        ("max context chars", _per_role(chars)),
        ("max reply chars", _per_role(replies)),
    ]
