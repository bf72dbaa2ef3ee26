"""The one Neovim fixture of the test suites: a real ``nvim --headless --clean`` per test.

:func:`headless_neovim` starts Neovim in its own process group, listening on a socket inside
a fresh 0700 directory, with the given directories on 'runtimepath' (flow-rose's ``rose.tools``
test double lives in ``packages/flow-rose/tests/fixtures/rtp``), and attaches a separate pynvim
connection (:attr:`Editor.user`) that plays the user: it opens and edits buffers and sets the
double's test globals. Code under test never uses that connection. On exit the connection is
closed, the whole process group is killed and the directory removed.

Without a Neovim binary (``nvim`` on PATH, or ``NVIM=/path/to/nvim``) or without pynvim the
test is skipped with the reason.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: Seconds Neovim has to start listening (a safety net, never a wait for something to happen).
START_DEADLINE_S = 30.0


def nvim_binary() -> str | None:
    """The Neovim to run: ``$NVIM`` when set (None if that is not executable), else ``nvim``."""
    explicit = os.environ.get("NVIM")
    if explicit:
        return explicit if shutil.which(explicit) else None
    return shutil.which("nvim")


@dataclass
class Editor:
    """One running headless Neovim and the test's own ("user") connection to it."""

    proc: subprocess.Popen[bytes]
    root: Path  # the 0700 temporary directory
    socket: Path
    workspace: Path
    user: Any  # pynvim.Nvim

    def path(self, rel: str) -> Path:
        return self.workspace / rel

    def load(self, rel: str, text: str | None = None) -> int:
        """Create (when ``text`` is given) and load a file into a buffer; returns its number."""
        target = self.path(rel)
        if text is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        bufnr = int(self.user.funcs.bufadd(str(target)))
        self.user.funcs.bufload(bufnr)
        return bufnr

    def lines(self, bufnr: int) -> list[str]:
        return list(self.user.api.buf_get_lines(bufnr, 0, -1, True))

    def type_into(self, bufnr: int, lines: list[str]) -> None:
        """What a user typing does: change the buffer without saving it."""
        self.user.api.buf_set_lines(bufnr, 0, -1, True, lines)

    def option(self, bufnr: int, name: str) -> Any:
        return self.user.api.buf_get_option(bufnr, name)

    def set_option(self, bufnr: int, name: str, value: Any) -> None:
        self.user.api.buf_set_option(bufnr, name, value)

    def set_global(self, name: str, value: Any) -> None:
        self.user.vars[name] = value

    def get_global(self, name: str) -> Any:
        return self.user.vars.get(name)

    def kill(self) -> None:
        """Kill Neovim's process group now (a test of what happens when the editor dies)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


def close_nvim(user: Any) -> None:
    """Close a test pynvim connection so its socket is closed now, not at garbage collection.

    (pynvim closes its event loop before the transport's socket close has run.)
    """
    pynvim_loop = user._session.loop
    aio = getattr(pynvim_loop, "_loop", None)
    transport = getattr(pynvim_loop, "_transport", None)
    if transport is not None and aio is not None and not aio.is_closed():
        transport.close()
        aio.call_soon(aio.stop)
        aio.run_forever()
    with contextlib.suppress(Exception):
        user.close()


def _attach(sock: Path, proc: subprocess.Popen[bytes]) -> Any:
    """Attach as soon as Neovim listens; bounded by a deadline, not a fixed sleep."""
    import pynvim

    deadline = time.monotonic() + START_DEADLINE_S
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nvim exited early with status {proc.returncode}")
        if sock.exists():
            try:
                return pynvim.attach("socket", path=str(sock))
            except OSError as err:
                last = err
        time.sleep(0.02)  # poll interval while waiting for the socket
    raise RuntimeError(f"nvim did not listen on {sock} within {START_DEADLINE_S} s: {last}")


@contextlib.contextmanager
def headless_neovim(rtp: Sequence[Path] = (), *, prefix: str = "flow-nvim-") -> Iterator[Editor]:
    """Run one headless Neovim with ``rtp`` appended to 'runtimepath'; skip without one."""
    binary = nvim_binary()
    if binary is None:
        pytest.skip("no Neovim binary: install neovim or set NVIM")
    pytest.importorskip("pynvim", reason="pynvim is not installed (flow-rose's dependency)")
    for directory in rtp:
        if not directory.is_dir():
            pytest.skip(f"runtimepath directory {directory} is missing")
    root = Path(tempfile.mkdtemp(prefix=prefix))  # mkdtemp makes it 0700
    workspace = root / "ws"
    workspace.mkdir()
    sock = root / "nvim.sock"
    argv = [binary, "--headless", "--clean", "-n", "--listen", str(sock)]
    for directory in rtp:
        argv += ["--cmd", f"set rtp+={directory}"]
    proc = subprocess.Popen(
        argv,
        cwd=workspace,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    user = None
    try:
        user = _attach(sock, proc)
        yield Editor(proc=proc, root=root, socket=sock, workspace=workspace, user=user)
    finally:
        if user is not None:
            close_nvim(user)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)
