"""Console entry point: ``flow`` (``flow_cli.__main__:main``) and ``python -m flow_cli``."""

from __future__ import annotations

import gc

from flow_cli._main import main as run_command

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the ``flow`` command (``flow_cli.main``) in a process that exits right after.

    When the command has returned, the objects left are frozen (``gc.freeze``): the
    interpreter's exit then frees them by reference count but does not search them for
    reference cycles again, which was about a fifth of a cold ``flow status``'s CPU time
    (``bench/bench_cli.py``). The operating system reclaims what is left, and Python never
    promised ``__del__`` for objects alive at exit (the language reference, "object.__del__");
    Flow's own cleanup runs before the command returns (context managers, ``atexit``).
    In-process callers (tests, other programs) use ``flow_cli.main``, which freezes nothing.

    Returns:
        The exit code of ``flow_cli.main``.
    """
    code = run_command(argv)
    gc.freeze()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
