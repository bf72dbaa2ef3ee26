"""``StdioTakeover`` in real subprocesses, with the standard descriptors open or closed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SCRIPT = r"""
import fcntl, json, os, subprocess, sys
from flow_core import StdioTakeover

def ident(fd):
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino)

before = ident(1)
facts = {}
with StdioTakeover(stdin=True) as stdio:
    facts["closed_at_start"] = sorted(stdio.closed_at_start)
    facts["private"] = [stdio.stdin_fd, stdio.stdout_fd]
    facts["cloexec"] = [
        bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC) for fd in facts["private"]
    ]
    facts["stdout_kept"] = ident(stdio.stdout_fd) == before
    facts["fd1_is_stderr"] = ident(1) == ident(2)
    print("STRAY-PRINT")
    os.write(1, b"STRAY-FD1\n")
    subprocess.run(["sh", "-c", "echo STRAY-CHILD; cat"], check=True)  # cat reads fd 0
    os.write(stdio.stdout_fd, b"FRAME\n")
    private = facts["private"]
facts["restored"] = ident(1) == before
facts["private_closed"] = [not os.path.exists(f"/proc/self/fd/{fd}") for fd in private]
os.write(2, ("FACTS " + json.dumps(facts) + "\n").encode())
"""


@pytest.mark.parametrize("redirect", ["", "0<&-", "2>&-"])
def test_takeover_claims_stdout_above_fd_2_and_restores_it(redirect: str) -> None:
    launch = f'exec "$0" -c "$1" {redirect}'
    if redirect == "2>&-":
        # Keep a view of what the script reports: it writes its facts to fd 3 instead.
        launch = f'exec "$0" -c "$1" 3>&2 {redirect}'
    script = SCRIPT if redirect != "2>&-" else SCRIPT.replace("os.write(2, (", "os.write(3, (")
    proc = subprocess.run(
        ["sh", "-c", launch, sys.executable, script],
        input=b"CLIENT-MESSAGE\n",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"FRAME\n"  # only the frame, nothing stray, no client message echoed
    err = proc.stderr.decode()
    if redirect != "2>&-":
        for marker in ("STRAY-PRINT", "STRAY-FD1", "STRAY-CHILD"):
            assert marker in err
    assert "CLIENT-MESSAGE" not in err  # a child reading fd 0 got /dev/null
    facts = json.loads(err.split("FACTS ", 1)[1])
    assert all(fd >= 3 for fd in facts["private"])
    assert facts["cloexec"] == [True, True]
    assert facts["stdout_kept"]
    assert facts["fd1_is_stderr"]
    assert facts["restored"]
    assert facts["private_closed"] == [True, True]
    closed = {"": [], "0<&-": [0], "2>&-": [2]}[redirect]
    assert facts["closed_at_start"] == closed
