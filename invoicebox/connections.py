"""Pooled upstream HTTP clients: one httpx.Client per (base URL, token) per process.

Building an httpx.Client loads the CA bundle into a fresh SSL context (tens of milliseconds)
and opens a new TCP + TLS connection for every call. Here the SSL context is built once per
process, and each upstream account keeps one client with keep-alive connections. httpx's
sync client is safe to share between threads (its connection pool locks), which is what both
the WSGI workers and MCP (core calls on a thread pool under the ASGI loop) need.

The key holds the base URL and a digest of the token, so an owner who changes a contour's
address, token or mode (mode only ever changes the address and the token) gets a new client on
the next call; the old one is dropped. Requests carry the token in their own headers, and the
client keeps no cookies, so nothing of one call leaks into the next.
"""

from __future__ import annotations

import hashlib
import ssl
import threading
from collections import OrderedDict
from functools import lru_cache
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx
from django.conf import settings

# A gateway serves a handful of contours; more than this and the least recently used client
# is dropped (not closed: another thread may still be reading from it; its sockets close when
# it is collected).
MAX_CLIENTS = 64

_lock = threading.Lock()
_clients: OrderedDict[tuple[str, str, float, str], httpx.Client] = OrderedDict()


@lru_cache(maxsize=1)
def ssl_context() -> ssl.SSLContext:
    """The CA bundle, loaded once per process (httpx's default verification, built by hand)."""
    return httpx.create_ssl_context()


def _no_cookies() -> httpx.Cookies:
    return httpx.Cookies(CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])))


# The API's path prefixes (docs api/api.md:30-31): /v3/, and /l3/ for Инвойсбокс.Бизнес shops.
API_PREFIXES = ("v3", "l3")


def build(
    base_url: str,
    *,
    timeout: float,
    transport: httpx.BaseTransport | None = None,
    prefix: str = "v3",
) -> httpx.Client:
    """A client for the API under base_url and its prefix, with the shared SSL context."""
    if prefix not in API_PREFIXES:
        raise ValueError(f"unknown API prefix {prefix!r}")
    return httpx.Client(
        base_url=base_url.rstrip("/") + "/" + prefix,
        transport=transport,
        verify=ssl_context(),
        timeout=timeout,
        follow_redirects=False,
        cookies=_no_cookies(),
        headers={"Accept": "application/json", "User-Agent": settings.INVOICEBOX_USER_AGENT},
    )


def send(
    client: httpx.Client,
    method: str,
    path: str,
    *,
    params: list[tuple[str, str | int | float | bool | None]] | None = None,
    content: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """`client.request(...)` without httpx.Client's per-request machinery (issue 44): the same
    request (the client's base URL, default headers and timeout) handed straight to the
    client's transport, and the answer read whole.

    What Client.send adds on top is unused here and measured at 0.2-0.5 ms of CPU per request
    (benchmarks/transport_ladder.py): auth and redirect loops (none: no auth, no redirects
    followed), event hooks (none), the cookie jar (which keeps nothing: _no_cookies()), an
    INFO log line (silenced in config/settings/operations.py). The transport, its connection
    pool, its timeouts and its error mapping (httpcore's to httpx's exceptions) are the
    client's own; a proxy from the environment too (the transport chosen for the URL)."""
    request_headers = client.headers.copy()
    if headers:
        request_headers.update(headers)
    request = httpx.Request(
        method,
        request_url(client.base_url, path, params),
        content=content,
        headers=request_headers,
        extensions={"timeout": client.timeout.as_dict()},
    )
    response = client._transport_for_url(request.url).handle_request(request)
    try:
        response.read()
    finally:
        response.close()
    response.request = request
    return response


def request_url(
    base_url: httpx.URL,
    path: str,
    params: list[tuple[str, str | int | float | bool | None]] | None = None,
) -> httpx.URL:
    """The URL Client.request would send to: the base URL, the path under it, the query
    encoded by httpx's QueryParams. Parsed once, where joining the path and then merging the
    params parsed it twice: 35-50 µs less CPU per request (issue 44, benchmarks/README.md).
    A `?` or `#` in the path is a character of the path, never a query's or fragment's start."""
    joined = path.lstrip("/").replace("?", "%3F").replace("#", "%23")
    query = str(httpx.QueryParams(params)) if params else ""
    return httpx.URL(f"{base_url}{joined}?{query}" if query else f"{base_url}{joined}")


def _key(base_url: str, token: str, timeout: float, prefix: str) -> tuple[str, str, float, str]:
    # Only a digest of the token is kept, as the limiter does: the secret is not a dict key.
    return base_url.rstrip("/"), hashlib.sha256(token.encode()).hexdigest(), timeout, prefix


def shared(base_url: str, token: str, *, timeout: float, prefix: str = "v3") -> httpx.Client:
    """The process's client for this upstream account; built on first use, then reused."""
    key = _key(base_url, token, timeout, prefix)
    with _lock:
        client = _clients.get(key)
        if client is not None:
            _clients.move_to_end(key)
            return client
    client = build(base_url, timeout=timeout, prefix=prefix)  # outside the lock: slow
    with _lock:
        winner = _clients.setdefault(key, client)
        _clients.move_to_end(key)
        while len(_clients) > MAX_CLIENTS:
            _clients.popitem(last=False)
    if winner is not client:  # another thread built one first; keep a single pool
        client.close()
    return winner


def forget_all() -> None:
    """Drop every pooled client (tests, and a worker that forked after using some)."""
    with _lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        client.close()
