"""The check jail (``[sandbox]``): config, the bubblewrap command line, and real jailed checks.

Jailed cases need a usable bubblewrap: they fail when ``CI`` is set and it is missing, and
skip only on a developer machine without it. The trust gate with real attacks through
``flow run`` is flow-cli's ``test_trust_gate.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from flow_core import ConfigError, FlowConfig, Runtime
from flow_core.config._sandbox import SandboxConfig
from flow_core.models.scripted import ScriptedBackend
from flow_core.verify import _probe, _probe_cache
from flow_core.verify._checks import CheckScope, run_check
from flow_core.verify._sandbox import prepare_jail, probe_bwrap, sandbox_status

PY = sys.executable


def _config(ws: Path, code: str, **sandbox: Any) -> FlowConfig:
    data: dict[str, Any] = {
        "workspace_dir": str(ws),
        "checks": {"t": {"cmd": [PY, "-S", "-c", code], "timeout": 20_000}},
    }
    if sandbox:
        data["sandbox"] = sandbox
    return FlowConfig.model_validate(data)


def _run(cfg: FlowConfig, name: str = "t") -> Any:
    return run_check(
        name,
        cfg.checks[name],
        cwd=cfg.workspace_dir,
        sandbox=cfg.sandbox,
        scope=CheckScope(protected=cfg.protected),
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


# -- config ------------------------------------------------------------------------------------


def test_defaults_jail_without_network() -> None:
    cfg = SandboxConfig()
    assert (cfg.mode, cfg.network) == ("auto", False)
    assert cfg.env == ("PATH", "LANG", "LC_*", "TERM", "TZ")
    assert cfg.passes("LC_ALL")
    assert cfg.passes("PATH")
    assert not cfg.passes("OPENAI_API_KEY")
    assert not cfg.passes("LCX")


def test_sandbox_table_errors_name_the_key(tmp_path: Path, ws: Path) -> None:
    from flow_core.config import load_config

    op = tmp_path / "op.toml"
    op.write_text(f'workspace_dir = "{ws}"\n[sandbox]\nmode = "docker"\n')
    with pytest.raises(ConfigError) as err:
        load_config(config_file=op, environ={"HOME": str(tmp_path)})
    assert "sandbox.mode" in str(err.value)
    assert '"bwrap"' in str(err.value)
    op.write_text(f'workspace_dir = "{ws}"\n[sandbox]\nenv = ["HOME"]\n')
    with pytest.raises(ConfigError, match=r"sandbox\.env"):
        load_config(config_file=op, environ={"HOME": str(tmp_path)})
    op.write_text(f'workspace_dir = "{ws}"\n[sandbox]\nfile_sizes = 3\n')
    with pytest.raises(ConfigError, match=r"sandbox\.file_sizes: unknown key"):
        load_config(config_file=op, environ={"HOME": str(tmp_path)})
    op.write_text(f'workspace_dir = "{ws}"\n[sandbox]\nnetwork = true\nenv = ["PATH", "CI"]\n')
    cfg = load_config(config_file=op, environ={"HOME": str(tmp_path)}).config
    assert cfg.sandbox.network is True
    assert cfg.sandbox.env == ("PATH", "CI")


# -- the command line --------------------------------------------------------------------------


def test_mount_order_keeps_a_workspace_under_tmp_visible(jail_ok: None, ws: Path) -> None:
    (ws / ".git").mkdir()
    (ws / ".mcp.json").write_text("{}")
    jail = prepare_jail(
        PY,
        [PY, "-V"],
        SandboxConfig(),
        workspace=ws,
        scope=CheckScope(protected=[".mcp.json"]),
        environ={},
    )
    try:
        argv = jail.argv
        real = os.path.realpath(ws)
        # /tmp is a bubblewrap tmpfs, or a folder on the check's own tmpfs (verify/_disk.py)
        tmp = next(
            i
            for i, a in enumerate(argv)
            if a == "/tmp" and (argv[i - 1] == "--tmpfs" or argv[i - 2] == "--bind")
        )
        # the private copy, in its place: bound, or (Flow not root) filled by cp into a sized
        # tmpfs there or into a folder of the check's one tmpfs (verify/_disk.disk_home)
        bind = next(
            i
            for i, a in enumerate(argv)
            if a == real and (argv[i - 2] == "--bind" or argv[i - 1] in ("--tmpfs", "--dir"))
        )
        assert not argv[bind - 1].startswith(real + "/")
        assert tmp < bind  # a later mount on /tmp would hide the workspace
        git = argv.index(os.path.join(real, ".git"))
        assert argv[git - 1] == "--ro-bind-try"
        assert git > bind
        assert os.path.join(real, ".mcp.json") in argv[bind:]
        for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"):
            assert flag in argv
        assert argv[-2:] == [PY, "-V"]
    finally:
        jail.close()


def test_network_true_keeps_the_host_network(jail_ok: None, ws: Path) -> None:
    jail = prepare_jail(PY, [PY], SandboxConfig(network=True), workspace=ws, environ={})
    try:
        assert "--unshare-net" not in jail.argv
    finally:
        jail.close()


# -- real jailed checks ------------------------------------------------------------------------


def test_clean_environment_and_empty_private_home(
    jail_ok: None, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-" + secrets.token_hex(8)
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("LC_TIME", "C")
    code = (
        "import os; print(sorted(os.environ)); h = os.environ['HOME']; "
        "print('HOME', h, os.listdir(h) if os.path.isdir(h) else 'absent'); "
        "print(os.environ.get('OPENAI_API_KEY'))"
    )
    result = _run(_config(ws, code))
    assert result.status == "passed", result.output_tail
    assert result.sandbox == "bwrap"
    assert secret not in result.output_tail
    assert "'LC_TIME'" in result.output_tail
    assert "'OPENAI_API_KEY'" not in result.output_tail
    assert "HOME /tmp/.flow-home []" in result.output_tail


def test_host_homes_and_tmp_are_hidden(
    jail_ok: None, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "decoy-home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("decoy")
    monkeypatch.setenv("HOME", str(home))
    outside = tmp_path / "outside.txt"
    outside.write_text("host tmp")
    code = (
        f"import os\nfor p in ({str(home / '.aws' / 'credentials')!r}, {str(outside)!r}):\n"
        "    print(p, os.path.exists(p))\nopen('inside.txt', 'w').write('ok')"
    )
    result = _run(_config(ws, code))
    assert result.status == "passed", result.output_tail  # its copy (under /tmp) is writable
    assert "credentials False" in result.output_tail
    assert "outside.txt False" in result.output_tail
    assert not (ws / "inside.txt").exists()  # nothing it writes reaches the user's tree


def test_venv_outside_the_workspace_under_tmp(jail_ok: None, ws: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([PY, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    cfg = FlowConfig.model_validate(
        {
            "workspace_dir": str(ws),
            "checks": {"t": {"cmd": [str(python), "-c", "import sys; print(sys.prefix)"]}},
        }
    )
    result = _run(cfg)
    assert result.status == "passed", result.output_tail
    assert result.output_tail.strip() == str(venv)


def test_venv_inside_the_workspace_is_read_only(jail_ok: None, ws: Path) -> None:
    venv = ws / ".venv"
    subprocess.run([PY, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    code = "open('.venv/bin/activate', 'a').write('echo owned')"
    cfg = FlowConfig.model_validate(
        {"workspace_dir": str(ws), "checks": {"t": {"cmd": [".venv/bin/python", "-c", code]}}}
    )
    assert ".venv" in cfg.protected
    before = (venv / "bin" / "activate").read_text()
    result = _run(cfg)
    assert result.status == "failed"
    # Read-only for Flow's own user; as root the check's user cannot write root's files.
    assert any(w in result.output_tail for w in ("Read-only file system", "Permission denied"))
    assert (venv / "bin" / "activate").read_text() == before


def test_protected_launcher_file_is_read_only(jail_ok: None, ws: Path) -> None:
    (ws / ".mcp.json").write_text("{}\n")
    result = _run(_config(ws, "open('.mcp.json', 'w').write('owned')"))
    assert result.status == "failed"
    assert "Read-only file system" in result.output_tail
    assert (ws / ".mcp.json").read_text() == "{}\n"


def test_file_size_limit(jail_ok: None, ws: Path) -> None:
    code = (
        "import os\ntry:\n    open('big', 'wb').write(b'x' * (3 * 1024 * 1024))\n"
        "except OSError as err:\n    print('refused', err.errno)"
    )
    result = _run(_config(ws, code, file_size_mib=1))
    assert "refused 27" in result.output_tail  # EFBIG
    assert not (ws / "big").exists()


def test_process_count_holds_even_for_root(jail_ok: None, ws: Path) -> None:
    code = (
        "import os\nr, w = os.pipe()\nn = 0\nfor _ in range(64):\n    try:\n"
        "        pid = os.fork()\n    except OSError:\n        break\n    if pid == 0:\n"
        "        os.close(w); os.read(r, 1); os._exit(0)\n    n += 1\nprint('forked', n)"
    )
    result = _run(_config(ws, code, processes=16))
    assert result.sandbox == "bwrap"
    if result.sandbox_reason and "process count not enforced" in result.sandbox_reason:
        pytest.skip(result.sandbox_reason)
    forked = int(result.output_tail.split("forked", 1)[1].split()[0])
    assert forked < 16


def test_the_check_is_born_in_its_cgroups_and_flow_stays_in_its_own(
    jail_ok: None, ws: Path
) -> None:
    from flow_core.verify._cgroup import cgroup_parents

    parents = cgroup_parents()[0]
    if "pids" not in parents:
        pytest.skip("no writable cgroup has the pids controller here")
    code = "print(open('/proc/self/cgroup').read())"
    own = Path("/proc/thread-self/cgroup").read_text()
    result = _run(_config(ws, code, processes=16))
    assert result.status == "passed", result.output_tail
    pids = [ln for ln in result.output_tail.splitlines() if ":pids:" in ln or ln.startswith("0::")]
    assert any(f"/flow-check-{os.getpid()}-" in ln for ln in pids), result.output_tail
    # The thread that started it is back where it was, and the cgroup holds nothing (it is
    # kept for the next check of this process, or gone: being removed after the result,
    # verify/_reaper.py, it may vanish while it is read).
    assert Path("/proc/thread-self/cgroup").read_text() == own
    parent = parents["pids"][0]
    for name in os.listdir(parent):
        if name.startswith(f"flow-check-{os.getpid()}-"):
            with contextlib.suppress(OSError):  # gone meanwhile
                held = Path(parent, name, "cgroup.procs").read_text().strip()
                assert held == "", (name, held)


def test_a_cgroup_set_kept_for_the_next_check_counts_only_that_check(
    jail_ok: None, ws: Path
) -> None:
    # The first check is refused forks, then lets its children go and reaps them.
    forks = (
        "import os\nprint(open('/proc/self/cgroup').read())\nr, w = os.pipe()\nn = 0\n"
        "for _ in range(64):\n    try:\n        pid = os.fork()\n    except OSError:\n"
        "        break\n    if pid == 0:\n        os.close(w); os.read(r, 1); os._exit(0)\n"
        "    n += 1\nos.close(w)\nfor _ in range(n):\n    os.wait()\n"
    )
    first = _run(_config(ws, forks, processes=16))
    if first.sandbox_reason and "process count not enforced" in first.sandbox_reason:
        pytest.skip(first.sandbox_reason)
    assert first.status == "limit", first.output_tail
    second = _run(_config(ws, "print(open('/proc/self/cgroup').read())", processes=16))
    assert second.status == "passed", (second.status, second.output_tail)

    # Whether the set was handed back depends on the kernel: a process that left the check's
    # pid namespace can stay counted in pids.current for seconds, and such a set is never
    # taken (test_what_a_check_leaves_counted_never_limits_the_next_check). Either way the
    # second check counts only its own processes.


def test_what_a_check_leaves_counted_never_limits_the_next_check(jail_ok: None, ws: Path) -> None:
    """A process that ran in a check's pid namespace can stay counted in the check cgroup's
    ``pids.current`` for seconds after it left ``cgroup.procs`` (one per check here). A set
    handed on with that count would let each next check start fewer processes, until
    bubblewrap itself is refused (``limit``): eight quick checks that each hold 12 children
    at once under a limit of 16 all pass."""
    twelve = (
        "import os\nr, w = os.pipe()\nfor _ in range(12):\n    if os.fork() == 0:\n"
        "        os.close(w); os.read(r, 1); os._exit(0)\nos.close(w)\n"
        "for _ in range(12):\n    os.wait()\nprint('ok')\n"
    )
    for _ in range(8):
        result = _run(_config(ws, twelve, processes=16))
        if result.sandbox_reason and "process count not enforced" in result.sandbox_reason:
            pytest.skip(result.sandbox_reason)
        assert (result.status, result.output_tail.strip()) == ("passed", "ok")


def test_no_network_by_default(jail_ok: None, ws: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    code = (
        "import socket\ntry:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')\n"
        "except OSError as err:\n    print('refused', err)"
    )
    try:
        jailed = _run(_config(ws, code))
        open_net = _run(_config(ws, code, network=True))
    finally:
        server.close()
    assert "refused" in jailed.output_tail
    assert "connected" in open_net.output_tail


def _pids_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry}/cmdline", "rb") as fh:
                if token.encode() in fh.read():
                    found.append(int(entry))
    return found


def test_timeout_kills_the_whole_sandbox(jail_ok: None, ws: Path) -> None:
    token = "flow-sbx-" + secrets.token_hex(6)
    code = (
        "import subprocess, sys, time\n"
        f"cmd = [sys.executable, '-S', '-c', 'import time; time.sleep(60)', {token!r}]\n"
        "for _ in range(3):\n"
        "    subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL)\n"
        "print('started', flush=True)\ntime.sleep(60)"
    )
    cfg = FlowConfig.model_validate(
        {
            "workspace_dir": str(ws),
            "checks": {"t": {"cmd": [PY, "-S", "-c", code], "timeout": 3000}},
        }
    )
    try:
        result = _run(cfg)
        assert result.status == "timeout"
        assert "started" in result.output_tail
        assert _pids_with(token) == []
    finally:
        for pid in _pids_with(token):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


# -- without a usable bubblewrap ---------------------------------------------------------------


@pytest.fixture
def broken_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """PATH whose first ``bwrap`` cannot create a jail (as in a locked-down container)."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    fake = bin_dir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    monkeypatch.setenv("PATH", path)
    return path


