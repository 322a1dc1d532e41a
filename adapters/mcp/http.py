"""Streamable HTTP at /mcp: Host/Origin checks, the contour key (or OAuth grant) per request,
a dialog-less session's tools/call in the same thread hop (lean.py), the SDK transport with
sessions shared by every worker (manager.py)."""

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
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adapters import strict_json
from adapters.mcp import lean, sessions
from adapters.mcp.answers import is_call
from adapters.mcp.manager import CALLER, KEY_ID, RESUMED, SharedSessionManager
from adapters.mcp.relay import AnswerRelay
from adapters.mcp.server import Caller, build_server, run_sync
from adapters.oauth import challenge, grants
from tools.errors import Outcome
from tools.keys import scope as keys
from tools.models import ApiKey
from tools.pipeline import anonymous, gateway

PATH = "/mcp"
CHANNEL = "mcp-http"
# A session's POST up to this size is looked at before its key is checked, to see whether the
# lean path (lean.py) may answer it; a larger one goes on to the SDK path as it came.
LEAN_PEEK_LIMIT = 256 * 1024


def transport_security() -> TransportSecuritySettings:
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(settings.MCP_ALLOWED_HOSTS),
        allowed_origins=list(settings.MCP_ALLOWED_ORIGINS),
    )


def _authenticate(header: str, address: str | None = None, session_id: str | None = None,
                  use: bool = False) -> tuple[ApiKey | None, bool, sessions.SessionFacts | None]:
    """The key behind a contour key or an OAuth access token, whether it was the latter, and
    the key's live session named by the request (resumed here: one thread hop and one
    connection for both, not two; `use`: the request is a call, see sessions.resume)."""
    scheme, _, raw = header.partition(" ")
    if scheme.lower() != "bearer" or not raw.strip() or " " in raw.strip():
        return None, False, None
    key, by_oauth = grants.authenticate(raw.strip())
    if key is None:
        return None, by_oauth, None
    keys.note_address(key, address)
    return key, by_oauth, sessions.resume(session_id, key.pk, use) if session_id else None


async def _read_body(receive: Receive) -> tuple[list[Message], bytes | None]:
    """The request's messages as received, and its whole body (None when cut short): the
    messages are replayed to the app either way. The body's size and the time it takes are
    bounded before the request gets here (adapters/bounded_body.py)."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        if not message.get("more_body", False):
            return messages, b"".join(m.get("body", b"") for m in messages)


def _replaying(messages: list[Message], receive: Receive) -> Receive:
    queue = list(messages)

    async def replay() -> Message:
        return queue.pop(0) if queue else await receive()

    return replay


def _called_tools(body: bytes) -> list[str]:
    """Names of the tools/call requests in a JSON-RPC message or batch ([] if unreadable)."""
    try:
        parsed = strict_json.parse_body(body)
    except strict_json.JsonRefused:
        return []
    batch = parsed if isinstance(parsed, list) else [parsed]
    return [str(item.get("params", {}).get("name", "")) for item in batch
            if isinstance(item, dict) and item.get("method") == "tools/call"
            and isinstance(item.get("params"), dict)]


def _scope_refusal(key: ApiKey, tools: list[str]) -> tuple[dict[str, Any], str] | None:
    """A grant's call beyond its toolsets: the journaled refusal and its challenge header."""
    missing = {tool: challenge.missing_toolset(key, tool) for tool in tools}
    lacking = {tool: toolset for tool, toolset in missing.items() if toolset}
    if not lacking:
        return None
    tool, toolset = next(iter(lacking.items()))
    outcome = gateway.reject(key.contour, "insufficient_scope",
                             challenge.refusal_message(key, tool, toolset),
                             channel=CHANNEL, actor=keys.actor_of(key), tool=tool,
                             hint=challenge.REFUSAL_HINT)
    return outcome.as_dict(), challenge.insufficient_scope(key, sorted(set(lacking.values())))


