"""Which hosts are this machine, and which URL is this installation's own sandbox: the one rule
the URL policy (tools/contours/endpoints.py), the client's in-process routing, the sandbox's notification
delivery, OAuth's redirect URIs and the tools' return URLs share."""

from __future__ import annotations

import functools
import ipaddress
from urllib.parse import urlsplit

from django.conf import settings

LOOPBACK_NAMES = frozenset({"localhost"})
# The Django test client's host: requests to it never leave the process.
TEST_CLIENT_HOST = "testserver"


# Pure functions of their argument, asked on every upstream call (the client's routing): the
# answers for the few URLs and hosts a process meets are kept.
@functools.lru_cache(maxsize=256)
def is_loopback(host: str | None) -> bool:
    """localhost, 127.0.0.0/8 or ::1 (a host as urlsplit gives it: no brackets, any case)."""
    if not host:
        return False
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def own_host() -> str | None:
    """This gateway's public host name (GATEWAY_SITE_URL's)."""
    return urlsplit(settings.GATEWAY_SITE_URL).hostname


def is_own_sandbox(url: str) -> bool:
    """This project's sandbox: the configured URL, or its mount on a loopback host or on this
    gateway's own host (another process of the same installation, as the cluster tests run)."""
    sandbox = settings.INVOICEBOX_SANDBOX_BASE_URL.rstrip("/")
    if url == sandbox:
        return True
    parts, mount = urlsplit(url), urlsplit(sandbox).path.rstrip("/")
    return (
        parts.scheme in ("http", "https")
        and parts.path.rstrip("/") == mount
        and (is_loopback(parts.hostname) or parts.hostname == own_host())
        and not parts.query
        and not parts.fragment
        and not parts.username
    )


DEFAULT_PORTS = {"http": 80, "https": 443}


@functools.lru_cache(maxsize=256)
def _address(url: str) -> tuple[str, str, int | None, str] | None:
    """(scheme, host, port, path) of a plain http(s) URL, the default port filled in."""
    parts = urlsplit(url.strip())
    if (
        parts.scheme not in DEFAULT_PORTS
        or not parts.hostname
        or parts.query
        or parts.fragment
        or parts.username is not None
    ):
        return None
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError:
        return None
    # Loopback names are one host (localhost, 127.0.0.1, ::1): the port tells servers apart.
    host = "loopback" if is_loopback(parts.hostname) else parts.hostname.lower()
    return parts.scheme, host, port, parts.path.rstrip("/")


def is_in_process_sandbox(url: str) -> bool:
    """The sandbox this very process serves: INVOICEBOX_SANDBOX_BASE_URL exactly (scheme, host,
    port and path; localhost and 127.0.0.1 count as one host), or one of
    INVOICEBOX_SANDBOX_IN_PROCESS_URLS. Another port on loopback is another server (another
    gateway, a test double): it is asked over the network, never answered here in its name."""
    address = _address(url)
    if address is None:
        return False
    own = [
        settings.INVOICEBOX_SANDBOX_BASE_URL,
        *getattr(settings, "INVOICEBOX_SANDBOX_IN_PROCESS_URLS", []),
    ]
    return any(address == _address(candidate) for candidate in own)
