"""The trust gate for file tools: real attacks, each with a negative control.

Every case runs three times: against flow-safeio with the ``openat2`` resolver, against
flow-safeio with the ``O_NOFOLLOW`` walk, and against ``naive_io.NaiveWorkspace`` (plain
``open()`` on a joined path). flow-safeio must refuse with the expected error code; the naive
layer must demonstrably escape or clobber, which proves the test can see an escape.

Layout per test (real files under ``tmp_path``)::

    tmp_path/ws/        the workspace (with planted links, hard links, a FIFO, .git, ...)
    tmp_path/outside/   a sibling the workspace must never reach: TOPSECRET.txt, victim.txt

After every case the "forbidden" state is compared with a snapshot taken before it: every file
outside ``ws`` (content, mtime, mode), everything under any ``.git`` spelling and every
protected path inside ``ws``. A result that contains the secret marker counts as a read
escape. The attacked target inside the workspace must be unchanged or fully written.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import flow_safeio
from flow_safeio import SafeIOError, Workspace

_spec = importlib.util.spec_from_file_location(
    "flow_safeio_naive_io", Path(__file__).with_name("naive_io.py")
)
assert _spec is not None
assert _spec.loader is not None
naive_io = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(naive_io)

MAX = 4096
MARK = "TOPSECRET"
SECRET = f"{MARK}: bytes that live outside the workspace\n".encode()
VICTIM = b"victim: original outside bytes\n"
PAYLOAD = b"attacker payload\r\n\x00\xff"
FIFO_MARK = b"stream from a FIFO writer"
PROTECTED = ("flow.toml", "ops")
IMPLS = ("openat2", "walk", "naive")
#: Names directly under tmp_path that belong to the harness, not to the attack.
TEST_NAMES = ("ws", "ws.old", "stop-flipping")
JOIN_S = 30.0  # safety net only: no test waits for time to pass

_HFS_IGNORABLE = dict.fromkeys(
    [0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]
)


@dataclass
class Env:
    tmp: Path
    ws: Path
    outside: Path

    @property
    def secret(self) -> Path:
        return self.outside / f"{MARK}.txt"

    @property
    def victim(self) -> Path:
        return self.outside / "victim.txt"


@dataclass
class Outcome:
    result: Any = None
    error: BaseException | None = None


def _gitish(component: str) -> bool:
    # The test's own oracle for ".git" spellings (independent of flow_safeio._paths).
    name = component.translate(_HFS_IGNORABLE).split(":", 1)[0].rstrip(". ").lower()
    return name in (".git", "git~1")


def _forbidden_inside(rel: str) -> bool:
    parts = rel.split(os.sep)
    if any(_gitish(p) for p in parts):
        return True
    return parts[0].lower() in PROTECTED


def _record(path: str) -> tuple[Any, ...]:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISREG(st.st_mode):
        with open(path, "rb") as f:
            return ("file", f.read(), st.st_mtime_ns, stat.S_IMODE(st.st_mode))
    if stat.S_ISDIR(st.st_mode):
        return ("dir", stat.S_IMODE(st.st_mode))
    return ("other", st.st_mode, st.st_rdev)


def _tree(
    top: Path, keep: Callable[[str], bool], prune_top: tuple[str, ...] = ()
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if top.is_symlink() or not top.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(top):
        if Path(dirpath) == top:
            dirnames[:] = [d for d in dirnames if d not in prune_top]
            filenames = [f for f in filenames if f not in prune_top]
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, top)
            if keep(rel):
                out[rel] = _record(full)
    return out


def forbidden_state(env: Env) -> dict[str, Any]:
    """Everything outside the workspace, plus .git and protected paths inside it."""
    state = {
        "outside:" + k: v for k, v in _tree(env.tmp, lambda _r: True, prune_top=TEST_NAMES).items()
    }
    # After a root swap the original workspace lives on as ws.old: judge that one.
    inside = env.tmp / "ws.old" if (env.tmp / "ws.old").is_dir() else env.ws
    state.update({"ws:" + k: v for k, v in _tree(inside, _forbidden_inside).items()})
    return state


def probe(env: Env, rel: str | None) -> Any:
    if rel is None:
        return None
    path = os.path.join(env.ws, rel.split("\x00", 1)[0])
    try:
        return _record(path)[:2]
    except OSError:
        return ("missing",)


def leaked(result: Any) -> bool:
    if isinstance(result, bytes | bytearray):
        return MARK.encode() in result
    return MARK in repr(result)


# ---------------------------------------------------------------- the workspace under attack


def build(tmp: Path) -> Env:
    env = Env(tmp=tmp, ws=tmp / "ws", outside=tmp / "outside")
    ws, out = env.ws, env.outside
    out.mkdir()
    env.secret.write_bytes(SECRET)
    env.victim.write_bytes(VICTIM)
    ws.mkdir()
    (ws / "hello.txt").write_bytes(b"hello\n")
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "inner.txt").write_bytes(b"inner\n")
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_bytes(f"[core]\n# {MARK} git config\n".encode())
    (ws / "sub" / ".git").mkdir(parents=True)
    (ws / "sub" / ".git" / "config").write_bytes(f"# {MARK} submodule\n".encode())
    (ws / "flow.toml").write_bytes(b"[operator]\nchecks = []\n")
    (ws / "ops").mkdir()
    (ws / "ops" / "limits.toml").write_bytes(b"max = 1\n")
    (ws / "big.bin").write_bytes(b"x" * (MAX + 1))
    os.symlink(env.secret, ws / "abs-link.txt")
    os.symlink(f"../outside/{MARK}.txt", ws / "rel-link.txt")
    os.symlink(env.victim, ws / "victim-link.txt")
    os.symlink(out, ws / "linkdir")
    os.symlink("../../outside", ws / "a" / "linkdir2")
    os.symlink(out / "created-by-dangling.txt", ws / "dangling.txt")
    os.symlink("chain2.txt", ws / "chain1.txt")
    os.symlink(env.secret, ws / "chain2.txt")
    os.symlink(out, ws / "C:")
    os.symlink("/proc/self/root", ws / "magic")
    os.link(env.secret, ws / "hard-secret.txt")
    os.link(env.victim, ws / "hard-victim.txt")
    os.mkfifo(ws / "pipe")
    return env


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return build(tmp_path)


def make(impl: str, env: Env) -> Any:
    if impl == "naive":
        return naive_io.NaiveWorkspace(str(env.ws))
    if impl == "openat2" and not flow_safeio.openat2_available():
        pytest.skip("openat2(2) is not available on this kernel")
    return Workspace(env.ws, max_bytes=MAX, protected=PROTECTED, resolver=impl)


# ---------------------------------------------------------------- operations


Op = Callable[[Any, Env], Any]


def r(rel: str | Callable[[Env], str]) -> Op:
    return lambda impl, env: impl.read_bytes(rel(env) if callable(rel) else rel)


def w(rel: str | Callable[[Env], str], data: bytes = PAYLOAD) -> Op:
    return lambda impl, env: impl.write_bytes(rel(env) if callable(rel) else rel, data)


def wt(rel: str, text: str) -> Op:
    return lambda impl, env: impl.write_text(rel, text)


def ls(rel: str) -> Op:
    return lambda impl, env: impl.list_dir(rel)


def ex(rel: str) -> Op:
    return lambda impl, env: impl.exists(rel)


def _fifo_read(impl: Any, env: Env) -> Any:
    path = env.ws / "pipe"
    box: dict[str, Any] = {}

    def reader() -> None:
        try:
            box["result"] = impl.read_bytes("pipe")
        except BaseException as err:
            box["error"] = err

    def writer() -> None:
        fd = os.open(path, os.O_WRONLY)  # blocks until someone opens the FIFO for reading
        try:
            os.write(fd, FIFO_MARK)
        except BrokenPipeError:
            pass  # the reader opened (non-blocking), looked, refused and closed
        finally:
            os.close(fd)

    rt = threading.Thread(target=reader, daemon=True)
    wt_ = threading.Thread(target=writer, daemon=True)
    rt.start()
    wt_.start()
    rt.join(JOIN_S)
    assert not rt.is_alive(), "the read blocked on a FIFO"
    if wt_.is_alive():
        # Nobody opened the FIFO: release the writer ourselves (O_RDWR never blocks on Linux).
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        wt_.join(JOIN_S)
        os.close(fd)
    assert not wt_.is_alive()
    if "error" in box:
        raise box["error"]
    return box["result"]


def _fifo_write(impl: Any, env: Env) -> Any:
    path = env.ws / "pipe"
    box: dict[str, Any] = {}
    # Hold the read end first (O_NONBLOCK: no wait), so a naive open for writing succeeds
    # at once and its bytes land in the pipe, where we can see them.
    rfd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:

        def writer() -> None:
            try:
                impl.write_bytes("pipe", PAYLOAD)
            except BaseException as err:
                box["error"] = err

        wrt = threading.Thread(target=writer, daemon=True)
        wrt.start()
        wrt.join(JOIN_S)
        assert not wrt.is_alive(), "the write blocked on a FIFO"
        chunks = []
        while True:
            try:
                chunk = os.read(rfd, 65536)
            except BlockingIOError:
                break  # a writer is still attached but wrote nothing more
            if not chunk:
                break  # no writer attached any more: end of stream
            chunks.append(chunk)
    finally:
        os.close(rfd)
    env_box[id(env)] = b"".join(chunks)
    if "error" in box:
        raise box["error"]
    return None


env_box: dict[int, bytes] = {}


def _mknod(name: str, major: int, minor: int) -> Callable[[Env], None]:
    def setup(env: Env) -> None:
        try:
            os.mknod(env.ws / name, 0o600 | stat.S_IFCHR, os.makedev(major, minor))
        except PermissionError as err:
            pytest.skip(f"mknod is not permitted here: {err}")
        try:
            os.close(os.open(env.ws / name, os.O_RDONLY | os.O_NONBLOCK))
        except PermissionError as err:
            pytest.skip(f"device nodes cannot be opened on this file system (nodev): {err}")

    return setup


def _swap_root(replacement: Callable[[Env], None]) -> Callable[[Op], Op]:
    def wrap(op: Op) -> Op:
        def run(impl: Any, env: Env) -> Any:
            env.ws.rename(env.tmp / "ws.old")
            replacement(env)
            return op(impl, env)

        return run

    return wrap


def _root_is_outside_link(env: Env) -> None:
    os.symlink(env.outside, env.ws)


def _root_is_planted_dir(env: Env) -> None:
    env.ws.mkdir()
    os.symlink(env.secret, env.ws / "hello.txt")


# ---------------------------------------------------------------- the cases


@dataclass(frozen=True)
class Attack:
    id: str
    op: Op
    codes: frozenset[str]
    target: str | None = None
    setup: Callable[[Env], None] | None = None
    # An escape only this case can show (beyond forbidden changes and leaked secrets).
    extra: Callable[[Env, Outcome], bool] | None = None


def A(id_: str, op: Op, *codes: str, **kw: Any) -> Attack:
    return Attack(id_, op, frozenset(codes), **kw)


def _said_true(_env: Env, o: Outcome) -> bool:
    return o.error is None and o.result is True


def _read_over_cap(_env: Env, o: Outcome) -> bool:
    return isinstance(o.result, bytes) and len(o.result) > MAX


def _target_over_cap(rel: str) -> Callable[[Env, Outcome], bool]:
    def check(env: Env, _o: Outcome) -> bool:
        p = env.ws / rel
        return p.is_file() and p.stat().st_size > MAX

    return check


def _wrote_into_device(rel: str) -> Callable[[Env, Outcome], bool]:
    def check(env: Env, o: Outcome) -> bool:
        return o.error is None and stat.S_ISCHR(os.lstat(env.ws / rel).st_mode)

    return check


def _read_fifo_stream(_env: Env, o: Outcome) -> bool:
    return o.result == FIFO_MARK


def _wrote_into_fifo(env: Env, o: Outcome) -> bool:
    return o.error is None and env_box.get(id(env)) == PAYLOAD


def _listed(name: str) -> Callable[[Env, Outcome], bool]:
    return lambda _env, o: o.error is None and name in repr(o.result)


SECRET_REL = f"outside/{MARK}.txt"

ATTACKS: list[Attack] = [
    # traversal spellings
    A("trav-read-parent", r(f"../{SECRET_REL}"), "path_outside"),
    A("trav-read-inner", r(f"a/../../{SECRET_REL}"), "path_outside"),
    A("trav-read-dot", r(f"./../{SECRET_REL}"), "path_outside"),
    A("trav-read-deep", r(f"a/b/../../../{SECRET_REL}"), "path_outside"),
    A("trav-read-slashes", r(f"..//outside//{MARK}.txt"), "path_outside"),
    A("trav-read-text", lambda i, e: i.read_text(f"../{SECRET_REL}"), "path_outside"),
    A("trav-write-clobber", w("../outside/victim.txt"), "path_outside"),
    A("trav-write-create", w("../created-outside.txt"), "path_outside"),
    A("trav-write-inner", w("a/../../outside/victim.txt"), "path_outside"),
    A("trav-list", ls("../outside"), "path_outside"),
    A("trav-exists", ex(f"../{SECRET_REL}"), "path_outside", extra=_said_true),
    # absolute paths
    A("abs-read", r(lambda e: str(e.secret)), "path_outside"),
    A("abs-write", w(lambda e: str(e.victim)), "path_outside"),
    A("abs-read-double-slash", r(lambda e: "/" + str(e.secret)), "path_outside"),
    A("abs-write-create", w(lambda e: str(e.outside / "created-abs.txt")), "path_outside"),
    A("abs-proc-root", r(lambda e: "/proc/self/root" + str(e.secret)), "path_outside"),
    # Windows-style paths
    A("win-backslash-read", r(f"..\\outside\\{MARK}.txt"), "path_invalid"),
    A("win-backslash-write", w("..\\outside\\victim.txt"), "path_invalid"),
    A("win-mixed-separators", r(f"a\\..\\../outside/{MARK}.txt"), "path_invalid"),
    A("win-drive-read", r(f"C:/{MARK}.txt"), "path_outside"),
    A("win-drive-backslash", r(f"C:\\{MARK}.txt"), "path_outside"),
    A("win-drive-write", w("C:/victim.txt"), "path_outside"),
    A(
        "win-unc",
        r(lambda e: "\\\\" + str(e.secret).lstrip("/").replace("/", "\\")),
        "path_invalid",
    ),
    # NUL
    A("nul-read", r(f"../{SECRET_REL}\x00.md"), "path_invalid"),
    A("nul-write", w("../outside/victim.txt\x00.txt"), "path_invalid"),
    A("nul-list", ls("../outside\x00"), "path_invalid"),
    # .git spellings
    A("git-read-config", r(".git/config"), "git_path"),
    A("git-write-hook", w(".git/hooks/pre-commit"), "git_path"),
    A("git-upper", w(".GIT/hooks/pre-commit"), "git_path"),
    A("git-mixed-case", w(".Git/config"), "git_path"),
    A("git-trailing-dot", w(".git./config"), "git_path"),
    A("git-trailing-space", w(".git /config"), "git_path"),
    A("git-nested-read", r("sub/.git/config"), "git_path"),
    A("git-8dot3", w("GIT~1/config"), "git_path"),
    A("git-hfs-ignorable", w(".g\u200cit/config"), "git_path"),
    A("git-ntfs-stream", w(".git::$INDEX_ALLOCATION/config"), "git_path"),
    A("git-list", ls(".git"), "git_path", extra=_listed("hooks")),
    # symbolic links
    A("sym-read-abs", r("abs-link.txt"), "symlink"),
    A("sym-read-rel", r("rel-link.txt"), "symlink"),
    A("sym-read-chain", r("chain1.txt"), "symlink"),
    A("sym-write-file", w("victim-link.txt"), "symlink", target="victim-link.txt"),
    A("sym-read-parent", r(f"linkdir/{MARK}.txt"), "symlink"),
    A("sym-write-parent-create", w("linkdir/created-via-link.txt"), "symlink"),
    A("sym-write-parent-clobber", w("linkdir/victim.txt"), "symlink"),
    A("sym-read-nested-parent", r(f"a/linkdir2/{MARK}.txt"), "symlink"),
    A("sym-write-dangling", w("dangling.txt"), "symlink", target="dangling.txt"),
    A("sym-list-parent", ls("linkdir"), "symlink"),
    A("sym-exists-parent", ex(f"linkdir/{MARK}.txt"), "symlink", extra=_said_true),
    A("sym-magic-link", r(lambda e: "magic" + str(e.secret)), "symlink"),
    A("sym-write-text-deep", wt("linkdir/new/deeper.txt", "x"), "symlink"),
    # hard links
    A("hard-read", r("hard-secret.txt"), "hardlink"),
    A("hard-write", w("hard-victim.txt"), "hardlink", target="hard-victim.txt"),
    A("hard-write-text", wt("hard-victim.txt", "clobbered"), "hardlink", target="hard-victim.txt"),
    # FIFOs and device nodes
    A("fifo-read", _fifo_read, "not_regular_file", extra=_read_fifo_stream),
    A("fifo-write", _fifo_write, "not_regular_file", target="pipe", extra=_wrote_into_fifo),
    A("dev-read", r("zero"), "not_regular_file", setup=_mknod("zero", 1, 5), extra=_read_over_cap),
    A(
        "dev-write",
        w("null"),
        "not_regular_file",
        target="null",
        setup=_mknod("null", 1, 3),
        extra=_wrote_into_device("null"),
    ),
    # oversize
    A("big-read", r("big.bin"), "too_large", extra=_read_over_cap),
    A(
        "big-write",
        w("fresh.bin", b"y" * (MAX + 1)),
        "too_large",
        target="fresh.bin",
        extra=_target_over_cap("fresh.bin"),
    ),
    A(
        "big-write-text-multibyte",
        wt("fresh.txt", "\u00e9" * (MAX // 2 + 1)),
        "too_large",
        target="fresh.txt",
        extra=_target_over_cap("fresh.txt"),
    ),
    A(
        "big-overwrite",
        w("hello.txt", b"z" * (MAX + 1)),
        "too_large",
        target="hello.txt",
        extra=_target_over_cap("hello.txt"),
    ),
    # protected operator files
    A("prot-write", w("flow.toml"), "protected"),
    A("prot-write-dot", w("./flow.toml"), "protected"),
    A("prot-write-case", w("FLOW.toml"), "protected"),
    A("prot-dir-file", w("ops/limits.toml"), "protected"),
    A("prot-dir-new", w("ops/new.toml"), "protected"),
    A("prot-double-slash", w("ops//limits.toml"), "protected"),
    # the root renamed and replaced
    A("root-swap-read", _swap_root(_root_is_outside_link)(r(f"{MARK}.txt")), "root_stale"),
    A("root-swap-write", _swap_root(_root_is_outside_link)(w("victim.txt")), "root_stale"),
    A("root-swap-list", _swap_root(_root_is_outside_link)(ls(".")), "root_stale"),
    A("root-swap-planted-dir", _swap_root(_root_is_planted_dir)(r("hello.txt")), "root_stale"),
]


def test_enough_attack_cases() -> None:
    assert len(ATTACKS) + len(RACES) >= 40
    assert len({a.id for a in ATTACKS}) == len(ATTACKS)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("attack", ATTACKS, ids=[a.id for a in ATTACKS])
def test_attack(attack: Attack, impl: str, env: Env) -> None:
    if attack.setup is not None:
        attack.setup(env)
    subject = make(impl, env)
    before = forbidden_state(env)
    target_before = probe(env, attack.target)
    outcome = Outcome()
    try:
        outcome.result = attack.op(subject, env)
    except Exception as err:
        outcome.error = err
    finally:
        subject.close()
    after = forbidden_state(env)
    target_after = probe(env, attack.target) if not (env.tmp / "ws.old").exists() else None
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    escaped = bool(changed) or leaked(outcome.result)
    if attack.extra is not None and attack.extra(env, outcome):
        escaped = True

    if impl == "naive":
        assert escaped, (
            f"negative control did not escape ({outcome!r}): this case cannot see an attack"
        )
        return
    err = outcome.error
    assert isinstance(err, SafeIOError), f"expected a refusal, got {outcome!r}"
    assert err.code in attack.codes, f"code {err.code!r}, expected {sorted(attack.codes)}: {err}"
    assert err.path is not None
    assert str(err).startswith(repr(err.path))
    assert not escaped, f"escaped: changed={changed} outcome={outcome!r}"
    if attack.target is not None and target_after is not None:
        assert target_after == target_before, "refused write still changed its target"


# ---------------------------------------------------------------- races against a real process

FLIPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
d, stop, n = sys.argv[1], sys.argv[4], int(sys.argv[5])
a, b = sys.argv[2].encode(), sys.argv[3].encode()
dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
for i in range(n):
    if libc.renameat2(dfd, a, dfd, b, 2) != 0:  # RENAME_EXCHANGE: both names always exist
        sys.stderr.write("renameat2: " + os.strerror(ctypes.get_errno()) + "\n")
        sys.exit(3)
    if i == 0:
        sys.stdout.write("go\n")
        sys.stdout.flush()
    if i % 128 == 0 and os.path.exists(stop):
        break
"""


