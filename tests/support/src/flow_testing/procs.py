"""Processes and process groups as Linux's ``/proc`` shows them, for the orphan checks.

A check, a run or the MCP server must leave no process behind; the suites look for survivors
here. A zombie (state ``Z``) has ended and waits for its parent or PID 1 to reap it, so it
counts as gone everywhere below. Imports no Flow package.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["alive", "group_alive", "group_members", "leader_gone", "process_state"]

_PROC = Path("/proc")


def _fields(stat: str) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (which may hold spaces and
    parentheses): state first, then the parent pid, then the process group."""
    return stat.rsplit(")", 1)[1].split()


def process_state(pid: int) -> str | None:
    """The state letter of ``pid`` (``R``, ``S``, ``Z`` ...), or None when it is gone."""
    try:
        return _fields((_PROC / str(pid) / "stat").read_text())[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    return process_state(pid) not in (None, "Z")


def group_members(pgid: int) -> list[int]:
    """The pids of the processes of group ``pgid`` that are not zombies."""
    members = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = _fields((entry / "stat").read_text())
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def group_alive(pgid: int) -> bool:
    """Any non-zombie process still in group ``pgid``; without ``/proc``, whether the group
    exists at all (``killpg(pgid, 0)``)."""
    if not _PROC.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    return bool(group_members(pgid))


def leader_gone(pgid: int, within_s: float = 30.0) -> bool:
    """Wait (bounded, polling) until group ``pgid`` is gone or its leader is a zombie.

    Returns:
        True once ``killpg(pgid, 0)`` finds no group or the leader (pid ``pgid``) is gone or
        a zombie; False when ``within_s`` seconds pass first.
    """
    end = time.monotonic() + within_s
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if process_state(pgid) in (None, "Z"):
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.02)
