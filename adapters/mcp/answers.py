"""The /mcp answers that are the gateway's own rather than the SDK's: a session refused at a
cap (HTTP 429), a session request naming a protocol version no era speaks (HTTP 400), and
whether a session's request counts as a call (what makes a session a used one)."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION, ErrorData, JSONRPCError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.responses import Response

from adapters import strict_json
from adapters.mcp import sessions
from adapters.mcp.server import Caller
from tools.pipeline import gateway

# The JSON-RPC code of a refused session: the implementation-defined server error range.
SESSION_REFUSED = -32000


def _request_id(body: bytes) -> Any:
    """The id of the JSON-RPC request in `body`, when there is one (else None)."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    request_id = message.get("id") if isinstance(message, dict) else None
    return request_id if isinstance(request_id, (str, int)) else None


def is_call(body: bytes | None) -> bool:
    """Whether a session's POST is a call (a request with a method): what makes a session a
    used one. The initialized notification, an answer or a GET stream are not; a body too
    large to peek at is."""
    if body is None:
        return True
    try:
        message = strict_json.parse_body(body)
    except strict_json.JsonRefused:
        return False
    batch = message if isinstance(message, list) else [message]
    return any(isinstance(item, dict) and "method" in item and "id" in item for item in batch)


def unsupported_version(version: str, body: bytes) -> Response:
    """A session request naming a protocol version this server does not speak: HTTP 400."""
    supported = [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS]
    body_out = JSONRPCError(
        jsonrpc="2.0",
        id=_request_id(body),
        error=ErrorData(
            code=UNSUPPORTED_PROTOCOL_VERSION,
            message="Unsupported protocol version",
            data={"supported": supported, "requested": version},
        ),
    )
    return Response(
        body_out.model_dump_json(by_alias=True, exclude_unset=True),
        status_code=400,
        media_type="application/json",
    )


def refused(refusal: sessions.SessionRefused, body: bytes, caller: Caller | None) -> Response:
    """A new session over a cap: HTTP 429 with a JSON-RPC error whose data is the journaled
    envelope (its stable code too_many_sessions)."""
    envelope: dict[str, Any] = {
        "status": "rejected",
        "code": sessions.REFUSED_CODE,
        "message": str(refusal),
    }
    if caller is not None:
        envelope = gateway.reject(
            caller.contour,
            sessions.REFUSED_CODE,
            str(refusal),
            channel=caller.channel,
            actor=caller.actor,
            tool="/mcp",
            hint="закройте неиспользуемые подключения",
        ).as_dict()
    envelope["scope"] = refusal.scope
    error = JSONRPCError(
        jsonrpc="2.0",
        id=_request_id(body),
        error=ErrorData(code=SESSION_REFUSED, message=str(refusal), data=envelope),
    )
    return Response(
        error.model_dump_json(by_alias=True, exclude_unset=True),
        status_code=429,
        headers={"Retry-After": str(settings.MCP_SESSION_UNUSED_SECONDS)},
        media_type="application/json",
    )
