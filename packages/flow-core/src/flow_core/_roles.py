"""The role names and the editor timeout bounds: constants with no imports behind them.

``_protocols.py`` (the seams) re-exports them; the config, the status report and the error
table import them from here, so ``flow status`` does not load the seams' classes
(``bench/bench_cli.py`` measures its cold start).
"""

from __future__ import annotations

from typing import Literal

__all__ = ["EDITOR_TIMEOUT_DEFAULT", "EDITOR_TIMEOUT_MAX", "EDITOR_TIMEOUT_MIN", "ROLES", "Role"]

Role = Literal["planner", "coder", "reviewer"]
ROLES: tuple[Role, ...] = ("planner", "coder", "reviewer")

#: Editor request timeouts, in seconds: the default and the accepted range
#: (``docs/architecture.md``, "Rose"). flow-rose enforces them; flow-mcp and flow-cli check
#: their flags against them.
EDITOR_TIMEOUT_DEFAULT: float = 120.0
EDITOR_TIMEOUT_MIN: float = 0.1
EDITOR_TIMEOUT_MAX: float = 660.0