@contextlib.contextmanager
def flipping(env: Env, a: str, b: str) -> Iterator[None]:
    """Exchange ``ws/a`` and ``ws/b`` atomically, over and over, in another process."""
    stop = env.tmp / "stop-flipping"
    proc = subprocess.Popen(
        [sys.executable, "-c", FLIPPER, str(env.ws), a, b, str(stop), "5000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert proc.stderr is not None
        if proc.stdout.readline() != b"go\n":  # blocks until the first exchange happened
            proc.wait(JOIN_S)
            pytest.skip(f"renameat2(RENAME_EXCHANGE) unavailable: {proc.stderr.read()!r}")
        yield
    finally:
        stop.touch()
        try:
            proc.wait(JOIN_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()


@dataclass(frozen=True)
class Race:
    id: str
    setup: Callable[[Env], tuple[str, str]]
    attempt: Callable[[Any], Any]
    codes: frozenset[str]
    #: Whether the escape already happened (for the negative control's early stop).
    escaped: Callable[[Env, Any], bool]


def _race_parent(env: Env) -> tuple[str, str]:
    (env.ws / "racedir").mkdir()
    os.symlink(env.outside, env.ws / "racedir.swap")
    return "racedir", "racedir.swap"


def _race_target(env: Env) -> tuple[str, str]:
    (env.ws / "t.txt").write_bytes(b"original inside\n")
    os.symlink(env.victim, env.ws / "t.swap")
    return "t.txt", "t.swap"


def _race_read(env: Env) -> tuple[str, str]:
    (env.ws / "r.txt").write_bytes(b"inside\n")
    os.symlink(env.secret, env.ws / "r.swap")
    return "r.txt", "r.swap"


RACES = [
    Race(
        "race-parent-dir-swapped-for-link-during-write",
        _race_parent,
        lambda s: s.write_bytes("racedir/race.txt", PAYLOAD),
        frozenset({"symlink", "not_found", "not_directory"}),
        lambda env, _res: (env.outside / "race.txt").exists(),
    ),
    Race(
        "race-target-swapped-for-link-during-write",
        _race_target,
        lambda s: s.write_bytes("t.txt", PAYLOAD),
        frozenset({"symlink", "not_found"}),
        lambda env, _res: env.victim.read_bytes() != VICTIM,
    ),
    Race(
        "race-file-swapped-for-link-during-read",
        _race_read,
        lambda s: s.read_bytes("r.txt"),
        frozenset({"symlink", "not_found"}),
        lambda _env, res: leaked(res),
    ),
]

SAFE_ROUNDS = 400
NAIVE_ROUNDS = 50_000


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("race", RACES, ids=[x.id for x in RACES])
def test_race(race: Race, impl: str, env: Env) -> None:
    a, b = race.setup(env)
    subject = make(impl, env)
    before = forbidden_state(env)
    refused: dict[str, int] = {}
    ok = 0
    escaped = False
    with flipping(env, a, b):
        for _ in range(NAIVE_ROUNDS if impl == "naive" else SAFE_ROUNDS):
            try:
                res = race.attempt(subject)
            except SafeIOError as err:
                refused[err.code] = refused.get(err.code, 0) + 1
                continue
            except OSError:
                continue  # the naive layer trips over the swap sometimes
            ok += 1
            if race.escaped(env, res):
                escaped = True
                if impl == "naive":
                    break
    subject.close()
    after = forbidden_state(env)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if impl == "naive":
        assert escaped or changed, "negative control never escaped: the race was not exercised"
        return
    assert not escaped, "flow-safeio leaked or clobbered under a race"
    assert not changed, f"outside changed under a race: {changed}"
    assert set(refused) <= race.codes, refused
    assert ok + sum(refused.values()) == SAFE_ROUNDS
    # The target inside is either unchanged or fully written; no temporary file is left.
    for name in (a, b):
        p = env.ws / name
        if p.is_dir() and not p.is_symlink() and (p / "race.txt").exists():
            assert (p / "race.txt").read_bytes() == PAYLOAD
        elif p.is_file() and not p.is_symlink() and name.startswith("t."):
            assert p.read_bytes() in (b"original inside\n", PAYLOAD)
    assert list(env.ws.rglob(".flowtmp-*")) == []
