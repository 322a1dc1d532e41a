"""CORS for /mcp (issue 41): browser-based MCP clients on an origin of MCP_ALLOWED_ORIGINS.

Starlette's CORSMiddleware, outside the key check: a preflight from an allowed origin is
answered before authentication (a preflight carries no Authorization), and every answer to
that origin, a 401 included, names it in Access-Control-Allow-Origin and exposes the headers a
client must read (Mcp-Session-Id, WWW-Authenticate for the OAuth discovery). A request from
any other origin passes through untouched, to be refused by the Origin check (403).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.conf import settings
from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

METHODS = ("GET", "POST", "DELETE", "OPTIONS")
# What MCP clients send: the key, the session, the protocol era and its routing headers.
REQUEST_HEADERS = (
    "Authorization",
    "Content-Type",
    "Accept",
    "Mcp-Session-Id",
    "MCP-Protocol-Version",
    "Last-Event-ID",
    "Mcp-Method",
    "Mcp-Name",
)
EXPOSED_HEADERS = ("Mcp-Session-Id", "WWW-Authenticate", "MCP-Protocol-Version")
MAX_AGE_SECONDS = 3600


def origin_pattern(origins: Iterable[str]) -> str:
    """One regex for the allowlist, "scheme://host:*" meaning any port (as the Origin check)."""
    parts = []
    for origin in origins:
        escaped = re.escape(origin.rstrip("/"))
        parts.append(
            escaped[: -len(re.escape(":*"))] + r":[0-9]+" if origin.endswith(":*") else escaped
        )
    return "|".join(f"(?:{part})" for part in parts) or r"(?!)"


class McpCors(CORSMiddleware):
    """Starlette's CORS, applied only to an allowed Origin."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = Headers(scope=scope).get("origin") if scope["type"] == "http" else None
        if origin is None or not self.is_allowed_origin(origin):
            await self.app(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def with_cors(app: ASGIApp) -> ASGIApp:
    return McpCors(
        app,
        allow_origin_regex=origin_pattern(settings.MCP_ALLOWED_ORIGINS),
        allow_methods=METHODS,
        allow_headers=REQUEST_HEADERS,
        expose_headers=EXPOSED_HEADERS,
        max_age=MAX_AGE_SECONDS,
    )
