"""The ``flow`` entry function (``flow_cli.main``).

Kept tiny on purpose: the click application (and, through it, flow-core) is imported only
when the command actually runs, and ``flow-mcp`` only for ``flow serve``. ``--help``,
``--version`` and ``COMMAND --help`` are answered from argv before click loads, with click's
own text (``flow_cli/_fasthelp.py``).
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    """Run the ``flow`` command.

    Args:
        argv: arguments after the program name; ``sys.argv[1:]`` when None.

    Returns:
        The process exit code: 0 ok, 1 failed or unverified, 2 configuration or usage error,
        130 interrupted (Ctrl-C or SIGTERM).
    """
    args = sys.argv[1:] if argv is None else argv
    from flow_cli._fasthelp import answer

    text = answer(args)
    if text is None:
        from flow_cli._cli import run_cli

        return run_cli(args)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # As click does for a reader that went away: quiet, exit 1, no error at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
