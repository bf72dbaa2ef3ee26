"""The ``flow`` entry function (``flow_cli.main``).

Kept tiny on purpose: the click application (and, through it, flow-core) is imported only
when the command actually runs, and ``flow-mcp`` only for ``flow serve``.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the ``flow`` command.

    Args:
        argv: arguments after the program name; ``sys.argv[1:]`` when None.

    Returns:
        The process exit code: 0 ok, 1 failed or unverified, 2 configuration or usage error,
        130 interrupted (Ctrl-C or SIGTERM).
    """
    from flow_cli._cli import run_cli

    return run_cli(sys.argv[1:] if argv is None else argv)
