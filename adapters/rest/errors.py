"""DRF errors rendered as the gateway's envelope, journaled like every other refusal."""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError
from rest_framework import exceptions, status
from rest_framework.authentication import get_authorization_header
from rest_framework.response import Response

from adapters.oauth import challenge
from audit.models import Channel
from tools.errors import Outcome
from tools.pipeline import anonymous, gateway
from tools.pipeline.database_faults import database_error


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    request = context.get("request")
    if isinstance(exc, DatabaseError):
        # Authentication reads the key from the database: with the database away the call is
        # answered (and journaled through the spool) like any other refusal, never a 500.
        error = database_error(claimed=False)
        outcome = gateway.reject(
            None,
            error.code,
            error.message,
            channel="rest",
            actor=_key_actor(request),
            tool=_path(request),
            hint=error.hint,
        )
        outcome.data = error.data
        return Response(outcome.as_dict(), status=error.http_status)
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        message = (
            str(exc.detail)
            if isinstance(exc, exceptions.AuthenticationFailed)
            else ("нужен ключ API контура: Authorization: Bearer <ключ>")
        )
        outcome = gateway.reject(
            None,
            "unauthenticated",
            message,
            channel=Channel.REST,
            actor="anonymous",
            tool=_path(request),
        )
        response = Response(outcome.as_dict(), status=status.HTTP_401_UNAUTHORIZED)
        # As /mcp answers (one OAuth token serves both): invalid_token when a credential was
        # presented and refused, and where to get a token when OAuth is on.
        response["WWW-Authenticate"] = challenge.unauthorized(
            isinstance(exc, exceptions.AuthenticationFailed)
        )
        return response
    if isinstance(exc, exceptions.ParseError):
        principal = getattr(request, "user", None) if request is not None else None
        contour = getattr(principal, "contour", None)
        actor = getattr(principal, "actor", "anonymous")
        outcome = gateway.reject(
            contour,
            "invalid_json",
            "тело запроса не разобрано как JSON: " + str(exc.detail)[:200],
            channel=Channel.REST,
            actor=actor,
        )
        return Response(outcome.as_dict(), status=outcome.http_status)
    if isinstance(exc, exceptions.APIException):
        code = {
            405: "method_not_allowed",
            404: "not_found",
            415: "unsupported_media_type",
            406: "not_acceptable",
        }.get(exc.status_code, "invalid_request")
        body = Outcome(status="rejected", code=code, message=str(exc.detail)).as_dict()
        return Response(body, status=exc.status_code)
    return None


def _key_actor(request: Any) -> str:
    """Who was refused while nothing could be verified: anonymous, with at most a keyed hash
    of the presented credential (tools/pipeline/anonymous.py), never a key's prefix anyone can type."""
    header = get_authorization_header(request).decode("latin-1") if request else ""
    return anonymous.actor_of_unverified(header)


def _path(request: Any) -> str:
    return getattr(request, "path", "")[:64] if request is not None else ""
