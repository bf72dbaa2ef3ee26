"""The two protocol eras one stdio connection can speak, and how the first request picks one.

* **Handshake era** (MCP 2025-03-26, 2025-06-18, 2025-11-25): ``initialize``, then
  ``notifications/initialized``, then requests ("Basic > Lifecycle").
* **Per-request era** (MCP 2026-07-28, what the official Python SDK 2.x calls "modern"):
  no handshake. The client probes ``server/discover``; every request then carries its own
  envelope in ``params._meta``: ``io.modelcontextprotocol/protocolVersion`` and
  ``io.modelcontextprotocol/clientCapabilities`` (``.../clientInfo`` optional). Every result
  carries ``resultType`` (``"complete"`` here) and a ``_meta`` ``io.modelcontextprotocol/
  serverInfo`` stamp; cacheable results (``server/discover``, ``tools/list``) carry the
  cache hints ``ttlMs`` and ``cacheScope``.

As in the SDK's own server (``mcp.server.runner.serve_dual_era_loop``), the client's first
request decides the era, once: a request other than ``initialize`` whose ``_meta`` carries
the protocol-version key opens the per-request era; anything else opens the handshake era.
Flow differs in one place on purpose: an enveloped request naming a version Flow does not
speak is answered ``-32022`` without deciding the era, so a client can still fall back to
``initialize``. A later claim from the other era is refused: ``initialize`` in the
per-request era gets ``-32022`` naming the versions served, an enveloped request in the
handshake era gets ``-32600``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from flow_mcp._framing import INVALID_REQUEST

#: Per-request-era revisions this server speaks, oldest first.
MODERN_PROTOCOL_VERSIONS: Final = ("2026-07-28",)
#: The JSON-RPC code for "no protocol version in common" (MCP 2026-07-28, "Versioning").
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
#: Envelope and stamp keys (``_meta`` names reserved by the specification).
PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
#: Methods whose results are cacheable and so carry ``ttlMs``/``cacheScope``.
CACHEABLE_METHODS: Final = frozenset({"server/discover", "tools/list"})

Era = Literal["undecided", "handshake", "modern"]

__all__ = [
    "CACHEABLE_METHODS",
    "MODERN_PROTOCOL_VERSIONS",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Era",
    "EraError",
    "envelope_version",
    "has_envelope",
    "opening_era",
    "stamp_result",
]


class EraError(Exception):
    """A request that does not fit the era: carries the JSON-RPC error to answer with."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


#: The one revision that had JSON-RPC batches (2025-06-18 removed them).
BATCH_PROTOCOL_VERSION: Final = "2025-03-26"


def batch_refusal(era: Era, negotiated: str | None) -> str | None:
    """Why a JSON-RPC batch is refused on this connection, or None when it is served.

    Batches belong to MCP 2025-03-26 ("Basic > Messages > Batching"): served once a handshake
    negotiated exactly that revision, refused (``-32600``) before it and for every other one.
    """
    if era == "handshake" and negotiated == BATCH_PROTOCOL_VERSION:
        return None
    return (
        f"JSON-RPC batches are served only after initialize negotiated {BATCH_PROTOCOL_VERSION} "
        f"(this session: {negotiated or 'not initialized'}; 2025-06-18 removed batches)"
    )


def has_envelope(params: Any) -> bool:
    """Whether ``params._meta`` carries the per-request protocol-version key."""
    if not isinstance(params, Mapping):
        return False
    meta = params.get("_meta")
    return isinstance(meta, Mapping) and PROTOCOL_VERSION_KEY in meta


def opening_era(method: str, params: Any) -> Era:
    """The era a first request opens ("undecided" for an envelope naming an unknown version)."""
    if method == "initialize" or not has_envelope(params):
        return "handshake"
    version = params["_meta"].get(PROTOCOL_VERSION_KEY)
    return "modern" if version in MODERN_PROTOCOL_VERSIONS else "undecided"


def unsupported(requested: Any, supported: tuple[str, ...], why: str) -> EraError:
    """``-32022`` with ``data = {"supported": [...], "requested": ...}``."""
    data: dict[str, Any] = {"supported": list(supported)}
    if isinstance(requested, str):
        data["requested"] = requested
    return EraError(UNSUPPORTED_PROTOCOL_VERSION, f"Unsupported protocol version: {why}", data)


def envelope_version(method: str, params: Any, handshake_versions: tuple[str, ...]) -> str:
    """Validate a per-request envelope; return the protocol version it names.

    Raises:
        EraError: ``-32602`` when ``_meta`` or one of its two required keys is missing or the
            version is not a string; ``-32022`` when the version is not one this server
            speaks (``data.supported`` lists every version, handshake ones included, so an
            older client knows it can still send ``initialize``).
    """
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    if not isinstance(meta, Mapping):
        raise EraError(
            -32602,
            f"Invalid params: {method} needs params._meta carrying {PROTOCOL_VERSION_KEY!r} "
            f"and {CLIENT_CAPABILITIES_KEY!r} (MCP 2026-07-28 per-request envelope)",
        )
    missing = [k for k in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if k not in meta]
    if missing:
        raise EraError(
            -32602,
            f"Invalid params: params._meta is missing the envelope key(s): {', '.join(missing)}",
        )
    version = meta[PROTOCOL_VERSION_KEY]
    if not isinstance(version, str):
        raise EraError(-32602, f"Invalid params: {PROTOCOL_VERSION_KEY} must be a string")
    if version not in MODERN_PROTOCOL_VERSIONS:
        raise unsupported(
            version,
            (*reversed(MODERN_PROTOCOL_VERSIONS), *handshake_versions),
            f"{version!r} is not served; this server speaks "
            f"{', '.join(MODERN_PROTOCOL_VERSIONS)} per request, or the initialize handshake",
        )
    return version


def refuse_envelope_in_handshake_era() -> EraError:
    """``-32600`` for an enveloped request on a connection opened with ``initialize``."""
    return EraError(
        INVALID_REQUEST,
        "Invalid Request: this connection serves the initialize handshake era; requests "
        "carrying the 2026-07-28 per-request envelope are not accepted on it",
    )


def stamp_result(
    method: str, result: dict[str, Any], server_info: dict[str, Any]
) -> dict[str, Any]:
    """A per-request-era result: ``resultType``, cache hints where cacheable, serverInfo stamp.

    Returns a new dict; ``result`` is not changed.
    """
    out = dict(result)
    if method in CACHEABLE_METHODS:
        # Flow's tools and capabilities never change while it runs, but a TTL of 0 keeps the
        # promise minimal; "private": the answer describes this operator's server.
        out.setdefault("ttlMs", 0)
        out.setdefault("cacheScope", "private")
    out.setdefault("resultType", "complete")
    meta = out.get("_meta")
    meta = dict(meta) if isinstance(meta, Mapping) else {}
    meta.setdefault(SERVER_INFO_KEY, server_info)
    out["_meta"] = meta
    return out
