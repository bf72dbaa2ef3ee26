"""Console entry point (stub until the package's issue lands)."""

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the process exit code."""
    args = sys.argv[1:] if argv is None else argv
    if "--help" in args:
        print("usage: flow-mcp [--help]")
        return 0
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
