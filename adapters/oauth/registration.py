"""Bounds on dynamic client registration (RFC 7591), which anyone may call: the metadata's
size and fields, registrations per address per hour, registered clients in all; and unused
clients (registered, never consented to) expire.

The size is checked on the event loop before any thread is taken or JSON parsed: a declared
Content-Length over the limit is refused unread, a body that grows past it is cut off.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from contextvars import ContextVar
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from mcp.server.auth.provider import RegistrationError
from mcp.shared.auth import OAuthClientInformationFull
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adapters.sync_bridge import run_sync

from .models import OAuthClient

log = logging.getLogger(__name__)
# Per-field bounds of what is kept and echoed back (the SDK validates the shapes).
NAME_LIMIT = 200
TEXT_LIMIT = 2000
LIST_LIMIT = 10
# Set by the gate for the provider's store (the SDK's handler sits between them).
REGISTERED_FROM: ContextVar[str] = ContextVar("oauth_registered_from", default="")


def address_hash(address: str) -> str:
    """A keyed hash: counts registrations per address without keeping the address."""
    return hmac.new(settings.SECRET_KEY.encode(), address.encode(), hashlib.sha256).hexdigest()


def _refusal(
    status: int, error: str, description: str, retry_after: int | None = None
) -> JSONResponse:
    headers = {"Cache-Control": "no-store"}
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return JSONResponse(
        {"error": error, "error_description": description}, status_code=status, headers=headers
    )


def _too_large() -> JSONResponse:
    limit = settings.GATEWAY_OAUTH_REGISTRATION_MAX_BYTES
    return _refusal(400, "invalid_client_metadata", f"метаданные клиента больше {limit} байт")


def capacity_refusal(registered_from: str) -> tuple[str, str] | None:
    """(error, description) when no more clients may register now: from this address within
    the hour, or at all (GATEWAY_OAUTH_MAX_CLIENTS)."""
    hour_ago = timezone.now() - timedelta(hours=1)
    per_address = settings.GATEWAY_OAUTH_REGISTRATIONS_PER_ADDRESS_HOUR
    if (
        OAuthClient.objects.filter(
            registered_from=registered_from, registered_at__gte=hour_ago
        ).count()
        >= per_address
    ):
        return (
            "too_many_registrations",
            f"с этого адреса уже зарегистрировано {per_address} клиентов за час",
        )
    if OAuthClient.objects.count() >= settings.GATEWAY_OAUTH_MAX_CLIENTS:
        return (
            "too_many_clients",
            f"зарегистрировано предельное число клиентов "
            f"({settings.GATEWAY_OAUTH_MAX_CLIENTS}); неиспользованные удаляются через "
            f"{settings.GATEWAY_OAUTH_UNUSED_CLIENT_HOURS} ч",
        )
    return None


class RegistrationGate:
    """Wraps the SDK's /register: size first (unread when declared too large), then the
    per-address rate and the deployment's cap, then the SDK's handler with the body replayed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        limit = settings.GATEWAY_OAUTH_REGISTRATION_MAX_BYTES
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await _too_large()(scope, receive, send)
            return
        body = await _read_capped(receive, limit)
        if body is None:
            await _too_large()(scope, receive, send)
            return
        client = scope.get("client")
        registered_from = address_hash(client[0] if client else "")
        refused = await run_sync(capacity_refusal, registered_from)
        if refused is not None:
            await _refusal(429, *refused, retry_after=3600)(scope, receive, send)
            return
        REGISTERED_FROM.set(registered_from)
        await self.app(scope, _replay(body), send)


async def _read_capped(receive: Receive, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def check_fields(info: OAuthClientInformationFull) -> None:
    """RegistrationError (400 invalid_client_metadata) for a field longer than we keep."""
    if len(info.client_name or "") > NAME_LIMIT:
        raise RegistrationError(
            "invalid_client_metadata", f"client_name длиннее {NAME_LIMIT} символов"
        )
    problem = _oversized(info.model_dump(mode="json", exclude_none=True))
    if problem:
        raise RegistrationError("invalid_client_metadata", problem)


def _oversized(value: Any, where: str = "") -> str | None:
    if isinstance(value, str):
        return f"{where}: длиннее {TEXT_LIMIT} символов" if len(value) > TEXT_LIMIT else None
    if isinstance(value, list):
        if len(value) > LIST_LIMIT:
            return f"{where}: больше {LIST_LIMIT} значений"
        return next((p for item in value if (p := _oversized(item, where))), None)
    if isinstance(value, dict):
        if len(json.dumps(value)) > settings.GATEWAY_OAUTH_REGISTRATION_MAX_BYTES:
            return f"{where or 'метаданные'}: слишком велики"
        return next(
            (
                p
                for key, item in value.items()
                if (p := _oversized(item, f"{where}.{key}" if where else key))
            ),
            None,
        )
    return None


def expire_unused_clients() -> int:
    """Delete clients registered more than GATEWAY_OAUTH_UNUSED_CLIENT_HOURS ago that no owner
    ever consented to (no grant, live or revoked); how many went."""
    cutoff = timezone.now() - timedelta(hours=settings.GATEWAY_OAUTH_UNUSED_CLIENT_HOURS)
    deleted, _ = OAuthClient.objects.filter(registered_at__lt=cutoff, grants__isnull=True).delete()
    if deleted:
        log.info("deleted %d OAuth clients nobody consented to", deleted)
    return deleted
