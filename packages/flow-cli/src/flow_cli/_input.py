"""The TUI's line input: line editing, persistent history and bracketed paste.

On a terminal the prompt is read with prompt_toolkit: Emacs-style line editing, Up/Down through
a history kept in ``$XDG_STATE_HOME/flow/history`` (default ``~/.local/state/flow/history``,
folder 0700, file 0600), and a multi-line paste (xterm bracketed paste mode) arriving as one
input, so it runs as one task. Ctrl-C at the prompt clears the line (``KeyboardInterrupt``
reaches the caller, which says so); Ctrl-D on an empty line ends input (``EOFError``).

When stdin or stdout is not a terminal (a pipe, a test harness), lines are read with the
console's plain ``input`` so the TUI still works with piped stdin.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


def history_path() -> Path:
    """Where the TUI's input history lives: ``flow_core.state_dir() / "history"``."""
    from flow_core import state_dir

    return state_dir() / "history"


def _private_file(path: Path) -> Path | None:
    """Create ``path``'s folder (0700) and the file (0600) if missing; None when impossible.

    A history that cannot be kept (read-only home, a non-regular file in the way) is not an
    error: the TUI then keeps history for the session only.
    """
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    except OSError:
        return None
    try:
        if not os.path.isfile(path):  # pragma: no cover - O_NOFOLLOW refused links already
            return None
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path


def make_reader(console: Console) -> Callable[[str], str]:
    """A function reading one line given a prompt text (plain text, not rich markup).

    Raises (from the returned function):
        EOFError: end of input (Ctrl-D on an empty line, or a closed pipe).
        KeyboardInterrupt: Ctrl-C at the prompt (the line is discarded).
    """
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return lambda prompt: console.input(f"[bold green]{prompt}[/]")

    from prompt_toolkit import PromptSession
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    from prompt_toolkit.styles import Style

    path = _private_file(history_path())
    history = FileHistory(str(path)) if path is not None else InMemoryHistory()
    session: PromptSession[str] = PromptSession(
        history=history,
        style=Style.from_dict({"prompt": "bold ansigreen"}),
        # Enter accepts; a pasted newline (bracketed paste) stays in the line.
        multiline=False,
        enable_history_search=False,
    )

    def read(prompt: str) -> str:
        return session.prompt(FormattedText([("class:prompt", prompt)]))

    return read
