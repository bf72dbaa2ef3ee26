"""``flow explain [CODE]``: one error code's meaning, usual cause and fix, from the catalogue.

Everything comes from flow-core's one error catalogue (``flow_core.ERROR_CODES`` and
``flow_core.explain_error``); nothing is written here twice. Output is plain text on stdout.
"""

from __future__ import annotations

import difflib
import sys

import click

EXIT_OK = 0
EXIT_USAGE = 2


def explain_code(code: str) -> int:
    """Print the explanation of ``code``; for an unknown code, say so with close matches.

    Returns:
        0, or 2 when ``code`` is not in the catalogue.
    """
    from flow_core import ERROR_CODES, explain_error

    wanted = code.strip().strip("[]").lower()
    found = explain_error(wanted)
    if found is None:
        near = difflib.get_close_matches(wanted, list(ERROR_CODES), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        click.echo(
            f"flow: unknown error code {code!r}{hint} (flow explain lists every code) "
            "[usage_error]",
            err=True,
        )
        return EXIT_USAGE
    click.echo(f"{found.code}  ({found.category}: exit code {found.exit_code})")
    click.echo(f"meaning: {found.meaning}")
    click.echo(f"cause:   {found.cause}")
    click.echo(f"fix:     {found.fix}")
    return EXIT_OK


def list_codes() -> int:
    """Print every code with its category and meaning, one per line (sorted by code)."""
    from flow_core import ERROR_CODES, error_category

    width = max(len(c) for c in ERROR_CODES)
    for code in sorted(ERROR_CODES):
        click.echo(f"{code:<{width}}  {error_category(code):<11}  {ERROR_CODES[code]}")
    sys.stdout.flush()
    return EXIT_OK
