"""Server entry: options, the stdio takeover, signals and the session's lifetime.

Public entry points (all re-exported by ``flow_mcp``):

* :func:`main` — ``flow-mcp [options]``; parses ``argv`` with argparse and calls :func:`serve`.
* :func:`serve` — takes :class:`ServerOptions` (or an argv list) and serves stdio until EOF;
  this is what ``flow serve`` calls.
* :func:`run_server` — the same with the descriptors and signal handling spelled out, for
  embedding and tests.

Exit codes: ``0`` the client closed stdin (or stopped reading); ``1`` the session was closed
after a frame over :data:`~flow_mcp.MAX_FRAME_BYTES`; ``2`` configuration or usage error
(nothing was served: the message is one line on stderr, which MCP clients show when a server
fails to start); ``130`` interrupted by SIGINT (Ctrl-C) or SIGTERM, the code every Flow
entry point uses for an interrupted session (``docs/architecture.md``, "Exit codes").

Stdout is protocol only (MCP 2025-11-25, "Basic > Transports > stdio": the server must not
write anything else there). :func:`run_server` therefore takes over stdin and stdout with
``flow_core.StdioTakeover`` for the whole session: the real stdout and stdin move to private
close-on-exec descriptors above 2 used only for frames, descriptor 1 writes to stderr and
descriptor 0 reads ``/dev/null`` (a check's output or a stray ``print()`` lands on stderr; no
child process can read the client's messages), and all is put back on return. Started with
stdin closed, the server reads end-of-file and exits 0; with stdout closed it serves nothing
and exits 2.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NoReturn

from flow_core import (
    EDITOR_TIMEOUT_DEFAULT,
    EDITOR_TIMEOUT_MAX,
    EDITOR_TIMEOUT_MIN,
    EXIT_CODES,
    ConfigError,
    EditorBridge,
    FlowError,
    Interrupts,
    LoadedConfig,
    Runtime,
    StdioTakeover,
    kill_all_process_groups,
    load_config,
    open_runtime,
)
from flow_mcp.__about__ import __version__
from flow_mcp._framing import MAX_FRAME_BYTES, DescriptorFrameReader, FrameWriter
from flow_mcp._results import DEFAULT_MAX_RESULT_CHARS, MIN_MAX_RESULT_CHARS
from flow_mcp._session import Session
from flow_mcp._tools import FlowTools, ProgressRelay

EXIT_OK: Final = 0
EXIT_FRAME: Final = 1  # the session was closed after an oversized frame
EXIT_USAGE: Final = EXIT_CODES["usage"]  # 2: configuration or usage, nothing was served
EXIT_INTERRUPTED: Final = EXIT_CODES["interrupted"]  # 130: SIGINT or SIGTERM


INSTRUCTIONS: Final = (
    "Flow runs bounded, host-verified planner -> coder -> reviewer tasks in one workspace with "
    "a local model. flow_status shows the configuration; flow_check runs the operator's named "
    "checks; flow_run takes a task and reports whether the change is verified. Requests are "
    "served one at a time."
)


@dataclass(frozen=True)
class ServerOptions:
    """What ``flow-mcp`` and ``flow serve`` accept.

    Attributes:
        workspace: the project root (overrides ``workspace_dir`` from configuration).
        config_file: an operator TOML file to load after the user file.
        trusted: allow edits and the configured named checks.
        model: a model name that overrides every role.
        nvim_socket: a private Neovim socket for the Rose bridge (needs ``flow-mcp[editor]``).
        editor_timeout: editor request timeout in seconds, within flow-core's
            ``EDITOR_TIMEOUT_MIN``-``EDITOR_TIMEOUT_MAX``.
        max_frame_bytes: the frame size limit in bytes.
        max_result_chars: the cap on one tool result in JSON characters (at least
            ``MIN_MAX_RESULT_CHARS``); past it the diff is cut and the result names
            ``flow show RUN_ID --diff`` (flow-mcp README, "Results").
    """

    workspace: str | Path | None = None
    config_file: str | Path | None = None
    trusted: bool = False
    model: str | None = None
    nvim_socket: str | None = None
    editor_timeout: float = EDITOR_TIMEOUT_DEFAULT
    max_frame_bytes: int = MAX_FRAME_BYTES
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS


def _editor_timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not EDITOR_TIMEOUT_MIN <= value <= EDITOR_TIMEOUT_MAX:
        raise argparse.ArgumentTypeError(
            f"must be between {EDITOR_TIMEOUT_MIN} and {EDITOR_TIMEOUT_MAX:g} seconds"
        )
    return value


def _result_chars(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < MIN_MAX_RESULT_CHARS:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_MAX_RESULT_CHARS} characters")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse whose usage error line ends with its code, like every Flow error line."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} [usage_error]\n")


def build_parser(prog: str = "flow-mcp") -> argparse.ArgumentParser:
    """The argparse parser for ``flow-mcp`` (``flow serve`` takes the same options)."""
    parser = _Parser(
        prog=prog,
        description=(
            "Flow's MCP server over stdio: newline-delimited JSON-RPC 2.0 (MCP 2025-11-25) "
            "with three tools, flow_status, flow_check and flow_run. Stdout carries protocol "
            "only; diagnostics go to stderr."
        ),
        epilog=(
            "exit codes: 0 stdin closed; 1 oversized frame; 2 configuration or usage error; "
            "130 interrupted (SIGINT or SIGTERM)"
        ),
    )
    parser.add_argument(
        "--workspace",
        metavar="DIR",
        help="project root; a relative path is resolved against the current directory",
    )
    parser.add_argument(
        "--config", dest="config_file", metavar="FILE", help="operator configuration (TOML)"
    )
    parser.add_argument(
        "--trusted", action="store_true", help="allow edits and the configured named checks"
    )
    parser.add_argument("--model", metavar="NAME", help="use this model for every role")
    parser.add_argument(
        "--nvim",
        dest="nvim_socket",
        metavar="SOCKET",
        help="private Neovim socket for the Rose editor bridge (needs flow-mcp[editor])",
    )
    parser.add_argument(
        "--editor-timeout",
        type=_editor_timeout,
        default=EDITOR_TIMEOUT_DEFAULT,
        metavar="SECONDS",
        help=(
            f"editor request timeout, {EDITOR_TIMEOUT_MIN:g}-{EDITOR_TIMEOUT_MAX:g} seconds "
            f"(default: {EDITOR_TIMEOUT_DEFAULT:g})"
        ),
    )
    parser.add_argument(
        "--max-result-chars",
        type=_result_chars,
        default=DEFAULT_MAX_RESULT_CHARS,
        metavar="N",
        help=(
            "cap on one tool result in JSON characters; past it the diff is cut and the result "
            f"says `flow show RUN_ID --diff` (default: {DEFAULT_MAX_RESULT_CHARS}, "
            f"at least {MIN_MAX_RESULT_CHARS})"
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def parse_options(argv: Sequence[str] | None = None) -> ServerOptions:
    """Parse ``flow-mcp`` arguments.

    Raises:
        SystemExit: ``--help``/``--version`` (code 0) or a usage error (code 2).
    """
    ns = build_parser().parse_args(None if argv is None else list(argv))
    return ServerOptions(
        workspace=ns.workspace,
        config_file=ns.config_file,
        trusted=ns.trusted,
        model=ns.model,
        nvim_socket=ns.nvim_socket,
        editor_timeout=ns.editor_timeout,
        max_result_chars=ns.max_result_chars,
    )


def main(argv: list[str] | None = None) -> int:
    """The ``flow-mcp`` console script. Returns the exit code (see the module docstring)."""
    try:
        options = parse_options(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    return serve(options)


def serve(options: ServerOptions | Sequence[str] | None = None) -> int:
    """Serve MCP on this process's stdin/stdout until EOF or a signal.

    Args:
        options: parsed options, or ``flow-mcp`` arguments to parse (None: ``sys.argv[1:]``).

    Returns:
        The exit code (see the module docstring).
    """
    if not isinstance(options, ServerOptions):
        return main(None if options is None else list(options))
    return run_server(options)


def _err(line: str) -> None:
    sys.stderr.write(f"flow-mcp: {line}\n")
    sys.stderr.flush()


def _connect_editor(socket: str, options: ServerOptions, workspace: str) -> EditorBridge:
    """Connect the Rose bridge; flow-rose is imported only here (the ``editor`` extra)."""
    try:
        import flow_rose
    except ImportError as err:
        raise ConfigError(
            "--nvim needs the Rose editor bridge, which is not installed; "
            "install it with: pip install 'flow-mcp[editor]'",
            code="editor_unavailable",
        ) from err
    bridge: EditorBridge = flow_rose.RoseBridge.connect(
        socket, workspace=workspace, timeout=options.editor_timeout
    )
    return bridge


def _hint_when_typed_at() -> None:
    """Say on stderr what this program is when a person started it on a terminal.

    An MCP client starts ``flow-mcp`` with pipes; stdin being a terminal means somebody typed
    the command, and a silent wait for JSON-RPC frames would look like a hang.
    """
    if os.isatty(0):  # False for a closed descriptor too
        _err(
            "this is an MCP server: it speaks JSON-RPC 2.0 (one message per line) on stdin and "
            "stdout and is started by an MCP client, not typed at. Register it with a client, "
            "e.g. `claude mcp add --scope user flow -- /absolute/path/to/flow-mcp --workspace "
            "/absolute/project --config /absolute/flow.toml` (flow-mcp README, 'Usage'). "
            "Waiting for a client on stdin; Ctrl-D or Ctrl-C stops."
        )


class _Stop:
    """flow-core's signal rule for the server: the first signal interrupts, the second forces.

    The first signal raises ``KeyboardInterrupt`` (the runtime turns that into an
    "interrupted" report after killing its check process groups), except while a frame is
    being written: then the interrupt is deferred until that frame is whole. A second signal
    forces: ``KeyboardInterrupt`` at once, even in the cleanup (each cleanup step still runs).
    """

    def __init__(self, writer: FrameWriter) -> None:
        self.code: int | None = None
        self._writer = writer
        self._deferred = False
        writer.after_write = self._after_write
        self.signals = Interrupts(self._interrupt)
        self.handler = self.signals.handler

    def _interrupt(self, signum: int) -> bool:
        self.code = EXIT_INTERRUPTED
        if self._writer.busy:
            self._deferred = True
            return True
        raise KeyboardInterrupt

    def _after_write(self) -> None:
        if self._deferred:
            self._deferred = False
            raise KeyboardInterrupt


def run_server(
    options: ServerOptions,
    *,
    stdin_fd: int | None = None,
    stdout_fd: int | None = None,
    handle_signals: bool = True,
) -> int:
    """Load configuration, build the runtime and serve one MCP session.

    Args:
        options: the server options.
        stdin_fd: read frames from this descriptor. ``None`` (with ``stdout_fd`` None) takes
            over the process's stdin and stdout as described in the module docstring.
        stdout_fd: write frames to this descriptor (used as given, never redirected).
        handle_signals: install SIGINT/SIGTERM handlers (main thread only).

    Returns:
        The exit code: 0, 1, 2 or 130 (see the module docstring).
    """
    problem = _option_problem(options)
    if problem is not None:
        _err(problem)
        return EXIT_USAGE
    try:
        loaded = load_config(
            config_file=options.config_file, workspace=options.workspace, model=options.model
        )
    except FlowError as err:
        _err(f"configuration error: {err.message} [{err.code}]")
        return EXIT_USAGE
    workspace = str(loaded.config.workspace_dir)

    try:
        bridge = _editor(options, workspace)
    except _EditorRefused as refused:
        _err(str(refused))
        return EXIT_USAGE

    if stdin_fd is not None or stdout_fd is not None:
        in_fd = 0 if stdin_fd is None else stdin_fd
        out_fd = 1 if stdout_fd is None else stdout_fd
        return _serve(options, loaded, bridge, fds=(in_fd, out_fd), handle_signals=handle_signals)
    _hint_when_typed_at()
    with StdioTakeover(stdin=True) as stdio:
        if 1 in stdio.closed_at_start:
            _err("stdout is closed, so no reply could reach the client; nothing was served")
            if bridge is not None:
                _quietly("closing the editor bridge", bridge.close)
            return EXIT_USAGE
        return _serve(
            options,
            loaded,
            bridge,
            fds=(stdio.stdin_fd, stdio.stdout_fd),
            handle_signals=handle_signals,
        )


def _option_problem(options: ServerOptions) -> str | None:
    """The usage error line for an option out of its bounds, else None."""
    if not EDITOR_TIMEOUT_MIN <= options.editor_timeout <= EDITOR_TIMEOUT_MAX:
        return (
            f"--editor-timeout must be between {EDITOR_TIMEOUT_MIN} and "
            f"{EDITOR_TIMEOUT_MAX:g} seconds, not {options.editor_timeout:g} [usage_error]"
        )
    if options.max_result_chars < MIN_MAX_RESULT_CHARS:
        return (
            f"--max-result-chars must be at least {MIN_MAX_RESULT_CHARS}, "
            f"not {options.max_result_chars} [usage_error]"
        )
    return None


class _EditorRefused(Exception):
    """The editor bridge could not be attached; the message is the line for stderr."""


def _editor(options: ServerOptions, workspace: str) -> EditorBridge | None:
    """The editor bridge ``--nvim-socket`` names, attached; None without the option.

    Raises:
        _EditorRefused: with the stderr line naming the code.
    """
    if not options.nvim_socket:
        return None
    try:
        return _connect_editor(options.nvim_socket, options, workspace)
    except FlowError as err:
        raise _EditorRefused(f"editor bridge error: {err.message} [{err.code}]") from err
    except Exception as err:  # a bridge that fails in an unplanned way still stops here
        raise _EditorRefused(
            f"editor bridge error: {type(err).__name__}: {err} [editor_unavailable]"
        ) from err


def _serve(
    options: ServerOptions,
    loaded: LoadedConfig,
    bridge: EditorBridge | None,
    *,
    fds: tuple[int, int],
    handle_signals: bool,
) -> int:
    """Build the runtime and serve one session on ``fds`` (frames in, frames out; see
    run_server)."""
    in_fd, out_fd = fds
    workspace = str(loaded.config.workspace_dir)
    writer = FrameWriter(out_fd)
    relay = ProgressRelay(writer.send)
    runtime = _open_runtime(options, loaded, bridge, relay)
    if runtime is None:
        return EXIT_USAGE

    tools = FlowTools(
        runtime,
        workspace=workspace,
        trusted=options.trusted,
        progress=relay,
        max_result_chars=options.max_result_chars,
    )
    session = Session(tools, writer, server_version=__version__, instructions=INSTRUCTIONS)
    stop = _Stop(writer)
    session.stop_requested = lambda: stop.code is not None
    session.prepare()
    gc.freeze()  # startup objects never need collecting; keeps GC pauses out of round trips
    if handle_signals:
        stop.signals.install()

    # The reader thread (see _inbox) blocks SIGINT/SIGTERM; the main thread, which waits on
    # the inbox with a short timeout, runs the handlers.
    reader = DescriptorFrameReader(in_fd, limit=options.max_frame_bytes)
    code = EXIT_OK
    try:
        code = session.serve(reader)
    except KeyboardInterrupt:
        code = stop.code if stop.code is not None else EXIT_INTERRUPTED
    except BrokenPipeError:
        _err("the client stopped reading; closing")
        code = EXIT_OK
    finally:
        try:
            stopped = _wind_down(stop, runtime, relay, bridge)
            if stopped is not None:
                code = stopped
        except KeyboardInterrupt:  # a second signal forces: stop cleaning up
            code = EXIT_INTERRUPTED
        finally:
            stop.signals.restore()
            reader.close()
    return code


def _open_runtime(
    options: ServerOptions,
    loaded: LoadedConfig,
    bridge: EditorBridge | None,
    relay: ProgressRelay,
) -> Runtime | None:
    """The session's runtime, wired like the CLI's and the TUI's (flow_core._factory): every
    flow_run is recorded in the user's run store (flow runs). None, after saying why on
    stderr and closing the bridge, when it cannot start."""
    try:
        return open_runtime(loaded, trusted=options.trusted, on_event=relay, editor=bridge)
    except FlowError as err:
        _err(f"cannot start the runtime: {err.message} [{err.code}]")
        if bridge is not None:
            _quietly("closing the editor bridge", bridge.close)
        return None


def _wind_down(
    stop: _Stop, runtime: Runtime, relay: ProgressRelay, bridge: EditorBridge | None
) -> int | None:
    """Close what the session used, after stopping its checks when a signal stopped it.

    Returns:
        The stop's exit code when a signal stopped the session, else None.
    """
    code = None
    if stop.code is not None:
        code = stop.code
        _err("interrupted: stopping checks and closing")
        _interrupt(runtime)
    _quietly("stopping progress heartbeats", relay.close)
    _quietly("closing the runtime", runtime.close)
    if bridge is not None:
        _quietly("closing the editor bridge", bridge.close)
    return code


def _interrupt(runtime: Runtime) -> None:
    _quietly("interrupting the runtime", runtime.interrupt)
    _quietly("killing check process groups", kill_all_process_groups)


def _quietly(what: str, action: Any) -> None:
    try:
        action()
    except (Exception, KeyboardInterrupt) as err:
        _err(f"{what} failed: {type(err).__name__}: {err}")


__all__ = [
    "ServerOptions",
    "build_parser",
    "main",
    "parse_options",
    "run_server",
    "serve",
]