def _invalid_json(key: ApiKey, problem: str, length: int) -> Outcome:
    """A body the SDK could not parse (bad syntax, nesting past its limit), journaled in the
    key's name as REST journals it."""
    return gateway.reject(key.contour, "invalid_json",
                          "тело запроса не разобрано как JSON: " + problem,
                          channel=CHANNEL, actor=keys.actor_of(key), tool=PATH,
                          arguments={"_body_length": length})


def _parse_error(outcome: Outcome) -> JSONResponse:
    """JSON-RPC's parse error, as the SDK answers it (HTTP 400, id null), with the gateway's
    envelope (code invalid_json, journal_id) in its data."""
    return JSONResponse({"jsonrpc": "2.0", "id": None,
                         "error": {"code": types.PARSE_ERROR, "message": outcome.message,
                                   "data": outcome.as_dict()}},
                        status_code=outcome.http_status)


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
        session_id = request.headers.get(MCP_SESSION_ID_HEADER)
        address = request.client.host if request.client else None
        body: bytes | None = None
        if scope["method"] == "POST":
            messages, body = await _read_body(receive)
            receive = _replaying(messages, receive)
        # a GET stream or a DELETE makes no session a used one
        use = bool(session_id) and scope["method"] == "POST" and is_call(body)
        call = None
        if settings.MCP_LEAN and session_id and body and len(body) <= LEAN_PEEK_LIMIT:
            call = lean.lean_call_of(request, body)
        if call is not None and session_id:  # a lean call always has its session
            served = await run_sync(lean.serve, _authenticate, CHANNEL, header, address,
                                    session_id, call)
            if served.answer is not None:
                await lean.send_answer(served.answer, session_id, scope, receive, send)
                return
            key, by_oauth, resumed = served.key, served.by_oauth, served.facts
        else:
            key, by_oauth, resumed = await run_sync(_authenticate, header, address, session_id,
                                                    use)
        if key is None:
            message = ("ключ API не найден, отозван или истёк (или токен выдан для другого "
                       "сервера)" if header
                       else "нужен ключ API контура: Authorization: Bearer <ключ>")
            outcome = await run_sync(gateway.reject, None, "unauthenticated", message,
                                     channel=CHANNEL,
                                     actor=anonymous.actor_of_unverified(header), tool=PATH)
            if session_id:  # apart: within `session_id and ...` mypy misreads run_sync's type
                if await run_sync(sessions.end_if_key_inactive, session_id):
                    await self.sessions.forget(session_id)  # a revoked key ends its sessions
            response = JSONResponse(outcome.as_dict(), status_code=401,
                                    headers={"WWW-Authenticate":
                                             challenge.unauthorized(bool(header))})
            await response(scope, receive, send)
            return
        if body is not None and call is None:  # the lean path's call was parsed already
            try:
                strict_json.parse_body(body)
            except strict_json.JsonRefused as refused:
                outcome = await run_sync(_invalid_json, key, refused.message, len(body))
                await _parse_error(outcome)(scope, receive, send)
                return
        if by_oauth and body:
            # As the reference server: a grant's tools/call beyond its toolsets is an HTTP 403
            # insufficient_scope the client can act on (ask the owner for more).
            out_of_scope = await run_sync(_scope_refusal, key, _called_tools(body))
            if out_of_scope is not None:
                envelope, www_authenticate = out_of_scope
                response = JSONResponse(envelope, status_code=403,
                                        headers={"WWW-Authenticate": www_authenticate})
                await response(scope, receive, send)
                return
        caller = Caller.of_key(key, CHANNEL)
        user = AuthenticatedUser(AccessToken(token=key.prefix, client_id=f"api-key:{key.pk}",
                                             scopes=[], subject=key.contour.slug))
        await self.app({**scope, "user": user, "auth": AuthCredentials([]), CALLER: caller,
                        KEY_ID: key.pk, RESUMED: resumed},
                       receive, send)


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
