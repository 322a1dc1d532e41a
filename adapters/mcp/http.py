"""Streamable HTTP at /mcp: Host/Origin checks, the contour key per request, the SDK transport
with sessions shared by every worker (manager.py)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from django.conf import settings
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.authentication import AuthCredentials
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from adapters.mcp import discovery, sessions
from adapters.mcp.manager import KEY_ID, SharedSessionManager
from adapters.mcp.relay import AnswerRelay
from adapters.mcp.server import Caller, build_server, run_sync
from tools import gateway, keys
from tools.models import ApiKey

PATH = "/mcp"
CHANNEL = "mcp-http"
CALLER = "invoicebox_gateway.caller"  # ASGI scope key the middleware fills in


def transport_security() -> TransportSecuritySettings:
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(settings.MCP_ALLOWED_HOSTS),
        allowed_origins=list(settings.MCP_ALLOWED_ORIGINS),
    )


def _authenticate(header: str, address: str | None = None) -> ApiKey | None:
    scheme, _, raw = header.partition(" ")
    if scheme.lower() != "bearer" or not raw.strip() or " " in raw.strip():
        return None
    key = ApiKey.authenticate(raw.strip())
    if key is not None:
        keys.note_address(key, address)
    return key


class ContourKeyAuth:
    """Refuses a wrong Host/Origin, then a missing or unknown key, before MCP sees the request.

    A known key becomes the Caller the tool handlers read, and the SDK's AuthenticatedUser:
    the session manager binds a session to the user that opened it, so another key on that
    session id is answered as if the session did not exist (404).
    """

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings,
                 sessions_manager: SharedSessionManager) -> None:
        self.app = app
        self.security = TransportSecurityMiddleware(security)
        self.sessions = sessions_manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        # Rebinding checks first: a hostile page must not reach the key lookup or the journal.
        refusal = await self.security.validate_request(request, is_post=False)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        header = request.headers.get("authorization", "")
        key = await run_sync(_authenticate, header,
                             request.client.host if request.client else None)
        if key is None:
            message = "ключ API не найден, отозван или истёк" if header else discovery.NO_KEY
            outcome = await run_sync(gateway.reject, None, "unauthenticated", message,
                                     channel=CHANNEL, actor="anonymous", tool=PATH)
            session_id = request.headers.get(MCP_SESSION_ID_HEADER)
            if session_id and await run_sync(sessions.end_if_key_inactive, session_id):
                await self.sessions.forget(session_id)  # a revoked key ends its sessions
            response = JSONResponse(outcome.as_dict(), status_code=401, headers={
                "WWW-Authenticate": discovery.challenge(request, PATH, invalid_key=bool(header))})
            await response(scope, receive, send)
            return
        caller = Caller(contour=key.contour, channel=CHANNEL, actor=f"key:{key.prefix}")
        user = AuthenticatedUser(AccessToken(token=key.prefix, client_id=f"api-key:{key.pk}",
                                             scopes=[], subject=key.contour.slug))
        await self.app({**scope, "user": user, "auth": AuthCredentials([]), CALLER: caller,
                        KEY_ID: key.pk}, receive, send)


async def caller_of_request(ctx: ServerRequestContext[Any, Any]) -> Caller:
    request = ctx.request
    caller = request.scope.get(CALLER) if isinstance(request, Request) else None
    if not isinstance(caller, Caller):
        raise MCPError(types.INVALID_REQUEST, "request not authenticated by the gateway")
    return caller


def build_mcp_app() -> tuple[ASGIApp, SharedSessionManager]:
    """The /mcp ASGI app and the session manager whose run() the outer lifespan must enter.

    2025-11-25 clients get sessions (Mcp-Session-Id) that any worker answers; 2026-07-28
    requests are routed by their MCP-Protocol-Version header to the SDK's per-request path.
    """
    server = build_server(caller_of_request)
    security = transport_security()
    relay = AnswerRelay(settings.MCP_REDIS_URL) if settings.MCP_REDIS_URL else None
    manager = SharedSessionManager(server, security_settings=security,
                                   idle_seconds=settings.MCP_SESSION_IDLE_SECONDS, relay=relay)
    return ContourKeyAuth(StreamableHTTPASGIApp(manager), security, manager), manager
