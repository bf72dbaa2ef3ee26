"""No temporary folder outlives a check, whatever way it ends (``verify/_scratch.py``).

Each test points the system temporary folder at a private one and counts the ``flow-*``
folders in it before and after: a timeout, a whole-check limit, an interrupt (Ctrl-C), an
error while the private copy is made, and a Flow killed with SIGKILL in the middle of a check
(the next Flow removes what it left). Jailed and unjailed (``mode = "off"`` with the evidence
run's tree, which makes a private copy there too).

A jailed check's copy, tmpfs and cgroups are removed on a thread of Flow after its result is
returned (``verify/_reaper.py``): the counts are taken once that work is done, and the last
tests show it is always done before the next check of the workspace and before Flow exits.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from flow_core import FlowConfig
from flow_core.run._evidence import prepare
from flow_core.verify import _reaper, _scratch, _tree
from flow_core.verify._checks import CheckScope, CheckWatch, run_check
from flow_core.verify._tree import TreeSpec, plan_workspace

PY = sys.executable


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    folder.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "mod.py").write_text("X = 1\n")
    return path


def _left(base: Path) -> list[str]:
    _reaper.settle()  # what the jailed checks left for after their result
    return sorted(p.name for p in base.iterdir() if p.name.startswith("flow-"))


def _config(ws: Path, code: str, timeout: int = 20_000, **sandbox: Any) -> FlowConfig:
    return FlowConfig.model_validate(
        {
            "workspace_dir": str(ws),
            "checks": {"t": {"cmd": [PY, "-S", "-c", code], "timeout": timeout}},
            "sandbox": sandbox,
        }
    )


def _run(cfg: FlowConfig, watch: CheckWatch | None = None) -> Any:
    spec = TreeSpec(plan_workspace(cfg.workspace_dir), {"new.py": b"Y = 2\n"})
    return run_check(
        "t",
        cfg.checks["t"],
        cwd=cfg.workspace_dir,
        sandbox=cfg.sandbox,
        scope=CheckScope(protected=cfg.protected, tree=spec),
        watch=watch,
    )


MODES = ["auto", "off"]


@pytest.mark.parametrize("mode", MODES)
def test_a_timeout_leaves_no_folder(base: Path, ws: Path, mode: str) -> None:
    result = _run(_config(ws, "import time; time.sleep(60)", timeout=1_500, mode=mode))
    assert result.status == "timeout", result.output_tail
    assert _left(base) == []
    assert _scratch.live_scratch() == []


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_check_that_locks_its_folders_leaves_none(base: Path, ws: Path, mode: str) -> None:
    code = "import os; os.makedirs('deep/er'); open('deep/er/f', 'w').close(); "
    code += "os.chmod('deep/er', 0); os.chmod('deep', 0o500); raise SystemExit(3)"
    result = _run(_config(ws, code, mode=mode))
    assert result.status == "failed", result.output_tail
    assert _left(base) == []


@pytest.mark.parametrize("mode", MODES)
def test_an_interrupt_leaves_no_folder(base: Path, ws: Path, mode: str) -> None:
    calls = 0

    def ctrl_c() -> bool:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt
        return False

    with pytest.raises(KeyboardInterrupt):
        _run(_config(ws, "import time; time.sleep(60)", mode=mode), CheckWatch(should_stop=ctrl_c))
    assert _left(base) == []


@pytest.mark.parametrize("mode", MODES)
def test_an_error_while_the_copy_is_made_leaves_no_folder(
    base: Path, ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_tree, "_copy_file", full)
    result = _run(_config(ws, "pass", mode=mode))
    assert result.status == "error", result
    assert _left(base) == []


def test_a_whole_check_limit_leaves_no_folder(base: Path, ws: Path) -> None:
    code = "f = open('big', 'wb')\nfor _ in range(40): f.write(b'x' * 1048576); f.flush()"
    result = _run(_config(ws, code, disk_mib=16, file_size_mib=256))
    assert result.status in ("limit", "failed", "passed"), result.output_tail
    assert _left(base) == []


def test_the_results_folder_goes_with_the_check(base: Path, ws: Path) -> None:
    cfg = FlowConfig.model_validate(
        {
            "workspace_dir": str(ws),
            "checks": {
                "t": {"cmd": [PY, "-m", "pytest", "--junitxml={junit_xml}"], "results": "junit"}
            },
        }
    )
    prepared = prepare(cfg.checks["t"], cfg.workspace_dir)
    assert prepared.folder is not None
    assert _left(base) == [Path(prepared.folder).name]
    Path(prepared.folder, "junit.xml").write_text("<testsuite/>")
    os.chmod(prepared.folder, 0o500)
    prepared.discard()
    prepared.discard()
    assert _left(base) == []


_KILLED = """
import os, sys, time
from flow_core import FlowConfig
from flow_core.verify._checks import CheckScope, CheckWatch, run_check
from flow_core.verify._tree import TreeSpec, plan_workspace
ws, mode, marker = sys.argv[1:4]
cfg = FlowConfig.model_validate({
    "workspace_dir": ws, "sandbox": {"mode": mode},
    "checks": {"t": {"cmd": [sys.executable, "-S", "-c", "import time; time.sleep(60)"],
                     "timeout": 60000}},
})
def started(pgid):
    with open(marker, "w") as fh:
        fh.write(str(pgid))
