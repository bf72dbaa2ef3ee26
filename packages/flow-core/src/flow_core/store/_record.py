"""One run's folder in the run store: written as the run goes, read back by show/undo/apply.

Layout of ``<store>/<run id>/`` (directories 0700, files 0600, nothing ever followed through a
symbolic link):

* ``meta.json``: id, kind (``run``, ``undo``), UTC creation time, workspace, task, status
  (``running`` until the end), pid; replaced atomically (temporary file + rename).
* ``transcript.jsonl``: append-only, one JSON object per line, written with one ``write`` per
  line, so a killed process leaves every finished line readable. Types: ``model_request``
  (model, the messages not already sent in the previous request of the same role invocation,
  tool names, response format), ``model_reply`` (content and tool calls as received, finish
  reason, token counts), ``tool_call`` (arguments and the result the model saw), ``check``
  (the check's result and output tail), ``event``, ``note`` and, at most once,
  ``truncated`` (the file reached ``max_file_bytes``; later lines were dropped and counted).
* ``files.jsonl``: append-only. A ``pre`` line is written *before* Flow first writes a file
  (the file's bytes go to ``pre/NNNN`` first; ``null`` means the file did not exist; its
  permission bits in ``pre_mode``); a ``post`` line is written right after each of Flow's own
  writes, with the SHA-256 of the bytes written and the permission bits they got. A post line
  is never taken from the disk later: whatever someone else saves afterwards is theirs, and
  undo and apply judge it so (``_undo``).
* at the end: ``report.json``, ``plan.md``, ``diff.patch``, ``manifest.json`` (changed and
  created files with their pre- and post-run SHA-256) and, for isolated runs, ``post/NNNN``
  (the changed files' new bytes, so ``flow apply`` works after the worktree is gone).

Sizes are capped: one string in a transcript line at ``MAX_STRING_CHARS`` characters, one file
at ``max_file_bytes`` and the whole folder at ``max_run_bytes`` (``flow_core.config.RunsConfig``);
every cut leaves a marker that says how much was dropped.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flow_core.store._bytes import (
    MAX_STRING_CHARS,
    cut_strings,
    json_bytes,
    mode_of,
    now_iso,
    open_new,
    read_small,
    sha256,
    text_bytes,
    write_all,
    write_atomic,
)
from flow_core.store._where import StoreError

__all__ = [
    "MAX_STRING_CHARS",
    "FileEntry",
    "RunRecord",
    "StoreError",
    "json_bytes",
    "sha256",
    "text_bytes",
]


@dataclass(frozen=True)
class FileEntry:
    """What one run did to one workspace file.

    Attributes:
        path: workspace-relative path.
        created: the file did not exist before the run.
        pre: name of the pre-image inside the record (``pre/NNNN``), ``None`` when created.
        pre_sha256: SHA-256 of the pre-image (``None`` when created).
        post_sha256: SHA-256 after the run's last write that Flow saw finish (``None``: the
            file does not exist then).
        post_known: False when the run ended before recording any hash after its first write
            to the file (killed mid-write): then nobody knows what the file should hold.
        post: name of the stored post-image (isolated runs), else ``None``.
        pre_mode: permission bits before the run (``None``: unknown or created).
        post_mode: permission bits the run's last write left (``None``: unknown).
    """

    path: str
    created: bool
    pre: str | None
    pre_sha256: str | None
    post_sha256: str | None
    post_known: bool = True
    post: str | None = None
    pre_mode: int | None = None
    post_mode: int | None = None

    @property
    def changed(self) -> bool:
        """The run may have left the file different from its pre-image."""
        return not self.post_known or self.post_sha256 != self.pre_sha256


class RunRecord:
    """Writer and reader of one run's folder (see the module docstring for the layout).

    Built by ``RunStore.begin`` (writing) or ``RunStore.open`` (reading). Writing methods are
    thread-safe. ``OSError`` from the file system propagates from ``pre_image`` (a write must
    not happen without its pre-image); the other writers drop what they cannot write and
    count it, so a full disk never breaks a run.
    """

    def __init__(
        self,
        directory: Path,
        meta: dict[str, Any],
        *,
        max_file_bytes: int,
        max_run_bytes: int,
    ) -> None:
        self.dir = directory
        self.meta = meta
        self.max_file_bytes = max_file_bytes
        self.max_run_bytes = max_run_bytes
        self._lock = threading.Lock()
        self._fds: dict[str, int] = {}
        self._sizes: dict[str, int] = {}
        self._bytes = 0
        self._dropped: dict[str, int] = {}
        self._pre_count = 0
        self._pre_paths: dict[str, str | None] = {}
        self._posts: dict[str, tuple[str | None, int | None]] = {}
        self._last_request: dict[str, list[Any]] = {}
        self._closed = False

    # -- identity -------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The run id (``YYYYMMDDTHHMMSSffffffZ-xxxxxx``: sortable by time)."""
        return str(self.meta["id"])

    @property
    def workspace(self) -> str:
        """The workspace root the run's changes belong to (absolute path)."""
        return str(self.meta["workspace"])

    # -- low-level writing ----------------------------------------------------------------------

    def _room(self, name: str, size: int) -> bool:
        return (
            self._sizes.get(name, 0) + size <= self.max_file_bytes
            and self._bytes + size <= self.max_run_bytes
        )

    def _append(self, name: str, obj: Mapping[str, Any], *, required: bool = False) -> None:
        line = json_bytes(cut_strings(obj)) + b"\n"
        with self._lock:
            if self._closed:
                return
            if not self._room(name, len(line) + 200):
                if required:
                    raise StoreError(
                        f"run record {self.id}: {name} is full (runs.max_file_bytes "
                        f"{self.max_file_bytes}, runs.max_run_bytes {self.max_run_bytes})",
                        code="run_store_full",
                    )
                self._drop(name, len(line))
                return
            fd = self._fds.get(name)
            if fd is None:
                fd = self._fds[name] = open_new(self.dir / name, append=True)
            write_all(fd, line)
            self._sizes[name] = self._sizes.get(name, 0) + len(line)
            self._bytes += len(line)

    def _drop(self, name: str, size: int) -> None:
        first = name not in self._dropped
        self._dropped[name] = self._dropped.get(name, 0) + size
        if first:
            marker = {
                "type": "truncated",
                "time": now_iso(),
                "message": f"a line did not fit {name}'s size cap and was dropped, and so "
                "may later ones; meta.json 'dropped_bytes' counts every byte dropped",
            }
            fd = self._fds.get(name)
            with contextlib.suppress(OSError):
                if fd is None:
                    fd = self._fds[name] = open_new(self.dir / name, append=True)
                write_all(fd, (json.dumps(marker) + "\n").encode())

    def write_file(self, name: str, data: bytes) -> bool:
        """Write one whole file of the record (0600), cut at the caps with a marker.

        Returns:
            Whether it was written whole (False: cut, or not written at all).
        """
        whole = True
        with self._lock:
            room = min(self.max_file_bytes, self.max_run_bytes - self._bytes)
            if len(data) > room:
                whole = False
                cut = max(0, room - 200)
                dropped = len(data) - cut
                marker = f"\n[run store: {dropped} more bytes cut at the size cap]\n"
                data = data[:cut] + marker.encode()
                self._dropped[name] = self._dropped.get(name, 0) + dropped
            try:
                write_atomic(self.dir / name, data)
            except OSError:
                self._dropped[name] = self._dropped.get(name, 0) + len(data)
                return False
            self._bytes += len(data)
        return whole

    def save_meta(self, **updates: Any) -> None:
        """Merge ``updates`` into ``meta.json`` (atomic replace; errors are swallowed)."""
        with self._lock:
            self.meta.update(updates)
            if self._dropped:
                self.meta["dropped_bytes"] = dict(self._dropped)
            data = json_bytes(self.meta, indent=2)
        with contextlib.suppress(OSError):
            write_atomic(self.dir / "meta.json", data)

    # -- the run's recorder interface -----------------------------------------------------------

    def transcript(self, type_: str, **fields: Any) -> None:
        """Append one transcript line ``{"type": type_, "time": ..., **fields}`` (best effort:
        a line that cannot be written is dropped, never raised)."""
        with contextlib.suppress(OSError, ValueError):
            self._append("transcript.jsonl", {"type": type_, "time": now_iso(), **fields})

    def model_request(
        self,
        *,
        key: str,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[str],
        response_format: Mapping[str, Any] | None,
        **where: Any,
    ) -> None:
        """Record one request; ``key`` names the role invocation whose messages accumulate.

        Only the messages after the longest prefix equal to the previous request under the
        same ``key`` are written (``same_prefix`` says how many were left out as already
        recorded), so a long conversation costs linear, not quadratic, space.
        """
        previous = self._last_request.get(key, [])
        same = 0
        for old, new in zip(previous, messages, strict=False):
            if old != new:
                break
            same += 1
        self._last_request[key] = list(messages)
        self.transcript(
            "model_request",
            model=model,
            same_prefix=same,
            messages=list(messages[same:]),
            message_count=len(messages),
            tools=list(tools),
            format=response_format,
            **where,
        )

    def pre_image(self, path: str, data: bytes | None, mode: int | None = None) -> None:
        """Keep ``path``'s bytes before Flow first writes it (``None``: it does not exist).

        ``mode`` is the file's permission bits then (``None``: unknown or no file).

        Raises:
            StoreError: code ``run_store_full``: the pre-image does not fit the caps.
            OSError: it could not be written. Either way the write must not happen.
        """
        with self._lock:
            if path in self._pre_paths:
                return
            name: str | None = None
            if data is not None:
                if self._bytes + len(data) > self.max_run_bytes:
                    raise StoreError(
                        f"the pre-image of {path} ({len(data)} bytes) does not fit the run "
                        f"record (runs.max_run_bytes {self.max_run_bytes}); the write is "
                        "refused because it could not be undone",
                        code="run_store_full",
                    )
                self._pre_count += 1
                name = f"pre/{self._pre_count:04d}"
                (self.dir / "pre").mkdir(mode=0o700, exist_ok=True)
                fd = open_new(self.dir / name)
                try:
                    write_all(fd, data)
                finally:
                    os.close(fd)
                self._bytes += len(data)
            self._pre_paths[path] = name
        entry: dict[str, Any] = {
            "type": "pre",
            "path": path,
            "pre": name,
            "pre_sha256": sha256(data),
        }
        if mode is not None:
            entry["pre_mode"] = mode
        self._append("files.jsonl", entry, required=True)

    def pre_mode(self, path: str, mode: int | None) -> None:
        """Restate the permission bits ``path`` had before Flow's write (a ``pre_mode`` line,
        which wins over the ``pre`` line's): an isolated run is applied later than it began,
        and the person may have changed the bits meanwhile; undo gives back these."""
        line = {"type": "pre_mode", "path": path, "pre_mode": mode}
        with contextlib.suppress(OSError, StoreError):
            self._append("files.jsonl", line)

    def post_state(self, path: str, digest: str | None, mode: int | None = None) -> None:
        """Record what Flow's own write just left in ``path``: SHA-256 and permission bits.

        Call it right after the write, with the hash of the bytes written (never a later
        read of the disk: that could hold someone else's edit). A state equal to the last one
        recorded here is not written again; a path without a pre line is ignored when read.
        """
        if self._posts.get(path, "") == (digest, mode):
            return
        self._posts[path] = (digest, mode)
        line: dict[str, Any] = {"type": "post", "path": path, "post_sha256": digest}
        if mode is not None:
            line["post_mode"] = mode
        with contextlib.suppress(OSError, StoreError):
            self._append("files.jsonl", line)

    def check_group(self, pgid: int) -> None:
        """Note a check's process group (``processes.jsonl``: the id and its leader's start
        time), so whoever settles this run after a SIGKILL ends what is left of it
        (``store/_reap.py``)."""
        from flow_core.store._store import process_start

        line = {"type": "check_group", "pgid": pgid, "start": process_start(pgid)}
        with contextlib.suppress(OSError, StoreError):
            self._append("processes.jsonl", line)

    def check_groups(self) -> list[tuple[int, str | None]]:
        """The check process groups noted, as ``(pgid, leader start time)``."""
        out: list[tuple[int, str | None]] = []
        for line in self._lines("processes.jsonl"):
            pgid, start = line.get("pgid"), line.get("start")
            if isinstance(pgid, int) and not isinstance(pgid, bool) and pgid > 1:
                out.append((pgid, start if isinstance(start, str) else None))
        return out

    def post_hashes(self, hashes: Mapping[str, str | None]) -> None:
        """``post_state`` for several paths, without permission bits."""
        for path, digest in hashes.items():
            self.post_state(path, digest)

    def finish(self, status: str, **meta: Any) -> None:
        """Write ``manifest.json``, the final meta (status and ``ended``) and close the files."""
        entries = [e.__dict__ for e in self.files()]
        with contextlib.suppress(OSError):
            self.write_file("manifest.json", json.dumps({"files": entries}, indent=2).encode())
        self.save_meta(status=status, ended=now_iso(), **meta)
        self.close()

    def close(self) -> None:
        """Close the append-only files (idempotent)."""
        with self._lock:
            self._closed = True
            fds, self._fds = self._fds, {}
        for fd in fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)

    # -- reading --------------------------------------------------------------------------------

    def _lines(self, name: str) -> list[dict[str, Any]]:
        """The JSON lines of ``name``; a last line cut by a crash is skipped."""
        try:
            raw = read_small(self.dir / name, self.max_file_bytes + 4096)
        except FileNotFoundError:
            return []
        out: list[dict[str, Any]] = []
        for line in raw.splitlines():
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
        return out

    def files(self) -> list[FileEntry]:
        """Every file the run pre-imaged, folded from ``files.jsonl`` (sorted by path)."""
        pres: dict[str, dict[str, Any]] = {}
        posts: dict[str, str | None] = {}
        modes: dict[str, int | None] = {}
        pre_modes: dict[str, int | None] = {}
        stored: dict[str, str] = {}
        for line in self._lines("files.jsonl"):
            path = line.get("path")
            if not isinstance(path, str):
                continue
            if line.get("type") == "pre" and path not in pres:
                pres[path] = line
            elif line.get("type") == "post":
                digest = line.get("post_sha256")
                posts[path] = digest if isinstance(digest, str) else None
                modes[path] = mode_of(line.get("post_mode"))
            elif line.get("type") == "pre_mode":
                pre_modes[path] = mode_of(line.get("pre_mode"))
            elif line.get("type") == "post_image" and isinstance(line.get("post"), str):
                stored[path] = line["post"]
        return [
            FileEntry(
                path=path,
                created=pre.get("pre") is None,
                pre=pre.get("pre"),
                pre_sha256=pre.get("pre_sha256"),
                post_sha256=posts.get(path),
                post_known=path in posts,
                post=stored.get(path),
                pre_mode=pre_modes.get(path, mode_of(pre.get("pre_mode"))),
                post_mode=modes.get(path),
            )
            for path, pre in sorted(pres.items())
        ]

    def changed_files(self) -> list[FileEntry]:
        """The files the run left different from their pre-images."""
        return [e for e in self.files() if e.changed]

    def read_image(self, name: str, expected: str | None) -> bytes:
        """A stored pre- or post-image, checked against its recorded SHA-256.

        Raises:
            StoreError: code ``undo_failed`` when it is missing or its hash differs.
        """
        try:
            data = read_small(self.dir / name, self.max_run_bytes)
        except OSError as err:
            raise StoreError(
                f"run {self.id}: the stored image {name} cannot be read ({err.strerror})",
                code="undo_failed",
            ) from err
        if sha256(data) != expected:
            raise StoreError(
                f"run {self.id}: the stored image {name} does not match its recorded hash",
                code="undo_failed",
            )
        return data

    def store_post_image(self, path: str, data: bytes) -> None:
        """Keep ``path``'s new bytes in the record (isolated runs: for ``flow apply`` later)."""
        with self._lock:
            self._pre_count += 1
            name = f"post/{self._pre_count:04d}"
            if self._bytes + len(data) > self.max_run_bytes:
                raise StoreError(
                    f"the new content of {path} does not fit the run record "
                    f"(runs.max_run_bytes {self.max_run_bytes})",
                    code="run_store_full",
                )
            (self.dir / "post").mkdir(mode=0o700, exist_ok=True)
            fd = open_new(self.dir / name)
            try:
                write_all(fd, data)
            finally:
                os.close(fd)
            self._bytes += len(data)
        self._append(
            "files.jsonl", {"type": "post_image", "path": path, "post": name}, required=True
        )

    def read_text(self, name: str) -> str | None:
        """A text file of the record (``plan.md``, ``diff.patch``, ...), or None if absent."""
        try:
            return read_small(self.dir / name, self.max_file_bytes + 4096).decode(
                "utf-8", "replace"
            )
        except FileNotFoundError:
            return None

    def transcript_lines(self) -> list[dict[str, Any]]:
        """The transcript, line by line (a line cut by a crash is skipped)."""
        return self._lines("transcript.jsonl")
