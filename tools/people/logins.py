"""People's logins (the admin's and the operators'): throttled, failures journaled.

django-axes counts failed logins in the database (so the count holds across processes and
hosts) and, after AXES_FAILURE_LIMIT of them for one username from one address, refuses that
pair, the right password included, for AXES_COOLOFF_TIME. Beyond the pair the login slows
down rather than locks, and the person and the superusers are told (tools/people/login_guard.py).
Each failed or slowed attempt is one journal entry (channel admin or ui, phase login),
written by the login form itself.
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
from tools.people import login_guard

USERNAME_LIMIT = 100


class RequestOnlyAxesBackend(AxesStandaloneBackend):
    """Axes' lockout check for web logins; a login without a request (a management command, the
    test client's login()) has no address to count and is no web brute force: it passes on to
    ModelBackend instead of failing with axes' "request required" error."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


def client_address(request: HttpRequest) -> str:
    """The peer address axes counts by: REMOTE_ADDR only, as /metrics trusts it (a forwarded
    header is honoured only where the ASGI server was told to trust the proxy, see
    docs/production.md)."""
    return request.META.get("REMOTE_ADDR", "")


def _shown(username: str) -> tuple[str, bool]:
    """A username nobody has (often a mistyped password in the wrong field) is masked; a known
    one is kept, so an auditor sees who was attacked."""
    known = bool(username) and get_user_model().objects.filter(username=username).exists()
    return (username if known else mask_pii(username)), known


def journal_failed_login(request: HttpRequest | None, username: str, *, channel: str) -> None:
    """One journal entry per failed login."""
    username = (username or "")[:USERNAME_LIMIT]
    shown, known = _shown(username)
    events.login_failed(
        shown_username=shown,
        address=client_address(request) if request is not None else "",
        known_user=known,
        locked_out=bool(getattr(request, "axes_locked_out", False)),
        channel=channel,
    )


class _Journaled:
    """A login form that journals each attempt it refuses."""

    channel = "ui"
    request: HttpRequest | None
    data: Any

    def clean(self) -> dict[str, Any]:
        username = str(self.data.get("username", ""))[:USERNAME_LIMIT]
        if self.request is not None:
            address = client_address(self.request)
            wait = login_guard.wait_seconds(username, address)
            if wait:
                events.login_throttled(
                    shown_username=_shown(username)[0],
                    address=address,
                    wait_seconds=wait,
                    channel=self.channel,
                )
                raise ValidationError(
                    f"Слишком много неудачных попыток входа. Попробуйте через {wait} с.",
                    code="login_throttled",
                )
        try:
            return super().clean()  # type: ignore[misc]
        except ValidationError:
            journal_failed_login(self.request, username, channel=self.channel)
            login_guard.report_failures(username, channel=self.channel)
            raise


class OperatorLoginForm(_Journaled, AuthenticationForm):
    """/accounts/login/: operators, auditors and owners outside the admin."""


class AdminLoginForm(_Journaled, AdminAuthenticationForm):
    """/admin/login/."""

    channel = "admin"
