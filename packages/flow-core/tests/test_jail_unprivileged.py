"""The jail when Flow itself runs as an unprivileged user (``docs/architecture.md``, "Sandbox").

Run from root only: the test drops to ``nobody`` with ``setpriv`` (no user is created) and
runs real checks there through ``run_check``, jailed and with ``mode = "off"`` as the
negative control. It skips when not root, when ``setpriv`` is missing, when ``nobody`` cannot
import Flow (a virtualenv under a private home), or when bubblewrap cannot make a jail as
``nobody`` (unprivileged user namespaces disabled).
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import site
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="dropping to nobody needs root")

_RUNNER = r"""
import json, site, sys
for folder in sys.argv[3:]:
    site.addsitedir(folder)
from flow_core import FlowConfig
from flow_core.verify._checks import run_check
from flow_core.verify._sandbox import probe_bwrap
ws, code = sys.argv[1], sys.argv[2]
import os
extra = json.loads(os.environ.get("FLOW_TEST_SANDBOX", "{}"))
probe = probe_bwrap()
out = {"usable": probe.usable, "reason": probe.reason}
for mode in ("off", "auto"):
    cfg = FlowConfig.model_validate({
        "workspace_dir": ws,
        "checks": {"t": {"cmd": [sys.executable, "-S", "-c", code], "timeout": 30000}},
        "sandbox": {"mode": mode, **extra},
    })
    r = run_check("t", cfg.checks["t"], cwd=ws, sandbox=cfg.sandbox)
    out[mode] = {"status": r.status, "sandbox": r.sandbox, "tail": r.output_tail,
                 "why": r.sandbox_reason, "error": r.error.message if r.error else None}
out["ws"] = sorted(os.listdir(ws))
print(json.dumps(out))
"""

_PROBE = r"""
import re, subprocess
text = open('/proc/self/status').read()
for key in ('CapEff', 'CapBnd', 'NoNewPrivs'):
    print(key, int(re.search(key + r':\s*(\w+)', text).group(1), 16))
