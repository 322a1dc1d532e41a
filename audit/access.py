"""Who may read the journal: auditors (group `auditors`) by session or auditor token, superusers."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from audit.models import AuditorToken

AUDITORS_GROUP = "auditors"


def is_auditor(user: Any) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active and (
        user.is_superuser or user.groups.filter(name=AUDITORS_GROUP).exists()))


def bearer(request: HttpRequest) -> str | None:
    """The Bearer credential of the request ('' when malformed), None when there is none."""
    header = request.headers.get("Authorization", "")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip() or " " in value.strip():
        return ""
    return value.strip()


def request_user(request: HttpRequest) -> Any:
    """The user an auditor token names (it acts as that user), else the session's user.

    A presented token that is unknown or revoked gives no user at all, even with a session:
    a wrong credential is an error, not a fallback.
    """
    raw = bearer(request)
    if raw is None:
        return request.user
    token = AuditorToken.authenticate(raw)
    return token.user if token is not None else None
