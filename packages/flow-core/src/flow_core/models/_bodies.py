"""Request and response bodies of the model backends: JSON encoded strictly, replies read
under a byte cap while they arrive.

The rules are ``docs/architecture.md``'s "Trust" section (response sizes are bounded while they
arrive). ``flow_core.models._http`` re-exports these names; nothing here imports httpx at run
time.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from flow_core._errors import BackendError
from flow_core._unicode import valid_text

if TYPE_CHECKING:
    import httpx

__all__ = ["encode_json_body", "excerpt", "iter_lines_capped", "read_capped"]


def excerpt(body: bytes | str, limit: int = 300) -> str:
    """The first ``limit`` characters of a body, on one line, for error messages."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _sanitized(value: Any, depth: int = 0) -> Any:
    """``value`` with lone surrogates replaced by U+FFFD and NaN/Infinity by null."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if depth > 200:
        return value
    if isinstance(value, Mapping):
        return {_sanitized(k, depth + 1): _sanitized(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_sanitized(v, depth + 1) for v in value]
    return value


def encode_json_body(body: Any, *, server: str) -> bytes:
    """``body`` as compact UTF-8 JSON (RFC 8259: no NaN, valid Unicode).

    A lone UTF-16 surrogate anywhere in the body (text from the model, a task given on a
    command line with undecodable bytes, an editor's reply) is replaced by U+FFFD rather than
    sent as an escape some servers refuse; a NaN or Infinity (which JSON cannot carry) becomes
    null.

    Raises:
        BackendError: code ``request_unencodable`` for nesting too deep or a value of a type
            JSON has no form for; the message names the problem, never the request's content.
    """

    def dump(value: Any) -> bytes:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.encode("utf-8")

    try:
        try:
            return dump(body)
        except (UnicodeEncodeError, ValueError):
            return dump(_sanitized(body))
    except (ValueError, TypeError, RecursionError, UnicodeEncodeError) as err:
        reason = excerpt(str(err), 120) if not isinstance(err, RecursionError) else "too deep"
        raise BackendError(
            f"the request to {server} could not be encoded as JSON ({type(err).__name__}: "
            f"{reason}); nothing was sent",
            code="request_unencodable",
        ) from err


def read_capped(
    response: httpx.Response, max_bytes: int, *, server: str, truncate: bool = False
) -> bytes:
    """Read a streaming response body, counting bytes as they arrive.

    Both the decoded bytes and the bytes received on the wire count against the cap (the
    client also asks for ``Accept-Encoding: identity``, so the two are normally equal).

    Args:
        response: an open streaming response.
        max_bytes: the most bytes accepted.
        server: a human name for messages.
        truncate: return the first ``max_bytes`` bytes instead of raising (for error bodies).

    Raises:
        BackendError: code ``response_too_large`` once more than ``max_bytes`` arrived.
    """
    chunks: list[bytes] = []
    total = 0
    for chunk in response.iter_bytes():
        total += len(chunk)
        if max(total, response.num_bytes_downloaded) > max_bytes:
            if truncate:
                chunks.append(chunk[: max(0, max_bytes - (total - len(chunk)))])
                break
            raise _too_large(server, max_bytes)
        chunks.append(chunk)
    return b"".join(chunks)


def iter_lines_capped(response: httpx.Response, max_bytes: int, *, server: str) -> Iterator[bytes]:
    """Yield the non-blank lines of an NDJSON stream, counting bytes against ``max_bytes``.

    Raises:
        BackendError: code ``response_too_large`` once more than ``max_bytes`` arrived.
    """
    total = 0
    pending = b""
    for chunk in response.iter_bytes():
        total += len(chunk)
        if max(total, response.num_bytes_downloaded) > max_bytes:
            raise _too_large(server, max_bytes)
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        for line in lines:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def _too_large(server: str, max_bytes: int) -> BackendError:
    return BackendError(
        f"{server} sent more than {max_bytes} bytes; the reply was cut off "
        "(fix: ask for a shorter answer or raise max_response_bytes)",
        code="response_too_large",
    )
