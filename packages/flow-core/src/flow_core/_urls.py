"""The model-server URL rule, shared by config validation and the HTTP backends.

A base URL must be ``http``/``https`` with a host, no user info, no query or fragment; a host
that is not loopback (``localhost``, 127.0.0.0/8, ``::1``) needs an explicit ``allow_remote``
(``docs/architecture.md``, "Trust"). The config loader reports a violation in TOML terms; a
backend built directly raises ``BackendError``. Neither needs httpx for this.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from flow_core._codes import ErrorCode

__all__ = ["is_loopback_host", "url_problem"]


def is_loopback_host(host: str) -> bool:
    """True for ``localhost``, any 127.0.0.0/8 address and ``::1``.

    Args:
        host: a URL host as ``urlsplit(...).hostname`` gives it (lower case, no brackets).
    """
    h = host.lower().rstrip(".")
    if h == "localhost":
        return True
    try:
        addr = ipaddress.ip_address(h)
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv4Address):
        return addr in ipaddress.IPv4Network("127.0.0.0/8")
    return addr == ipaddress.IPv6Address("::1")


def url_problem(url: str, *, allow_remote: bool) -> tuple[ErrorCode, str] | None:
    """``(code, message)`` for an unusable base URL, else ``None``.

    The code is ``remote_refused`` when only ``allow_remote`` is missing (the URL itself is
    fine) and ``backend_malformed`` when no setting would make the URL usable.
    """
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a port out of range or not a number
    except ValueError as err:
        return "backend_malformed", f"{url!r} is not a valid URL ({err})"
    if parts.scheme not in ("http", "https"):
        return (
            "backend_malformed",
            f"{url!r} is not an http:// or https:// URL (only http and https are accepted)",
        )
    if not parts.hostname:
        return "backend_malformed", f"{url!r} has no host"
    if parts.username is not None or parts.password is not None:
        return "backend_malformed", f"{url!r} carries user info; Flow sends no credentials"
    if parts.query or parts.fragment:
        return "backend_malformed", f"{url!r} may not have a query or fragment"
    if not allow_remote and not is_loopback_host(parts.hostname):
        return (
            "remote_refused",
            f"{url!r} is not a loopback address (127.0.0.0/8, ::1, localhost) "
            "and allow_remote is false",
        )
    return None
