"""The project map: what a role sees of the project when its model cannot receive tools.

A chat template that drops the request's tool definitions (``ChatBackend.tool_definitions_reach``)
leaves a read-only role with nothing to look at. Such a role is sent no tools; the planner is
given this map instead (``docs/architecture.md``, "A role without tools"):

* the file list (``Workspace.walk``, the same rules as ``list_files``: generated folders and
  refused names are left out), at most ``MAX_MAP_FILES`` paths;
* the outlines (``flow_core.tools._outline``: definitions with their line ranges) of the files
  the task names, then of the files that define the task's identifiers, most matches first;

all within ``budget`` characters (the file list takes at most ``LIST_SHARE`` of it). Files are
read through the workspace, so a file ``read_file`` would refuse is never outlined.

A guided coder (``run/_guided.py``) gets ``file_views`` instead: the numbered lines of the same
files, in the same order, as ``read_file`` shows them, so a small model can go straight to an
edit. ``task_files`` is that order, which guided replies also follow. With them it gets the
baseline's check results as ``run_check`` shows them (``check_view``), the end of a long
output kept, so it need not spend turns running checks whose result Flow already has.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flow_core.tools._lines import split_lines
from flow_core.tools._outline import outline
from flow_core.tools._read import read_window

if TYPE_CHECKING:
    from flow_core._report import CheckResult
    from flow_safeio import Workspace

__all__ = [
    "CHECK_VIEW_CHARS",
    "MAP_CHARS",
    "MAX_MAP_FILES",
    "FileView",
    "check_view",
    "check_views",
    "file_views",
    "project_map",
    "task_files",
    "task_words",
]

#: The map's default budget in characters (about 1,500 tokens).
MAP_CHARS = 6_000
#: Most characters of one check's output in a first message (``check_views``).
CHECK_VIEW_CHARS = 1_500
#: Most paths in the map's file list.
MAX_MAP_FILES = 200
#: The file list's share of the budget; the outlines get the rest.
LIST_SHARE = 0.4
#: Most files read to match the task's identifiers, and the largest one read (bytes).
_MAX_SCANNED = 400
_MAX_SCAN_BYTES = 256 * 1024
_WALK_LIMIT = 5_000
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_PATHLIKE = re.compile(r"[\w./-]+\.[A-Za-z0-9]+")
#: Words too common in a task to point at one definition.
_COMMON = frozenset(
    re.findall(
        r"\w+",
        "the and for that this with from into when what which where should must does not "
        "are was were has have its can will all any but out too than then them they their "
        "make made fix add use used test tests file files code function functions method "
        "class value values return returns error bug change",
    )
)


def task_words(task: str) -> set[str]:
    """The identifiers of ``task`` worth matching against definitions: three characters or
    more, common English words left out (a dotted name counts by each of its parts)."""
    return {w for w in _IDENT.findall(task) if w.lower() not in _COMMON}


def project_map(workspace: Workspace, task: str, *, budget: int = MAP_CHARS) -> str:
    """The map of the module docstring for ``task``, at most ``budget`` characters.

    Returns:
        Plain text: a header, the file list (``[N more files not listed]`` when capped), and
        one ``Outline of PATH (N lines):`` block per outlined file, each row
        ``FIRST-LAST kind name(signature)``.
    """
    files = list(workspace.walk(".", limit=_WALK_LIMIT))
    head = f"Project map ({len(files)} files{'+' if len(files) >= _WALK_LIMIT else ''}):"
    listed = _file_list(files, int(budget * LIST_SHARE))
    out = [head, listed]
    used = len(head) + len(listed) + 2
    for rel in _relevant(workspace, files, task):
        block = _outline_block(workspace, rel, budget - used)
        if block is None:
            break
        if block:
            out.append(block)
            used += len(block) + 1
    return "\n".join(out)[:budget]


def task_files(workspace: Workspace, task: str) -> list[str]:
    """The files related to ``task``, most related first (``_relevant``): those it names,
    then those that define its identifiers. Empty when none is."""
    return _relevant(workspace, list(workspace.walk(".", limit=_WALK_LIMIT)), task)


def check_view(name: str, result: CheckResult, *, tail_chars: int) -> str:
    """One check's result as ``run_check`` returns it to the model: ``check NAME: STATUS``,
    the exit code, the error message, and the last ``tail_chars`` characters of the output
    (``verify/_checks.py`` already keeps only the output's tail)."""
    lines = [f"check {name}: {result.status}"]
    if result.exit_code is not None:
        lines.append(f"exit code: {result.exit_code}")
    if result.error is not None:
        lines.append(result.error.message)
    if result.output_tail:
        lines.append("output (tail):\n" + result.output_tail[-tail_chars:])
    return "\n".join(lines)


def check_views(results: Mapping[str, CheckResult], *, budget: int) -> list[tuple[str, str]]:
    """``(name, view)`` for each of ``results`` (check name -> result, in order) as
    ``check_view`` renders it with at most ``CHECK_VIEW_CHARS`` of output, while the views
    fit ``budget`` characters in all (a check that does not fit and those after it are left
    out)."""
    out: list[tuple[str, str]] = []
    room = budget
    for name, result in results.items():
        view = check_view(name, result, tail_chars=CHECK_VIEW_CHARS)
        if len(view) + 2 > room:
            break
        out.append((name, view))
        room -= len(view) + 2
    return out


@dataclass(frozen=True)
class FileView:
    """One file's numbered lines as ``read_file`` renders them (``file_views``)."""

    path: str
    text: str
    #: Every line of the file is shown (the first message already holds a whole read).
    whole: bool


def file_views(workspace: Workspace, task: str, *, budget: int = MAP_CHARS) -> list[FileView]:
    """The numbered lines of the files related to ``task`` (``task_files``' order), each
    rendered as ``read_file`` renders a read without a range (``tools/_read.read_window``:
    a ``PATH: lines A-B of N`` header, then ``NUMBER<TAB>TEXT`` rows), at most ``budget``
    characters in all (counting a blank line between views); a file that does not fit whole
    is cut at a line, and a note says so.

    Returns:
        The views; empty when no related file is readable text.
    """
    out: list[FileView] = []
    room = budget
    for rel in task_files(workspace, task):
        text = _read(workspace, rel)
        if text is None or not text.strip():
            continue
        rendered = read_window(rel, text)
        block = _fit(rendered, room)
        if not block:
            break
        count = len(split_lines(text))
        whole = block == rendered and rendered.startswith(f"{rel}: lines 1-{count} of {count}")
        whole = whole and not any(row.startswith("[") for row in rendered.split("\n")[1:])
        out.append(FileView(rel, block, whole))
        room -= len(block) + 2
    return out


def _fit(block: str, room: int) -> str:
    """``block`` whole, or its header and first rows within ``room`` characters and a note
    (at least two rows; "" when even those do not fit)."""
    if len(block) <= room:
        return block
    note = "[cut to fit; read_file shows the rest]"
    rows = block.split("\n")
    kept: list[str] = []
    size = len(note) + 1
    for row in rows:
        if size + len(row) + 1 > room:
            break
        kept.append(row)
        size += len(row) + 1
    return "\n".join([*kept, note]) if len(kept) >= 3 else ""


def _file_list(files: Sequence[str], budget: int) -> str:
    """Up to ``MAX_MAP_FILES`` paths within ``budget`` characters, with a count of the rest."""
    shown: list[str] = []
    size = 0
    for rel in files[:MAX_MAP_FILES]:
        if size + len(rel) + 1 > budget - 40:
            break
        shown.append(rel)
        size += len(rel) + 1
    rest = len(files) - len(shown)
    if rest:
        shown.append(f"[{rest} more files not listed]")
    return "\n".join(shown) if shown else "(no files)"


def _relevant(workspace: Workspace, files: Sequence[str], task: str) -> list[str]:
    """The files the task names (those defining one of its identifiers first, else in the
    order named), then the files defining the task's identifiers, most distinct identifiers
    first."""
    named: list[str] = []
    mentioned = _PATHLIKE.findall(task)
    for mention in mentioned:
        token = mention.strip("./")
        for rel in files:
            if rel not in named and (rel == token or rel.endswith("/" + token)):
                named.append(rel)
    words = task_words(task)
    named.sort(key=lambda rel: _defined(workspace, rel, words) == 0)  # stable: else as named
    scored: list[tuple[int, str]] = []
    for rel in _scannable(files, named):
        hits = _defined(workspace, rel, words)
        if hits:
            scored.append((-hits, rel))
    return named + [rel for _, rel in sorted(scored)]


def _scannable(files: Sequence[str], named: Iterable[str]) -> list[str]:
    skip = set(named)
    return [rel for rel in files if rel not in skip][:_MAX_SCANNED]


def _read(workspace: Workspace, rel: str) -> str | None:
    """``rel``'s text, or None when it cannot be read as UTF-8 text of a sensible size."""
    try:
        data = workspace.read_bytes(rel)
    except OSError:  # a refusal of the workspace's rules (SafeIOError), or a file gone
        return None
    if len(data) > _MAX_SCAN_BYTES or b"\0" in data[:4096]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _defined(workspace: Workspace, rel: str, words: set[str]) -> int:
    """How many of ``words`` name a definition of ``rel``."""
    if not words:
        return 0
    text = _read(workspace, rel)
    if text is None or not any(w in text for w in words):
        return 0
    defs, _ = outline(text, rel)
    return len(words & {d.name for d in defs})


def _outline_block(workspace: Workspace, rel: str, room: int) -> str | None:
    """``rel``'s outline cut to ``room`` characters; "" when it has none; None when there is
    no room left for even its header."""
    header_room = len(rel) + 40
    if room < header_room:
        return None
    text = _read(workspace, rel)
    if text is None:
        return ""
    defs, _ = outline(text, rel)
    if not defs:
        return ""
    lines = [f"Outline of {rel} ({len(split_lines(text))} lines):"]
    size = len(lines[0])
    for d in defs:
        row = f"  {d.start}-{d.end} {'  ' * d.depth}{d.kind} {d.name}{d.signature}"
        if size + len(row) + 1 > room - 30:
            lines.append("  [outline cut to fit the map]")
            break
        lines.append(row)
        size += len(row) + 1
    return "\n".join(lines)
