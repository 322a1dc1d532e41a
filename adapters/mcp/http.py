"""Streamable HTTP at /mcp: Host/Origin checks, then one thread hop per request (`admit`: the
contour key or OAuth grant, the session, the grant's scope, and a dialog-less session's
tools/call on the fast path, lean.py), then the SDK's transport with sessions shared by every
worker (manager.py)."""

from __future__ import annotations

from dataclasses import dataclass
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
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adapters import strict_json
from adapters.mcp import answers, lean, sessions
from adapters.mcp import relay as relays
from adapters.mcp.manager import CALLER, KEY_ID, RESUMED, SharedSessionManager
from adapters.mcp.server import Caller, build_server, run_sync
from adapters.oauth import challenge, grants
from tools.keys import scope as keys
from tools.models import ApiKey
from tools.pipeline import anonymous, gateway

PATH = "/mcp"
CHANNEL = "mcp-http"


def transport_security() -> TransportSecuritySettings:
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(settings.MCP_ALLOWED_HOSTS),
        allowed_origins=list(settings.MCP_ALLOWED_ORIGINS),
    )


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


@dataclass(frozen=True)
class Admission:
    """What the request's one thread hop found: the key, whether it was an OAuth grant, the
    session the request names (resumed), and the gateway's own answer when it has one (a
    401, a 400 for a body that is no JSON, a grant's 403, the fast path's answer)."""

    key: ApiKey | None
    by_oauth: bool = False
    facts: sessions.SessionFacts | None = None
    response: Response | None = None
    forget: bool = False  # the 401 ended the named session: drop this worker's copy


def authenticate(
    header: str, address: str | None, session_id: str | None, use: bool
) -> tuple[ApiKey | None, bool, sessions.SessionFacts | None]:
    """The key behind a contour key or an OAuth access token, whether it was the latter, and
    the key's live session named by the request (`use`: the request is a call, see
    sessions.resume)."""
    scheme, _, raw = header.partition(" ")
    raw = raw.strip()
    if scheme.lower() != "bearer" or not raw or " " in raw:
        return None, False, None
    facts: sessions.SessionFacts | None = None
    if session_id and not grants.is_access_token(raw):  # one statement for both
        (key, facts), by_oauth = sessions.key_and_session(raw, session_id, use), False
    else:
        key, by_oauth = grants.authenticate(raw)
        if key is not None and session_id:
            facts = sessions.resume(session_id, key.pk, use)
    if key is None:
        return None, by_oauth, None
    keys.note_address(key, address)
    return key, by_oauth, facts


def _unauthenticated(header: str, session_id: str | None) -> Admission:
    message = (
        "ключ API не найден, отозван или истёк (или токен выдан для другого сервера)"
        if header
        else "нужен ключ API контура: Authorization: Bearer <ключ>"
    )
    outcome = gateway.reject(
        None,
        "unauthenticated",
        message,
        channel=CHANNEL,
        actor=anonymous.actor_of_unverified(header),
        tool=PATH,
    )
    forget = bool(session_id) and sessions.end_if_key_inactive(session_id or "")
    return Admission(
        None,
        forget=forget,
        response=JSONResponse(
            outcome.as_dict(),
            status_code=401,
            headers={"WWW-Authenticate": challenge.unauthorized(bool(header))},
        ),
    )


def _called_tools(body: bytes) -> list[str]:
    """Names of the tools/call requests in a JSON-RPC message or batch ([] if unreadable)."""
    try:
        parsed = strict_json.parse_body(body)
    except strict_json.JsonRefused:
        return []
    batch = parsed if isinstance(parsed, list) else [parsed]
    return [
        str(item.get("params", {}).get("name", ""))
        for item in batch
        if isinstance(item, dict)
        and item.get("method") == "tools/call"
        and isinstance(item.get("params"), dict)
    ]


def _scope_refusal(key: ApiKey, tools: list[str]) -> Response | None:
    """The one OAuth scope check of /mcp, as the reference server: a grant's tools/call beyond
    its toolsets is a journaled HTTP 403 insufficient_scope the client can act on (ask the
    owner for more)."""
    missing = {tool: challenge.missing_toolset(key, tool) for tool in tools}
    lacking = {tool: toolset for tool, toolset in missing.items() if toolset}
    if not lacking:
        return None
    tool, toolset = next(iter(lacking.items()))
    outcome = gateway.reject(
        key.contour,
        "insufficient_scope",
        challenge.refusal_message(key, tool, toolset),
        channel=CHANNEL,
        actor=keys.actor_of(key),
        tool=tool,
        hint=challenge.REFUSAL_HINT,
    )
    return JSONResponse(
        outcome.as_dict(),
        status_code=403,
        headers={
            "WWW-Authenticate": challenge.insufficient_scope(key, sorted(set(lacking.values())))
        },
    )


