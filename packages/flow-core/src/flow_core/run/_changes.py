"""Change tracking for one run: pre-images, fingerprints, the unified diff and rollback.

Every file the run writes is read once before its first write (its *pre-image*; ``None`` for
a file that did not exist). From the pre-images the runtime derives the changed files, the
SHA-256 fingerprints the gate compares (before the checks and after the review), the report's
unified diff, and ``Runtime.rollback()``.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from flow_core._errors import EditorError
from flow_safeio import NotFoundError

if TYPE_CHECKING:
    from flow_core._protocols import EditorBridge
    from flow_safeio import Workspace

__all__ = ["ChangeTracker", "sha256_hex", "unified_diff"]


def sha256_hex(data: bytes | None) -> str | None:
    """The SHA-256 of ``data`` as 64 hex digits; None for a missing file."""
    return None if data is None else hashlib.sha256(data).hexdigest()


def unified_diff(path: str, old: bytes | None, new: bytes | None) -> str:
    """A ``git diff``-style unified diff of one file (``/dev/null`` for a missing side).

    Bytes are decoded as UTF-8 with replacement; a last line without a newline is marked
    ``\\ No newline at end of file`` as in GNU diff.
    """

    def lines(data: bytes | None) -> list[str]:
        if data is None:
            return []
        # Lines end at "\n" only, so hunk headers number lines as grep -n and the file tools
        # do (splitlines would also break at \x0c, \u2028, ... and shift every number).
        # imported here: flow_core.tools loads the file tools and the check runner, which
        # flow status never needs (bench/bench_cli.py)
        from flow_core.tools._lines import split_lines_keepends

        out = split_lines_keepends(data.decode("utf-8", errors="replace"))
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n\\ No newline at end of file\n"
        return out

    return "".join(
        difflib.unified_diff(
            lines(old),
            lines(new),
            fromfile="/dev/null" if old is None else f"a/{path}",
            tofile="/dev/null" if new is None else f"b/{path}",
        )
    )


class ChangeTracker:
    """The pre-images of the files one run wrote, and what follows from them.

    Args:
        workspace: returns the run's ``flow_safeio.Workspace`` (opened on first need).
    """

    def __init__(self, workspace: Callable[[], Workspace]) -> None:
        self._workspace = workspace
        self.pre: dict[str, bytes | None] = {}

    def read_disk(self, path: str) -> bytes | None:
        """The bytes of ``path`` now, or None when it cannot be read."""
        try:
            return self._workspace().read_bytes(path)
        except OSError:
            return None

    def mode_of(self, path: str) -> int | None:
        """The permission bits of ``path`` now (``stat.S_IMODE``), None when unreadable."""
        try:
            return self._workspace().stat(path).mode
        except OSError:
            return None

    def keep_pre_image(self, path: str) -> None:
        """Keep the bytes of ``path`` before its first write in this run.

        Only a file that does not exist counts as created. Any other reason the pre-image
        cannot be read (over the size cap, a hard link, not a regular file) raises the
        flow-safeio error, so the write is refused: a change Flow cannot show in the diff or
        undo is never made.
        """
        if path in self.pre:
            return
        try:
            self.pre[path] = self._workspace().read_bytes(path)
        except NotFoundError:
            self.pre[path] = None

    def changed_files(self) -> list[str]:
        """Written paths whose bytes now differ from their pre-image, sorted."""
        return sorted(p for p, old in self.pre.items() if self.read_disk(p) != old)

    def hashes(self) -> dict[str, str | None]:
        """SHA-256 hex of every written path now (None: missing or unreadable)."""
        return {p: sha256_hex(self.read_disk(p)) for p in sorted(self.pre)}

    def diff(self) -> str:
        """The unified diff of every written path against its pre-image."""
        return "".join(unified_diff(p, self.pre[p], self.read_disk(p)) for p in sorted(self.pre))

    def rollback(self, editor: EditorBridge | None) -> list[str]:
        """Restore every written file to its pre-image; remove the files the run created.

        Removal goes through ``flow_safeio.Workspace.remove`` (regular files only, no link
        followed). With an editor bridge, created files are left in place (Rose offers no
        delete, and Flow never bypasses the editor) and reported as failed.

        Returns:
            Paths that could not be restored or removed (already gone counts as removed).
        """
        failed: list[str] = []
        ws = self._workspace()
        for path, old in self.pre.items():
            try:
                if old is None:
                    if editor is not None:
                        failed.append(path)
                    else:
                        with contextlib.suppress(NotFoundError):
                            ws.remove(path)
                elif editor is not None:
                    editor.write_file(path, old.decode("utf-8"))
                else:
                    ws.write_bytes(path, old)
            except (OSError, EditorError, UnicodeDecodeError):
                failed.append(path)
        return failed
