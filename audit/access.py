"""Who may read the journal, and which contours: auditors by session or auditor token.

Roles are per contour and live in the tools app, which this app never imports: tools
registers the lookup at start (set_contour_source). Superusers read every contour and the
entries that name none; everyone else only the contours of their roles, and a token only
the contours it names (within those).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest

from audit.models import AuditorToken

AUDITOR = "auditor"
OWNER = "owner"
# (user, roles) -> slugs of the contours where the user holds one of roles; None: all.
ContourSource = Callable[[Any, tuple[str, ...]], "set[str] | None"]
_source: ContourSource | None = None


def set_contour_source(source: ContourSource) -> None:
    global _source
    _source = source


def contours_of(user: Any, *roles: str) -> set[str] | None:
    """Slugs the user may read in these roles; None means every contour (superusers)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return set()
    if user.is_superuser:
        return None
    if _source is None:  # roles not loaded: nothing is readable rather than everything
        return set()
    return _source(user, roles)


def is_auditor(user: Any) -> bool:
    allowed = contours_of(user, AUDITOR)
    return allowed is None or bool(allowed)


@dataclass(frozen=True)
class Reader:
    """Who reads the journal over HTTP and which contours (None: every one)."""

    user: Any
    contours: set[str] | None


def bearer(request: HttpRequest) -> str | None:
    """The Bearer credential of the request ('' when malformed), None when there is none."""
    header = request.headers.get("Authorization", "")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip() or " " in value.strip():
        return ""
    return value.strip()


def request_reader(request: HttpRequest) -> Reader | None:
    """The auditor behind the request: an auditor token (it acts as its user, limited to the
    contours it names), else the session's user. None when nobody is authenticated.

    A presented token that is unknown or revoked gives no reader at all, even with a session:
    a wrong credential is an error, not a fallback.
    """
    raw = bearer(request)
    if raw is None:
        user = request.user
        if not user.is_authenticated:
            return None
        return Reader(user, contours_of(user, AUDITOR))
    token = AuditorToken.authenticate(raw)
    if token is None:
        return None
    allowed = contours_of(token.user, AUDITOR)
    if token.contours is not None:
        named = set(token.contours)
        allowed = named if allowed is None else allowed & named
    return Reader(token.user, allowed)