def _parse_error(key: ApiKey, problem: str, length: int) -> Response:
    """A body the SDK could not parse (bad syntax, nesting past its limit), journaled in the
    key's name as REST journals it, and answered as the SDK answers it (JSON-RPC's parse
    error, HTTP 400, id null) with the gateway's envelope (invalid_json) in its data."""
    outcome = gateway.reject(
        key.contour,
        "invalid_json",
        "тело запроса не разобрано как JSON: " + problem,
        channel=CHANNEL,
        actor=keys.actor_of(key),
        tool=PATH,
        arguments={"_body_length": length},
    )
    return JSONResponse(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": types.PARSE_ERROR,
                "message": outcome.message,
                "data": outcome.as_dict(),
            },
        },
        status_code=outcome.http_status,
    )


def admit(
    header: str,
    address: str | None,
    session_id: str | None,
    use: bool,
    body: bytes | None,
    call: lean.LeanCall | None,
) -> Admission:
    """The request's one thread hop (sync): the key, the session, a body that is no JSON, a
    grant's scope, and when `call` (the fast path's) may be answered without the SDK, the
    call itself."""
    key, by_oauth, facts = authenticate(header, address, session_id, use)
    if key is None:
        return _unauthenticated(header, session_id)
    if body is not None and call is None:  # the fast path's call was parsed already
        try:
            strict_json.parse_body(body)
        except strict_json.JsonRefused as refused:
            return Admission(key, by_oauth, facts, _parse_error(key, refused.message, len(body)))
    if by_oauth and body:
        refusal = _scope_refusal(key, [call.params.name] if call else _called_tools(body))
        if refusal is not None:
            return Admission(key, by_oauth, facts, refusal)
    if call is not None and session_id and lean.may_answer(call, facts):
        return Admission(
            key, by_oauth, facts, lean.answer(call, Caller.of_key(key, CHANNEL), session_id)
        )
    return Admission(key, by_oauth, facts)


class ContourKeyAuth:
    """Refuses a wrong Host/Origin, then a missing or unknown key, before MCP sees the request.

    A known key becomes the Caller the tool handlers read, and the SDK's AuthenticatedUser:
    the session manager binds a session to the user that opened it, so another key on that
    session id is answered as if the session did not exist (404).
    """

    def __init__(
        self,
        app: ASGIApp,
        security: TransportSecuritySettings,
        sessions_manager: SharedSessionManager,
    ) -> None:
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
        session_id = request.headers.get(MCP_SESSION_ID_HEADER)
        body: bytes | None = None
        if scope["method"] == "POST":
            messages, body = await _read_body(receive)
            receive = _replaying(messages, receive)
        call = lean.call_of(request, body) if settings.MCP_LEAN and session_id and body else None
        # a GET stream or a DELETE makes no session a used one; the fast path's call is one
        # (a request parsed by the same parser as is_call's), its body not parsed again
        use = (
            bool(session_id)
            and scope["method"] == "POST"
            and (call is not None or answers.is_call(body))
        )
        admitted = await run_sync(
            admit,
            request.headers.get("authorization", ""),
            request.client.host if request.client else None,
            session_id,
            use,
            body,
            call,
        )
        if admitted.forget and session_id:
            await self.sessions.forget(session_id)  # a revoked key ends its sessions
        if admitted.response is not None:
            await admitted.response(scope, receive, send)
            return
        key = admitted.key
        assert key is not None
        caller = Caller.of_key(key, CHANNEL)
        user = AuthenticatedUser(
            AccessToken(
                token=key.prefix, client_id=f"api-key:{key.pk}", scopes=[], subject=key.contour.slug
            )
        )
        await self.app(
            {
                **scope,
                "user": user,
                "auth": AuthCredentials([]),
                CALLER: caller,
                KEY_ID: key.pk,
                RESUMED: admitted.facts,
            },
            receive,
            send,
        )


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
    relay = relays.configured()
    # Without a relay an answer posted to another worker is never heard (the call would wait
    # MCP_ELICITATION_TIMEOUT_SECONDS): where several workers may serve, no dialog is offered.
    server = build_server(caller_of_request, dialogs=relay is not None or settings.MCP_WORKERS <= 1)
    security = transport_security()
    manager = SharedSessionManager(
        server,
        security_settings=security,
        idle_seconds=settings.MCP_SESSION_IDLE_SECONDS,
        relay=relay,
    )
    return ContourKeyAuth(StreamableHTTPASGIApp(manager), security, manager), manager
