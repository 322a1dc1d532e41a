"""django-otp-webauthn's ceremonies, bound to our rules: a passkey check stamps the step-up;
adding a passkey (begin and complete alike) follows stepup.enrolment_refusal — a fresh check
of an existing device, and no first device by password alone where a factor is required."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse
from django.urls import path
from django.views.i18n import JavaScriptCatalog
from django_otp_webauthn import exceptions
from django_otp_webauthn.utils import get_credential_model
from django_otp_webauthn.views import (
    BeginCredentialAuthenticationView,
    BeginCredentialRegistrationView,
    CompleteCredentialAuthenticationView,
    CompleteCredentialRegistrationView,
)

from tools.people.factors import devices, stepup


class StepUpNeeded(exceptions.OTPWebAuthnApiError):
    status_code = 403
    default_code = "second_factor_required"
    default_detail = (
        "Чтобы добавить ключ доступа, сначала подтвердите вход уже подключённым устройством."
    )


class _FreshCheckToAdd:
    """The package calls check_can_register() on both registration endpoints: a stolen
    password must not be enough to add the thief's passkey."""

    request: Any

    def check_can_register(self) -> None:
        refusal = stepup.enrolment_refusal(self.request)
        if refusal is not None:
            raise StepUpNeeded(
                detail=f"{refusal.message[:1].upper()}{refusal.message[1:]}.", code=refusal.code
            )


class BeginRegistration(_FreshCheckToAdd, BeginCredentialRegistrationView):
    pass


class CompleteRegistration(_FreshCheckToAdd, CompleteCredentialRegistrationView):
    def post(self, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().post(*args, **kwargs)
        if response.status_code == 200:
            device = get_credential_model().objects.get(pk=json.loads(response.content)["id"])
            devices.enrolled(self.request.user, device, channel="ui")
            stepup.stamp(self.request, device)
        return response


class CompleteAuthentication(CompleteCredentialAuthenticationView):
    def complete_auth(self, device: Any) -> None:
        # Passwordless login is off (settings): the person has already logged in.
        if not self.request.user.is_authenticated:
            raise exceptions.NotAuthenticated()
        stepup.stamp(self.request, device)


# The namespace the package's template tags reverse.
app_name = "otp_webauthn"
urlpatterns = [
    path("registration/begin/", BeginRegistration.as_view(), name="credential-registration-begin"),
    path(
        "registration/complete/",
        CompleteRegistration.as_view(),
        name="credential-registration-complete",
    ),
    path(
        "authentication/begin/",
        BeginCredentialAuthenticationView.as_view(),
        name="credential-authentication-begin",
    ),
    path(
        "authentication/complete/",
        CompleteAuthentication.as_view(),
        name="credential-authentication-complete",
    ),
    path(
        "jsi18n/",
        JavaScriptCatalog.as_view(packages=["django_otp_webauthn"]),
        name="js-i18n-catalog",
    ),
]
