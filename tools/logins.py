"""People's logins (the admin's and the operators'): throttled by django-axes, failures journaled.

django-axes counts failed logins in the database (so the count holds across processes and
hosts) and, after AXES_FAILURE_LIMIT of them for one username or from one address, refuses
every attempt of that username or address, the right password included, for
AXES_COOLOFF_TIME. Each failed attempt, locked out or not, is one journal entry (channel admin
or ui, phase login), written by the login form itself.
"""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from audit.redaction import mask_pii
from tools import events

USERNAME_LIMIT = 100


class RequestOnlyAxesBackend(AxesStandaloneBackend):
    """Axes' lockout check for web logins; a login without a request (a management command, the
    test client's login()) has no address to count and is no web brute force: it passes on to
    ModelBackend instead of failing with axes' "request required" error."""

    def authenticate(self, request: HttpRequest | None, username: str | None = None,
                     password: str | None = None, **kwargs: Any) -> None:
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


def client_address(request: HttpRequest) -> str:
    """The peer address axes counts by: REMOTE_ADDR only, as /metrics trusts it (a forwarded
    header is honoured only where the ASGI server was told to trust the proxy, see
    docs/production.md)."""
    return request.META.get("REMOTE_ADDR", "")


def journal_failed_login(request: HttpRequest | None, username: str, *, channel: str) -> None:
    """One journal entry per failed login. A username nobody has (often a mistyped password
    in the wrong field) is masked; a known one is kept, so an auditor sees who was attacked."""
    username = (username or "")[:USERNAME_LIMIT]
    known = bool(username) and get_user_model().objects.filter(username=username).exists()
    events.login_failed(
        shown_username=username if known else mask_pii(username),
        address=client_address(request) if request is not None else "", known_user=known,
        locked_out=bool(getattr(request, "axes_locked_out", False)), channel=channel)


class _Journaled:
    """A login form that journals each attempt it refuses."""

    channel = "ui"
    request: HttpRequest | None
    data: Any

    def clean(self) -> dict[str, Any]:
        try:
            return super().clean()  # type: ignore[misc]
        except ValidationError:
            journal_failed_login(self.request, str(self.data.get("username", "")),
                                 channel=self.channel)
            raise


class OperatorLoginForm(_Journaled, AuthenticationForm):
    """/accounts/login/: operators, auditors and owners outside the admin."""


class AdminLoginForm(_Journaled, AdminAuthenticationForm):
    """/admin/login/."""

    channel = "admin"
