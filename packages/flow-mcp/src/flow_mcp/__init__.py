"""flow-mcp: Flow's MCP stdio server (MCP 2025-11-25) with flow_status, flow_check, flow_run.

A hand-written, sequential server in three layers, like the MCP python-sdk: framing
(``_framing``: stdin lines ↔ JSON values), session (``_session``: JSON-RPC and the lifecycle)
and tools (``_tools``: the three tools over ``flow_core.Runtime``). ``_server`` wires them to
stdio. ``flow serve`` (flow-cli) calls :func:`serve`.
"""

from flow_mcp.__about__ import __version__
from flow_mcp._framing import (
    MAX_FRAME_BYTES,
    DescriptorFrameReader,
    FrameError,
    FrameReader,
    FrameWriter,
)
from flow_mcp._server import (
    EDITOR_TIMEOUT_DEFAULT,
    EDITOR_TIMEOUT_MAX,
    EDITOR_TIMEOUT_MIN,
    ServerOptions,
    build_parser,
    main,
    parse_options,
    run_server,
    serve,
)
from flow_mcp._session import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    JsonRpcError,
    Session,
)
from flow_mcp._tools import TOOL_NAMES, FlowTools, ProgressRelay, tool_definitions

__all__ = [
    "EDITOR_TIMEOUT_DEFAULT",
    "EDITOR_TIMEOUT_MAX",
    "EDITOR_TIMEOUT_MIN",
    "LATEST_PROTOCOL_VERSION",
    "MAX_FRAME_BYTES",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "TOOL_NAMES",
    "DescriptorFrameReader",
    "FlowTools",
    "FrameError",
    "FrameReader",
    "FrameWriter",
    "JsonRpcError",
    "ProgressRelay",
    "ServerOptions",
    "Session",
    "__version__",
    "build_parser",
    "main",
    "parse_options",
    "run_server",
    "serve",
    "tool_definitions",
]