rc = subprocess.run(['unshare', '-Ur', 'true'], capture_output=True).returncode
print('unshare', rc)
"""


def _python() -> str:
    """This interpreter, or the system one of the same version when this one lies where
    ``nobody`` cannot reach (a home directory); the test's site folders are added to it."""
    system = "/usr/bin/python3"
    here = Path(sys.executable).resolve()
    if here.is_relative_to("/root") and os.path.exists(system):
        probe = subprocess.run(
            [system, "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            timeout=30,
            check=False,
        )
        if probe.stdout.decode().strip() == str(sys.version_info[:2]):
            return system
    return sys.executable


def _as_nobody(code: str, base: str | None = None, **sandbox: object) -> dict[str, object]:
    """Run ``code`` as a check of a Flow run by ``nobody``, with ``mode`` off then auto, in a
    workspace ``ws`` of a fresh folder in ``base`` (default: the system temporary folder)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or shutil.which("unshare") is None:
        pytest.skip("util-linux's setpriv or unshare is not installed")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("there is no nobody user")
    home = Path(tempfile.mkdtemp(prefix="flow-nobody-", dir=base))  # tmp_path is root's 0700
    try:
        ws, tmp = home / "ws", home / "tmp"
        for path in (home, ws, tmp):
            path.mkdir(exist_ok=True)
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
        base = [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
        env["TMPDIR"] = str(tmp)  # Flow's temporary folders, counted after the checks
        env["FLOW_TEST_SANDBOX"] = json.dumps(sandbox)
        done = subprocess.run(
            [*base, _python(), "-c", _RUNNER, str(ws), code, *site.getsitepackages()],
            capture_output=True,
            env=env,
            cwd=home,
            timeout=120,
            check=False,
        )
        # Counted once that Flow has exited: it cleans up after a check's result, before exit
        left = sorted(p.name for p in tmp.iterdir() if p.name.startswith("flow-"))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if done.returncode != 0:
        pytest.skip(f"nobody cannot run Flow here: {done.stderr.decode()[-300:]}")
    result: dict[str, object] = {**json.loads(done.stdout), "left": left}
    if not result["usable"]:
        pytest.skip(f"bubblewrap cannot make a jail as nobody: {result['reason']}")
    return result


def test_an_unprivileged_flow_jails_without_capabilities_or_namespaces() -> None:
    result = _as_nobody(_PROBE)
    off, jailed = result["off"], result["auto"]
    assert isinstance(off, dict)
    assert isinstance(jailed, dict)
    assert jailed["sandbox"] == "bwrap"
    tail = str(jailed["tail"])
    assert "CapEff 0\n" in tail
    assert "CapBnd 0\n" in tail
    assert "NoNewPrivs 1" in tail
    if "unshare 0" in str(off["tail"]):  # the control: nobody may make user namespaces here
        assert "unshare 0" not in tail
        assert "unshare " in tail


_REACH = """
import socket
for path in PATHS:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(path)
        print('reached', path)
    except OSError as err:
        print('refused', path, err.strerror)
"""


def test_an_unprivileged_flow_hides_host_sockets_outside_the_homes() -> None:
    if not os.access("/var/tmp", os.W_OK):
        pytest.skip("/var/tmp is not writable here")
    folder = tempfile.mkdtemp(prefix="flow-attack-", dir="/var/tmp")
    try:
        os.chmod(folder, 0o755)
        path = os.path.join(folder, "daemon.sock")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(path)
            listener.listen(4)
            os.chmod(path, 0o666)
            result = _as_nobody(f"PATHS = [{path!r}]\n{_REACH}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    off, jailed = result["off"], result["auto"]
    assert isinstance(off, dict)
    assert isinstance(jailed, dict)
    assert f"reached {path}" in str(off["tail"])
    assert jailed["sandbox"] == "bwrap"
    assert f"refused {path}" in str(jailed["tail"])


_LOCKED = r"""
import os
d = 'deep%d' % os.getpid()
os.makedirs(d + '/er')
open(d + '/er/f', 'w').close()
os.chmod(d + '/er', 0)
os.chmod(d, 0o500)
for place in ('/etc/flow-x', '/var/flow-x', '/flow-x'):
    try:
        open(place, 'w').close()
    except OSError:
        print('refused', place)
    else:
        print('wrote', place)
"""


def test_an_unprivileged_flow_leaves_no_folder_and_no_writable_root() -> None:
    # A check that locks folders of its copy against their owner (Flow's own user here)
    # leaves nothing in Flow's temporary folder; the jail's own root is read-only to it.
    result = _as_nobody(_LOCKED)
    jailed = result["auto"]
    assert isinstance(jailed, dict)
    assert jailed["status"] == "passed", jailed
    assert result["left"] == [], result
    tail = str(jailed["tail"])
    for place in ("/etc/flow-x", "/var/flow-x", "/flow-x"):
        assert f"refused {place}" in tail, tail


_SPREAD_IN_COPY = """
import os, secrets
folder, written, stopped = 'out-' + secrets.token_hex(4), 0, None
try:
    for i in range(3):  # 3 x 8 MiB in new files of the copy, each under file_size_mib
        os.makedirs(f'{folder}/{i}')
        with open(f'{folder}/{i}/part.bin', 'wb') as fh:
            for _ in range(8):
                fh.write(b'c' * (1024 * 1024))
                fh.flush()
                written += 1
except OSError as err:
    stopped = err.errno
print('stopped', stopped, 'wrote MiB', written)
"""


def test_an_unprivileged_flow_bounds_the_copy_as_a_whole() -> None:
    result = _as_nobody(_SPREAD_IN_COPY, disk_mib=16, file_size_mib=10)
    off, jailed = result["off"], result["auto"]
    assert isinstance(off, dict)
    assert isinstance(jailed, dict)
    assert "stopped None wrote MiB 24" in str(off["tail"])  # the control: no bound at all
    if "bounded for /tmp only" in str(jailed["why"]):
        pytest.skip(str(jailed["why"]))  # no --size in this bubblewrap, or no sh/cp
    assert "stopped 28" in str(jailed["tail"]), jailed  # ENOSPC in the check's own tmpfs
    assert jailed["status"] == "limit", jailed
    assert "sandbox.disk_mib" in str(jailed["error"])
    assert "disk bounded" not in str(jailed["why"])  # in all: the copy, /tmp and /dev/shm


_SPREAD_ALL = """
import os
jailed = os.environ.get('HOME') == '/tmp/.flow-home'
tag = TAG + ('-jailed' if jailed else '-off')
places = ('spread-' + tag, '/tmp/flow-spread-' + tag, '/dev/shm/flow-spread-' + tag)
wrote = 0
for where in places:
    try:
        with open(where, 'wb') as fh:
            for _ in range(8):  # disk_mib / 2 in each place
                fh.write(b'a' * (1024 * 1024))
                fh.flush()
                wrote += 1
    except OSError as err:
        print('stopped', err.errno, where)
print('wrote MiB', wrote)
for place in ('/dev/flow-dev-' + tag, '/flow-root-' + tag):
    try:
        open(place, 'w').close()
        print('wrote', place)
    except OSError:
        print('refused', place)
if not jailed:  # the control wrote into Flow's own /tmp and /dev/shm
    for where in places:
        os.remove(where)
"""


def _outside_tmp() -> str:
    for folder in ("/srv", "/opt", "/var/lib"):
        if os.path.isdir(folder) and os.access(folder, os.W_OK) and os.stat(folder).st_mode & 1:
            return folder
    pytest.skip("no folder outside /tmp that root may write and nobody may pass")


@pytest.mark.parametrize("where", ["tmp", "elsewhere"])
def test_an_unprivileged_check_writes_disk_mib_in_all(where: str) -> None:
    # disk_mib / 2 into each of the copy, /tmp and /dev/shm: one bound stops them, with the
    # workspace under /tmp (the check's one tmpfs is its /tmp) and elsewhere (the one tmpfs
    # is the workspace's parent, /tmp a link into it). The jail's own /dev and / are
    # read-only (bubblewrap's /dev belongs to the check's user when Flow is not root).
    tag = secrets.token_hex(6)
    base = None if where == "tmp" else _outside_tmp()
    try:
        result = _as_nobody(f"TAG = {tag!r}\n{_SPREAD_ALL}", base, disk_mib=16)
    finally:
        left = [f"/tmp/flow-spread-{tag}-jailed", f"/dev/shm/flow-spread-{tag}-jailed"]
        reached = [p for p in left if os.path.exists(p)]
        for path in reached:
            os.remove(path)
    off, jailed = result["off"], result["auto"]
    assert isinstance(off, dict)
    assert isinstance(jailed, dict)
    assert "wrote MiB 24" in str(off["tail"]), off  # the control: nothing stops 3 x 8 MiB
    if "bounded for /tmp only" in str(jailed["why"]):
        pytest.skip(str(jailed["why"]))  # no --size in this bubblewrap, or no sh/cp
    tail = str(jailed["tail"])
    assert "stopped 28" in tail, jailed  # ENOSPC
    assert "wrote MiB 24" not in tail
    assert jailed["status"] == "limit", jailed
    assert "sandbox.disk_mib" in str(jailed["error"])
    assert "disk bounded" not in str(jailed["why"]), jailed["why"]
    assert f"refused /dev/flow-dev-{tag}-jailed" in tail
    assert f"refused /flow-root-{tag}-jailed" in tail
    assert reached == []  # nothing reached Flow's /tmp or /dev/shm
    assert result["ws"] == [], result["ws"]  # nor the workspace (the control removed its own)
