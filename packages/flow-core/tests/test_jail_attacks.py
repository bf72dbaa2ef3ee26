"""Attacks on the check jail, each with its negative control (``docs/architecture.md``, "Sandbox").

Every attack is test code a model could write, run as an operator's check. Each one is first
shown to work with ``[sandbox] mode = "off"`` (so the test proves something), then shown to
fail in the default jail. Attacks that need root to mean anything (capabilities, files only
root may read) skip their control when Flow is not root.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from flow_core import FlowConfig
from flow_core.verify._cgroup import cgroup_parents
from flow_core.verify._checks import CheckScope, run_check
from flow_core.verify._jail_argv import _has_size
from flow_core.verify._sandbox import probe_bwrap

PY = sys.executable
ROOT = os.geteuid() == 0


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "mod.py").write_text("x = 1\n")
    return path


def _attack(ws: Path, code: str, *, mode: str = "auto", **sandbox: Any) -> str:
    """Run ``code`` as a Python check; return its output (status and output tail)."""
    cfg = FlowConfig.model_validate(
        {
            "workspace_dir": str(ws),
            "checks": {"t": {"cmd": [PY, "-S", "-c", code], "timeout": 120_000}},
            "sandbox": {"mode": mode, **sandbox},
        }
    )
    result = run_check(
        "t",
        cfg.checks["t"],
        cwd=cfg.workspace_dir,
        sandbox=cfg.sandbox,
        scope=CheckScope(protected=cfg.protected),
    )
    if mode != "off":
        assert result.sandbox == "bwrap", result.sandbox_reason
    return f"{result.status}\n{result.output_tail}"


# -- privilege ---------------------------------------------------------------------------------

_CAPS = (
    "import re\ntext = open('/proc/self/status').read()\n"
    "print('CapEff', int(re.search(r'CapEff:\\s*(\\w+)', text).group(1), 16))\n"
    "print('CapBnd', int(re.search(r'CapBnd:\\s*(\\w+)', text).group(1), 16))\n"
    "print('NoNewPrivs', re.search(r'NoNewPrivs:\\s*(\\d)', text).group(1))"
)


def test_no_capability_and_no_new_privileges(jail_ok: None, ws: Path) -> None:
    if ROOT:
        assert "CapEff 0\n" not in _attack(ws, _CAPS, mode="off")
    out = _attack(ws, _CAPS)
    assert "CapEff 0\n" in out
    assert "CapBnd 0\n" in out
    assert "NoNewPrivs 1" in out


_UID = "import os\nprint('ids', os.getuid(), os.geteuid(), os.getgid(), os.getgroups())"


@pytest.mark.skipif(not ROOT, reason="the uid change applies when Flow runs as root")
def test_root_runs_the_check_as_the_unprivileged_check_user(jail_ok: None, ws: Path) -> None:
    assert "ids 0 0 0" in _attack(ws, _UID, mode="off")
    assert "ids 65533 65533 65533 []" in _attack(ws, _UID)
    assert "ids 4242 4242 4343 []" in _attack(ws, _UID, check_uid=4242, check_gid=4343)


_READ = (
    "import sys\nfor p in sys.argv[1:] or PATHS:\n    try:\n"
    "        print('read', p, open(p).read(40).strip()[:8] or 'empty')\n"
    "    except OSError as err:\n        print('refused', p, err.strerror)"
)


@pytest.mark.skipif(not ROOT, reason="files only root may read matter when Flow is root")
def test_files_only_root_may_read_stay_unread(jail_ok: None, ws: Path, tmp_path: Path) -> None:
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    shelf.chmod(0o755)
    secret = shelf / "token"
    secret.write_text("sk-" + secrets.token_hex(8))
    secret.chmod(0o600)
    paths = [str(secret), *(p for p in ("/etc/shadow", "/etc/gshadow") if os.path.exists(p))]
    code = f"PATHS = {paths!r}\n{_READ}"
    off = _attack(ws, code, mode="off", readable=[str(shelf)])
    assert f"read {secret} sk-" in off
    jailed = _attack(ws, code, readable=[str(shelf)])
    for path in paths:
        assert f"refused {path}" in jailed


_SETUID = (
    "import os, shutil\nshutil.copy('/bin/sh', 'rootsh')\nos.chmod('rootsh', 0o4755)\n"
    "print('mode', oct(os.stat('rootsh').st_mode), os.stat('rootsh').st_uid)"
)


def _set_id_files(root: Path) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        st = path.lstat()
        if stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
            found.append(path)
    return found


def test_no_setuid_file_outlives_the_check(jail_ok: None, ws: Path) -> None:
    off = _attack(ws, _SETUID, mode="off")
    assert "mode 0o104755" in off
    assert _set_id_files(ws) == [ws / "rootsh"]
    (ws / "rootsh").unlink()
    jailed = _attack(ws, _SETUID)
    assert "passed" in jailed  # it may make one in its private copy...
    assert _set_id_files(ws) == []  # ...which is gone with the check


# -- what a check writes ----------------------------------------------------------------------

_LITTER = (
    "import os\nos.makedirs('.git/hooks', exist_ok=True)\n"
    "for p in ('.git/hooks/pre-commit', 'cache/.keep', 'mod.py', '.venv/bin/x'):\n"
    "    try:\n        os.makedirs(os.path.dirname(p) or '.', exist_ok=True)\n"
    "        open(p, 'w').write('owned')\n        print('wrote', p)\n"
    "    except OSError as err:\n        print('refused', p, err.strerror)"
)


def test_nothing_written_reaches_the_users_tree(jail_ok: None, ws: Path) -> None:
    off = _attack(ws, _LITTER, mode="off")
    assert "wrote mod.py" in off
    assert (ws / ".git" / "hooks" / "pre-commit").exists()
    for path in sorted(ws.rglob("*"), reverse=True):
        path.unlink() if not path.is_dir() else path.rmdir()
    (ws / "mod.py").write_text("x = 1\n")
    jailed = _attack(ws, _LITTER)
    assert "wrote mod.py" in jailed  # it ran, on its own copy
    assert sorted(p.name for p in ws.iterdir()) == ["mod.py"]
    assert (ws / "mod.py").read_text() == "x = 1\n"


# -- system calls (the seccomp filter) --------------------------------------------------------

_CALLS = """
import ctypes, os, platform, signal, socket, time
libc = ctypes.CDLL(None, use_errno=True)
def report(name, rc):
    print(name, 'ok' if rc >= 0 else 'errno', 0 if rc >= 0 else ctypes.get_errno(), flush=True)
