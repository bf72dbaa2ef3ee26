"""``[sandbox]`` at the command line: what status says, the warning, and mode "bwrap" refusing.

A machine without a usable bubblewrap is simulated with a ``bwrap`` first on ``PATH`` that
fails the way bubblewrap does in a container without namespaces.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from flow_core.verify._sandbox import probe_bwrap

PASS = [sys.executable, "-c", "print('ok')"]


def _broken_bwrap(env, tmp_path: Path) -> None:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    fake = bin_dir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    env.vars["PATH"] = f"{bin_dir}{os.pathsep}{env.vars.get('PATH', '')}"


def test_status_reports_the_jail(env, h, tmp_path, workspace) -> None:
    cfg = h.operator_config(tmp_path / "op.toml", workspace, checks=h.check_table("ok", PASS))
    result = env.flow("status", "--config", str(cfg))
    assert result.code == 0, result.stderr
    sandbox = result.json()["sandbox"]
    usable = probe_bwrap().usable
    assert sandbox["mode"] == "auto"
    assert sandbox["usable"] is usable
    assert sandbox["runs_as"] == ("bwrap" if usable else "none")
    assert sandbox["network"] is False


def test_status_remembers_a_usable_probe_that_a_broken_bwrap_never_hides(
    env, h, tmp_path, workspace
) -> None:
    """``flow status`` remembers a usable probe under the user's cache folder; the same
    answer comes back from it, and a different ``bwrap`` first on ``PATH`` is probed anew."""
    probe = probe_bwrap()
    if not probe.usable:
        pytest.skip(f"bubblewrap is unusable here, nothing to remember: {probe.reason}")
    cfg = h.operator_config(tmp_path / "op.toml", workspace, checks=h.check_table("ok", PASS))
    first = env.flow("status", "--config", str(cfg))
    assert first.code == 0, first.stderr
    cache = env.vars.get("XDG_CACHE_HOME") or os.path.join(env.vars["HOME"], ".cache")
    assert (Path(cache) / "flow" / "bwrap-probe.json").is_file()
    again = env.flow("status", "--config", str(cfg))
    assert again.json()["sandbox"] == first.json()["sandbox"]
    assert first.json()["sandbox"]["runs_as"] == "bwrap"
    _broken_bwrap(env, tmp_path)
    broken = env.flow("status", "--config", str(cfg))
    assert broken.json()["sandbox"]["runs_as"] == "none"
    assert "No permissions to create new namespace" in broken.json()["sandbox"]["reason"]


def test_auto_without_bwrap_warns_on_stderr_and_in_the_report(env, h, tmp_path, workspace) -> None:
    _broken_bwrap(env, tmp_path)
    cfg = h.operator_config(tmp_path / "op.toml", workspace, checks=h.check_table("ok", PASS))
    status = env.flow("status", "--config", str(cfg))
    assert status.code == 0
    assert status.json()["sandbox"]["runs_as"] == "none"
    assert "warning: checks run without a jail" in status.stderr
    check = env.flow("check", "--config", str(cfg), "--trusted")
    assert check.code == 0, check.stderr
    report = check.json()
    assert report["checks"][0]["sandbox"] == "none"
    assert "No permissions to create new namespace" in report["checks"][0]["sandbox_reason"]
    assert "warning: checks run without a jail" in check.stderr


def test_mode_bwrap_without_bwrap_exits_2_and_names_the_package(
    env, h, tmp_path, workspace
) -> None:
    _broken_bwrap(env, tmp_path)
    checks = h.check_table("ok", PASS) + '\n[sandbox]\nmode = "bwrap"\n'
    cfg = h.operator_config(tmp_path / "op.toml", workspace, checks=checks)
    result = env.flow("check", "--config", str(cfg), "--trusted")
    assert result.code == 2
    report = result.json()
    assert [e["code"] for e in report["errors"]] == ["sandbox_unavailable"]
    assert "'bubblewrap'" in report["errors"][0]["message"]
    assert "bubblewrap" in result.stderr
    run = env.flow("run", "--config", str(cfg), "--trusted", "anything")
    assert run.code == 2
    assert [e["code"] for e in run.json()["errors"]] == ["sandbox_unavailable"]
