"""Fixtures for Flow's end-to-end suite: one real model server for the whole session.

The server (llama.cpp + SmolLM2-135M, see ``modelserver.py``) is started once, on a free
loopback port in its own process group, and stopped by a finaliser, so it goes away even when
a test fails or the session is interrupted. ``pytest_sessionfinish`` then checks that its
process group is really gone.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness
import modelserver

#: The sample project has a failing test on purpose; it is data, not part of this suite.
collect_ignore = ["sample_project", "demo.py"]

_STARTED: list[modelserver.ModelServer] = []


@pytest.fixture(scope="session")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[modelserver.ModelServer]:
    """The running model server (tool-calling and plain-text names of the same weights)."""
    problem = modelserver.model_requirements_missing()
    if problem:
        if os.environ.get("FLOW_SKIP_MODEL_INSTALL") == "1":
            pytest.skip(f"real model not installed (FLOW_SKIP_MODEL_INSTALL=1): {problem}")
        pytest.fail(f"the e2e suite needs the real model server: {problem}")
    log_dir = tmp_path_factory.mktemp("modelserver")
    server = modelserver.start_model_server(log_dir=log_dir)
    _STARTED.append(server)
    try:
        yield server
    finally:  # runs even when tests failed or the session was interrupted
        server.stop()


@pytest.fixture
def sandbox(tmp_path: Path) -> dict[str, Path]:
    """A copy of the sample project, a sibling directory, a HOME and an operator-config dir.

    Layout (all under ``tmp_path``)::

        project/     the workspace (a copy of e2e/sample_project)
        sibling/     a neighbour with a file; must not change
        operator/    where the operator config goes (outside the workspace)
        home/        HOME and XDG_CONFIG_HOME for every Flow process
    """
    project = harness.copy_sample(tmp_path / "project")
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    (sibling / "notes.txt").write_text("outside the workspace\n", encoding="utf-8")
    (sibling / "calc.py").write_text("# a decoy with the same name\n", encoding="utf-8")
    operator = tmp_path / "operator"
    operator.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    return {"project": project, "sibling": sibling, "operator": operator, "home": home}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for server in _STARTED:
        try:
            os.killpg(server.pid, 0)
        except ProcessLookupError:
            continue
        except PermissionError:
            pass
        sys.stderr.write(f"\ne2e: the model server group {server.pid} is still alive\n")
        server.stop(grace_s=1)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    out = os.environ.get("FLOW_E2E_TIMINGS")
    if out and harness.RUN_TIMINGS:
        Path(out).write_text(json.dumps(harness.RUN_TIMINGS, indent=2) + "\n", encoding="utf-8")
