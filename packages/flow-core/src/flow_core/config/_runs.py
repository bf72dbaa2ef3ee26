"""``[runs]``: where and how long Flow keeps its run records, and what an unverified run leaves.

Every run gets a folder in the run store (``flow_core.store``) outside the workspace; these
keys bound it and set the defaults the CLI, the TUI and the MCP server share. Source:
flow-core's README, "Run store".
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RunsConfig"]


class RunsConfig(BaseModel):
    """``[runs]``: the run store's bounds and the run defaults that touch it.

    Attributes:
        keep: most run records kept; the oldest beyond it are pruned when a run starts.
        max_age_days: records older than this many days are pruned when a run starts
            (0 keeps them regardless of age).
        max_file_bytes: cap on one file of a record (transcript, report, diff), in bytes;
            what does not fit is dropped and a truncation marker says how much.
        max_run_bytes: cap on one whole record, in bytes (pre-images included). A write whose
            pre-image would not fit is refused, because Flow never makes a change it cannot undo.
        on_unverified: ``"keep"`` (default) leaves an unverified or interrupted run's edits in
            place and says how to undo them; ``"rollback"`` restores the pre-images at once.
        isolate: run every ``flow run`` in a git worktree or private copy outside the
            workspace and apply only a verified change (the CLI's ``--isolate``).
        when_busy: what a run that would write the workspace does while another run, undo or
            apply holds its lock (``store/_lock.py``): ``"refuse"`` (default; error
            ``workspace_busy``), ``"wait"`` until it is free, or ``"isolate"`` (run isolated,
            which is always allowed, and apply when verified and the workspace is free).
        watch_max_files: most files (outside generated folders) the whole-tree watch records;
            a trusted run on a bigger tree is refused by the preflight, before any model
            request (``preflight_tree_too_large``), since its run could never be verified.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    keep: int = Field(default=100, ge=1, le=100_000)
    max_age_days: int = Field(default=30, ge=0, le=36_500)
    max_file_bytes: int = Field(default=16 * 1024 * 1024, ge=64 * 1024)
    max_run_bytes: int = Field(default=128 * 1024 * 1024, ge=1024 * 1024)
    on_unverified: Literal["keep", "rollback"] = "keep"
    isolate: bool = False
    when_busy: Literal["refuse", "wait", "isolate"] = "refuse"
    watch_max_files: int = Field(default=250_000, ge=1, le=10_000_000)