def test_auto_without_bwrap_runs_unjailed_but_clean_and_says_why(
    broken_bwrap: str, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "decoy-secret")
    result = _run(_config(ws, "import os; print(os.environ.get('AWS_SECRET_ACCESS_KEY'))"))
    assert result.status == "passed"
    assert result.sandbox == "none"
    assert result.sandbox_reason is not None
    assert "No permissions to create new namespace" in result.sandbox_reason
    assert "decoy-secret" not in result.output_tail
    status = sandbox_status(SandboxConfig())
    assert (status.usable, status.runs_as) == (False, "none")
    assert status.reason is not None
    assert status.reason.startswith("warning:")


def test_mode_bwrap_without_bwrap_refuses(broken_bwrap: str, ws: Path) -> None:
    cfg = _config(ws, "print('ran')", mode="bwrap")
    result = _run(cfg)
    assert result.status == "refused"
    assert result.error is not None
    assert result.error.code == "sandbox_unavailable"
    assert "bubblewrap" in result.error.message
    with pytest.raises(ConfigError) as err:
        Runtime(cfg, trusted=True, backend=ScriptedBackend([])).check()
    assert err.value.code == "sandbox_unavailable"


def test_mode_off_inherits_everything(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "decoy-secret")
    result = _run(_config(ws, "import os; print(os.environ['AWS_SECRET_ACCESS_KEY'])", mode="off"))
    assert (result.sandbox, result.sandbox_reason) == ("none", 'sandbox.mode = "off"')
    assert "decoy-secret" in result.output_tail