buf = ctypes.create_string_buffer(8)
class IOV(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
local, remote = IOV(ctypes.addressof(buf), 8), IOV(ctypes.addressof(buf), 8)
libc.process_vm_readv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong,
                                  ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
report('process_vm_readv', libc.process_vm_readv(os.getpid(), ctypes.byref(local), 1,
                                                 ctypes.byref(remote), 1, 0))
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
report('ptrace', libc.ptrace(16, child, None, None))
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
keyctl = {'x86_64': 250, 'aarch64': 219}.get(platform.machine())
if keyctl:
    report('keyctl', libc.syscall(keyctl, 0, -3))  # KEYCTL_GET_KEYRING_ID, the session ring
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()
    print('netlink ok 0')
except OSError as err:
    print('netlink errno', err.errno)
report('unshare', libc.unshare(0x10000000))  # CLONE_NEWUSER, in this process
"""


def test_system_calls_an_escape_needs_are_refused(jail_ok: None, ws: Path) -> None:
    off = _attack(ws, _CALLS, mode="off")
    ran = [line.split()[0] for line in off.splitlines() if line.endswith(" ok 0")]
    assert {"process_vm_readv", "netlink"} <= set(ran), off  # ptrace may be off (Yama)
    jailed = _attack(ws, _CALLS)
    for name in ran:
        assert f"{name} errno" in jailed, jailed
    assert "unshare errno 1" in jailed


_USERNS = (
    "import subprocess\nprint('unshare rc', subprocess.run(['unshare', '-Ur', 'true']).returncode)"
)


def test_no_user_namespace_inside(jail_ok: None, ws: Path) -> None:
    if not any(os.access(os.path.join(d, "unshare"), os.X_OK) for d in ("/usr/bin", "/bin")):
        pytest.skip("util-linux's unshare is not installed")
    off = _attack(ws, _USERNS, mode="off")
    if "unshare rc 0" not in off:
        pytest.skip(f"user namespaces are refused on this host even without a jail: {off}")
    jailed = _attack(ws, _USERNS)
    assert "unshare rc " in jailed
    assert "unshare rc 0" not in jailed


# -- whole-check limits -------------------------------------------------------------------------

_HOG = """
import os
kids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        block = b'x' * (60 * 1024 * 1024)
        os._exit(0 if block else 1)
    kids.append(pid)
print('children', [os.waitpid(k, 0)[1] for k in kids])
blocks = [b'y' * (60 * 1024 * 1024) for _ in range(4)]
print('held', sum(map(len, blocks)) // (1024 * 1024))
"""


def _limited(ws: Path, code: str, unenforced: str, **sandbox: Any) -> Any:
    """Run ``code`` jailed with ``sandbox``; skip when the result says ``unenforced``."""
    cfg = FlowConfig.model_validate(
        {
            "workspace_dir": str(ws),
            "checks": {"t": {"cmd": [PY, "-S", "-c", code], "timeout": 120_000}},
            "sandbox": sandbox,
        }
    )
    result = run_check("t", cfg.checks["t"], cwd=ws, sandbox=cfg.sandbox)
    if result.sandbox_reason and unenforced in result.sandbox_reason:
        pytest.skip(result.sandbox_reason)
    return result


def test_memory_is_bounded_for_the_whole_check(jail_ok: None, ws: Path) -> None:
    off = _attack(ws, _HOG, mode="off", memory_mib=128)
    assert off.startswith("passed"), off
    assert "held 240" in off
    result = _limited(ws, _HOG, "memory not bounded", memory_mib=128)
    if result.status == "passed" and _swap_without_accounting():
        pytest.skip("swap absorbed the memory and this cgroup v1 does not count swap")
    assert result.status == "limit", (result.status, result.output_tail)
    assert result.error is not None
    assert result.error.code == "check_limit"
    assert "sandbox.memory_mib" in result.error.message
    assert "held 240" not in result.output_tail


def _swap_without_accounting() -> bool:
    try:
        swaps = Path("/proc/swaps").read_text().splitlines()[1:]
    except OSError:
        return False
    parent, version = cgroup_parents()[0].get("memory", ("", 2))
    memsw = version == 2 or os.path.exists(os.path.join(parent, "memory.memsw.limit_in_bytes"))
    return bool(swaps) and not memsw


_FORKS = """
import os, time
n = 0
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    n += 1
print('forked', n)
"""


def test_process_count_is_a_named_limit(jail_ok: None, ws: Path) -> None:
    off = _attack(ws, _FORKS, mode="off")
    assert "forked 200" in off
    result = _limited(ws, _FORKS, "process count not enforced", processes=32)
    assert result.status == "limit", (result.status, result.output_tail)
    assert result.error is not None
    assert "sandbox.processes" in result.error.message


_FILL = """
written = 0
try:
    with open('/tmp/fill', 'wb') as fh:
        for _ in range(64):
            fh.write(b'z' * (1024 * 1024))
            fh.flush()
            written += 1
except OSError as err:
    print('stopped', err.errno)
print('wrote MiB', written)
"""


def test_tmp_is_bounded(jail_ok: None, ws: Path) -> None:
    bwrap = probe_bwrap().bwrap
    if bwrap is None or not _has_size(bwrap):
        pytest.skip("this bubblewrap has no --size (0.7 and later)")
    jailed = _attack(ws, _FILL, disk_mib=16)
    assert "stopped 28" in jailed  # ENOSPC
    assert "wrote MiB 64" not in jailed


# -- what of the host the check sees ------------------------------------------------------------

_REACH = """
import json, os, socket, sys
for kind, path in json.loads(TARGETS):
    try:
        if kind == 'socket':
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(5)
                s.connect(path)
        elif kind == 'fifo':
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        else:
            with open(path) as fh:
                fh.read(16)
        print('reached', kind, repr(path))
    except OSError as err:
        print('refused', kind, repr(path), err.strerror)
"""

#: Host folders outside /tmp, /run and the homes where a daemon may keep a socket or a file.
_PLACES = ("/var/tmp", "/srv", "/opt", "/dev/shm")


@pytest.fixture
def host_things(ws: Path) -> Any:
    """A listening unix socket (0666), a FIFO with a reader (0666) and a file (0644) in a fresh
    0755 folder under each writable place of ``_PLACES``, an abstract socket, and a symlink in
    the workspace to one of the files. Yields ``(kind, path)`` pairs; removes it all after."""
    made: list[str] = []
    closing: list[Any] = []
    targets: list[tuple[str, str]] = []
    try:
        for place in _PLACES:
            if not (os.path.isdir(place) and os.access(place, os.W_OK | os.X_OK)):
                continue
            folder = tempfile.mkdtemp(prefix="flow-attack-", dir=place)
            made.append(folder)
            os.chmod(folder, 0o755)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            closing.append(sock)
            sock.bind(os.path.join(folder, "daemon.sock"))
            sock.listen(16)
            os.chmod(os.path.join(folder, "daemon.sock"), 0o666)
            fifo = os.path.join(folder, "pipe")
            os.mkfifo(fifo, 0o666)
            os.chmod(fifo, 0o666)
            closing.append(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
            secret = os.path.join(folder, "secret.txt")
            Path(secret).write_text("host-only " + secrets.token_hex(4))
            os.chmod(secret, 0o644)
            targets += [("socket", sock.getsockname()), ("fifo", fifo), ("file", secret)]
            targets.append(("file", "/proc/1/root" + secret))
        if not targets:
            pytest.skip(f"none of {_PLACES} is writable here")
        abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        closing.append(abstract)
        abstract.bind("\0flow-attack-" + secrets.token_hex(6))
        abstract.listen(16)
        targets.append(("socket", abstract.getsockname().decode()))
        (ws / "notes.txt").symlink_to(targets[2][1])
        targets.append(("file", "notes.txt"))
        yield targets
    finally:
        for thing in closing:
            thing.close() if isinstance(thing, socket.socket) else os.close(thing)
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)


def test_host_sockets_fifos_and_files_are_out_of_sight(
    jail_ok: None, ws: Path, host_things: list[tuple[str, str]]
) -> None:
    code = f"TARGETS = {json.dumps(json.dumps(host_things))}\n{_REACH}"
    off = _attack(ws, code, mode="off")
    for kind, path in host_things:
        if not path.startswith("/proc/1/root"):  # pid 1 of the host: not Flow's to read
            assert f"reached {kind} {path!r}" in off, off
    jailed = _attack(ws, code)
    for kind, path in host_things:
        assert f"refused {kind} {path!r}" in jailed, jailed


_SPREAD = """
import os, sys
written = {}
for where in ('spread.bin', '/tmp/flow-spread-' + TAG, '/dev/shm/flow-spread-' + TAG):
    written[where] = 0
    try:
        with open(where, 'wb') as fh:
            for _ in range(10):
                fh.write(b's' * (1024 * 1024))
                fh.flush()
                written[where] += 1
    except OSError as err:
        print('stopped', err.errno)
print('wrote MiB', sum(written.values()))
if CLEAN:  # the control wrote the host's /tmp and /dev/shm
    for where in written:
        os.remove(where)
"""


def test_disk_is_bounded_for_all_the_check_writes(jail_ok: None, ws: Path) -> None:
    tag = secrets.token_hex(6)
    off = _attack(ws, f"TAG, CLEAN = {tag!r}, True\n{_SPREAD}", mode="off", disk_mib=16)
    assert "wrote MiB 30" in off, off  # no per-file limit stops it: 10 MiB per file
    code = f"TAG, CLEAN = {tag!r}, False\n{_SPREAD}"
    result = _limited(ws, code, "disk bounded", disk_mib=16)  # for /tmp only, or per place
    assert "stopped 28" in result.output_tail  # ENOSPC
    assert "wrote MiB 30" not in result.output_tail
    assert result.status == "limit", (result.status, result.output_tail)
    assert result.error is not None
    assert "sandbox.disk_mib" in result.error.message
    assert not (ws / "spread.bin").exists()


_FILL_AND_DELETE = """
import os, time
stopped = None
try:
    with open('fill.bin', 'wb') as fh:
        for _ in range(40):
            fh.write(b'f' * (1024 * 1024))
            fh.flush()
except OSError as err:
    stopped = err.errno
print('stopped', stopped)
time.sleep(2)  # the check holds its full disk a while, then hides it
os.remove('fill.bin')
"""


def test_a_check_that_fills_its_disk_and_deletes_it_ends_limit(jail_ok: None, ws: Path) -> None:
    off = _attack(ws, _FILL_AND_DELETE, mode="off", disk_mib=16)
    assert "stopped None" in off, off  # the control: nothing stops 40 MiB
    result = _limited(ws, _FILL_AND_DELETE, "disk bounded for /tmp only", disk_mib=16)
    assert "stopped 28" in result.output_tail, result.output_tail  # ENOSPC
    assert result.status == "limit", (result.status, result.output_tail)
    assert result.error is not None
    assert "sandbox.disk_mib" in result.error.message


_SPIN = """
import time
while time.process_time() < 2.0:
    pass
print('spun', round(time.process_time(), 1))
"""


def test_cpu_time_is_a_total_for_the_check(jail_ok: None, ws: Path) -> None:
    off = _attack(ws, _SPIN, mode="off", cpu_seconds=0.5)
    assert "spun" in off, off
    result = _limited(ws, _SPIN, "CPU time not bounded", cpu_seconds=0.5)
    assert result.status == "limit", (result.status, result.output_tail)
    assert result.error is not None
    assert "sandbox.cpu_seconds" in result.error.message
    assert "spun" not in result.output_tail