run_check("t", cfg.checks["t"], cwd=ws, sandbox=cfg.sandbox,
          scope=CheckScope(tree=TreeSpec(plan_workspace(ws), {})),
          watch=CheckWatch(on_start=started))
"""


@pytest.mark.parametrize("mode", MODES)
def test_the_next_flow_removes_what_a_killed_flow_left(
    base: Path, ws: Path, tmp_path: Path, mode: str
) -> None:
    marker = tmp_path / "pgid"
    env = {**os.environ, "TMPDIR": str(base)}
    flow = subprocess.Popen(
        [PY, "-c", textwrap.dedent(_KILLED), str(ws), mode, str(marker)],
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() or not marker.read_text():
            assert flow.poll() is None, "the Flow stand-in ended early"
            assert time.monotonic() < deadline, "the check never started"
            time.sleep(0.05)
        assert _left(base) != []
    finally:
        flow.kill()
        flow.wait()
        if marker.exists() and marker.read_text():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(marker.read_text()), signal.SIGKILL)
    # The next Flow, making a folder of each kind there, removes the gone Flow's ones.
    made = [_scratch.make_scratch(p) for p in ("flow-tree-", "flow-check-", "flow-results-")]
    from flow_core.verify._disk import make_disk

    disk, _ = make_disk(str(ws))
    if disk is not None:
        disk.close()
    for path in made:
        _scratch.remove_scratch(path)
    assert _left(base) == []


_EXITS = """
import os, sys
from flow_core import FlowConfig
from flow_core.verify._checks import CheckScope, run_check
from flow_core.verify._tree import TreeSpec, plan_workspace
ws = sys.argv[1]
cfg = FlowConfig.model_validate({
    "workspace_dir": ws,
    "checks": {"t": {"cmd": [sys.executable, "-S", "-c", "open('new', 'w').write('x')"]}},
})
r = run_check("t", cfg.checks["t"], cwd=ws, sandbox=cfg.sandbox,
              scope=CheckScope(tree=TreeSpec(plan_workspace(ws), {})))
print(r.status, r.sandbox)
"""


def _mounts_under(base: Path) -> list[str]:
    lines = Path("/proc/self/mounts").read_text().splitlines()
    return [ln.split()[1] for ln in lines if ln.split()[1].startswith(str(base) + "/")]


def test_flow_exiting_right_after_a_check_leaves_nothing(base: Path, ws: Path) -> None:
    """The check's cleanup runs on a thread after its result; the process's exit waits for it."""
    env = {**os.environ, "TMPDIR": str(base)}
    said = subprocess.check_output(
        [PY, "-c", textwrap.dedent(_EXITS), str(ws)], env=env, text=True, timeout=120
    )
    if "bwrap" not in said:
        pytest.skip(f"no jail here: {said.strip()}")
    assert said.split()[0] == "passed", said
    assert sorted(p.name for p in base.iterdir() if p.name.startswith("flow-")) == []
    assert _mounts_under(base) == []


def test_the_next_check_of_a_workspace_starts_after_the_last_one_is_cleaned_up(
    base: Path, ws: Path
) -> None:
    from flow_core.verify._sandbox import prepare_jail

    cfg = _config(ws, "pass")
    first = _run(cfg)
    if first.sandbox != "bwrap":
        pytest.skip(f"no jail here: {first.sandbox_reason}")
    assert first.status == "passed", first.output_tail
    # No settle here: preparing the next check of this workspace waits for the last one's.
    check = cfg.checks["t"]
    assert check.executable is not None
    jail = prepare_jail(check.executable, check.cmd, cfg.sandbox, workspace=ws)
    try:
        left = sorted(p.name for p in base.iterdir() if p.name.startswith("flow-"))
        assert len(left) == 1, left  # the new check's own tmpfs (or copy) only
        assert jail.disk is None or left[0] in str(getattr(jail.disk, "root", left[0]))
    finally:
        jail.close()
    assert _left(base) == []