def test_status_report_says_whether_the_jail_is_usable(ws: Path) -> None:
    report = Runtime(_config(ws, "pass")).status()
    assert report.sandbox is not None
    assert report.sandbox.mode == "auto"
    assert report.sandbox.usable is probe_bwrap().usable
    assert report.sandbox.runs_as == ("bwrap" if probe_bwrap().usable else "none")


def test_the_status_report_loads_nothing_of_the_jail_or_the_seams(ws: Path) -> None:
    """``flow status`` reports the probe (``verify/_probe.py``) but builds no jail: the
    modules that make the private tree, the mounts and the jail stay unloaded, and so do the
    seams' classes (``_protocols.py``; the role names come from ``_roles.py``), and the run
    store's location is checked (``store/_where.py``) without loading the store itself, and
    a successful status reads no error table (``_catalogue.py``, ``_codes.py``)."""
    code = (
        "import sys\n"
        "from flow_core import config_status, exit_code_for, load_config, run_store_root\n"
        f"loaded = load_config(config_file=None, workspace={str(ws)!r})\n"
        "run_store_root(loaded.config)\n"
        "report = config_status(loaded.config, trusted=False, sources=loaded.sources)\n"
        "assert report.sandbox is not None and report.sandbox.mode == 'auto'\n"
        "assert report.warnings and exit_code_for(report) == 0\n"
        "jail = ('flow_core.verify._sandbox', 'flow_core.verify._jail', 'flow_core.verify._tree',\n"
        "        'flow_core.verify._disk', 'flow_core.verify._scratch', 'flow_core._protocols',\n"
        "        'flow_core.verify._jail_argv', 'flow_core.verify._jail_root', 'ctypes.util',\n"
        "        'flow_core.store._store', 'flow_core.store._record', 'flow_core._catalogue',\n"
        "        'flow_core._codes')\n"
        "loaded_jail = [m for m in jail if m in sys.modules]\n"
        "assert loaded_jail == [], loaded_jail\n"
    )
    env = {**os.environ, "HOME": str(ws.parent), "XDG_CONFIG_HOME": str(ws.parent / "xdg")}
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr


def _fresh_probes(monkeypatch: pytest.MonkeyPatch, cache: Path) -> dict[Any, Any]:
    """No probe made in this process, and the status cache under ``cache``."""
    probes: dict[Any, Any] = {}
    monkeypatch.setattr(_probe, "_PROBES", probes)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return probes


def test_status_remembers_a_usable_probe_only_while_nothing_it_rests_on_changed(
    jail_ok: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    probes = _fresh_probes(monkeypatch, cache)
    first = sandbox_status(SandboxConfig(), remembered=True)
    remembered = cache / "flow" / "bwrap-probe.json"
    assert first.usable
    assert len(probes) == 1
    assert remembered.is_file()
    assert oct(remembered.stat().st_mode & 0o777) == "0o600"
    probes.clear()
    assert sandbox_status(SandboxConfig(), remembered=True) == first
    assert probes == {}, "a remembered probe stands in for starting bubblewrap"
    entry = json.loads(remembered.read_text())
    changes = {
        "another bwrap file": lambda e: e["key"]["bwrap_times"].__setitem__(1, 0),
        "another boot": lambda e: e["key"]["sysctl"].__setitem__(
            "/proc/sys/kernel/random/boot_id", "x"
        ),
        "another user namespace": lambda e: e["key"]["ns"].__setitem__("user", "user:[1]"),
        "too old": lambda e: e.__setitem__("at", e["at"] - _probe_cache.MAX_AGE_S - 1),
        "from the future": lambda e: e.__setitem__("at", e["at"] + 3600),
        "not usable": lambda e: e.__setitem__("usable", False),
    }
    for why, change in changes.items():
        changed = json.loads(json.dumps(entry))
        change(changed)
        remembered.write_text(json.dumps(changed))
        probes.clear()
        assert sandbox_status(SandboxConfig(), remembered=True) == first, why
        assert len(probes) == 1, f"{why}: bubblewrap was not started again"
    for garbage in ("", "{", "[]", '{"key": 1}', "\udcff"):
        remembered.write_text(garbage, errors="surrogateescape")
        probes.clear()
        assert sandbox_status(SandboxConfig(), remembered=True) == first
        assert len(probes) == 1


def test_a_failed_probe_is_never_remembered(
    broken_bwrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    probes = _fresh_probes(monkeypatch, cache)
    for _ in range(2):
        status = sandbox_status(SandboxConfig(), broken_bwrap, remembered=True)
        assert (status.usable, status.runs_as) == (False, "none")
        assert status.reason is not None
        assert "No permissions to create new namespace" in status.reason
        assert not (cache / "flow" / "bwrap-probe.json").exists()
        assert len(probes) == 1
        probes.clear()


def test_an_unwritable_cache_never_fails_the_status(
    jail_ok: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder would be")
    _fresh_probes(monkeypatch, blocker)
    assert sandbox_status(SandboxConfig(), remembered=True).usable
    assert list(tmp_path.iterdir()) == [blocker]


def test_only_the_status_command_uses_or_leaves_a_remembered_probe(
    jail_ok: None, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the ``flow status`` command takes a remembered probe: a check's report and
    ``Runtime.status()`` probe in their own process and write nothing under ``HOME`` (the
    trust gate compares ``HOME`` byte for byte around a jailed run, which shows its hints)."""
    cache = tmp_path / "cache"
    probes = _fresh_probes(monkeypatch, cache)
    runtime = Runtime(_config(ws, "pass"), trusted=True)
    for report in (runtime.check(), runtime.status()):  # status(): MCP, TUI, run hints
        assert report.sandbox is not None
        assert report.sandbox.usable
        assert not cache.exists()
        assert len(probes) == 1
    probes.clear()
    assert sandbox_status(SandboxConfig(), remembered=True).usable  # status: remembered now
    assert (cache / "flow" / "bwrap-probe.json").is_file()
    probes.clear()
    assert sandbox_status(SandboxConfig()).usable
    assert len(probes) == 1, "a check's or a run's report probed again"


def test_concurrent_checks_each_get_their_own_jail(jail_ok: None, ws: Path) -> None:
    cfg = _config(ws, "import os; print(os.getpid())")
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(_run(cfg))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [r.status for r in results] == ["passed"] * 3
    assert all(r.output_tail.strip() == "2" for r in results)  # pid 2 in each new namespace


def test_a_jail_that_cannot_be_limited_never_runs_the_check(
    jail_ok: None, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import resource

    def refuse(*args: Any) -> Any:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(resource, "prlimit", refuse)
    result = _run(_config(ws, "open('ran', 'w').write('1')"))
    assert not (ws / "ran").exists()
    assert result.status != "passed"
    assert result.sandbox_reason is not None
    assert "limits not applied" in result.sandbox_reason


_WHO = (
    "import pwd, os\nme = pwd.getpwuid(os.getuid())\nprint('me', me.pw_name, me.pw_dir)\n"
    "print('users', len(pwd.getpwall()))\nprint('resolv', os.path.exists('/etc/resolv.conf'))"
)


def test_the_jail_root_is_minimal_and_names_only_its_users(jail_ok: None, ws: Path) -> None:
    jail = prepare_jail(PY, [PY, "-V"], SandboxConfig(), workspace=ws, environ={})
    try:
        pairs = list(zip(jail.argv, jail.argv[1:], jail.argv[2:], strict=False))
        assert ("--ro-bind", "/", "/") not in pairs  # no host root under the jail
        assert ("--ro-bind", "/etc", "/etc") not in pairs
        bound = {b for a, _, b in pairs if a in ("--ro-bind", "--ro-bind-try", "--bind")}
        assert "/etc/shadow" not in bound
        # The check's argv names this interpreter, so its own prefix is bound wherever it
        # lives (a normal user's venv is often under /home); nothing else from there.
        own = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
        others = {b for b in bound if not any(b == o or b.startswith(o + "/") for o in own)}
        assert not any(b.startswith(("/home", "/srv", "/var", "/run")) for b in others)
    finally:
        jail.close()
    result = _run(_config(ws, _WHO))
    assert result.status == "passed", result.output_tail
    assert "me " in result.output_tail
    assert "/tmp/.flow-home" in result.output_tail
    users = int(result.output_tail.split("users ", 1)[1].split()[0])
    assert 1 <= users <= 3  # root, the check's user, nobody: no host account
    assert "resolv False" in result.output_tail


_CACHE = (
    "import os\nos.makedirs('.mypy_cache', exist_ok=True)\n"
    "print('found', sorted(os.listdir('.mypy_cache')))\n"
    "open('.mypy_cache/seen', 'a').write('x')"
)


def test_named_caches_are_kept_across_checks_outside_the_users_tree(
    jail_ok: None, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    first = _run(_config(ws, _CACHE))
    second = _run(_config(ws, _CACHE))
    assert "found []" in first.output_tail
    assert "found []" in second.output_tail  # not configured: every check starts empty
    kept = [_run(_config(ws, _CACHE, caches=[".mypy_cache"])) for _ in range(2)]
    assert "found []" in kept[0].output_tail, kept[0].output_tail
    assert "found ['seen']" in kept[1].output_tail, kept[1].output_tail
    assert "sandbox.caches" in (kept[1].sandbox_reason or "")
    assert ".mypy_cache" in (kept[1].sandbox_reason or "")
    assert not (ws / ".mypy_cache").exists()  # never in the user's tree
    assert list((tmp_path / "xdg-cache" / "flow" / "check-caches").rglob("seen"))


@pytest.mark.parametrize("name", ["../up", "/abs", ".git", ".git/hooks", ".", ""])
def test_a_cache_must_be_a_folder_of_the_workspace(name: str) -> None:
    with pytest.raises(ValueError, match="caches"):
        SandboxConfig.model_validate({"caches": [name]})
