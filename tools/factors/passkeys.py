"""django-otp-webauthn's ceremonies, bound to our rules: a passkey check stamps the step-up,
adding a passkey to a person who already has a device needs a fresh check, both journaled."""

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

from audit.actors import user_actor
from tools.factors import devices, stepup


class StepUpNeeded(exceptions.OTPWebAuthnApiError):
    status_code = 403
    code = "second_factor_required"
    default_detail = ("Чтобы добавить ключ доступа, сначала подтвердите вход уже подключённым "
                      "устройством.")


class _FreshCheckToAdd:
    """Another device may be added only right after a check of an existing one, or a stolen
    password would be enough to add the thief's device."""

    request: Any

    def check_can_register(self) -> None:
        if devices.confirmed(self.request.user) and not stepup.is_fresh(self.request):
            raise StepUpNeeded()


class BeginRegistration(_FreshCheckToAdd, BeginCredentialRegistrationView):
    pass


class CompleteRegistration(_FreshCheckToAdd, CompleteCredentialRegistrationView):
    def post(self, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().post(*args, **kwargs)
        if response.status_code == 200:
            device = get_credential_model().objects.get(pk=json.loads(response.content)["id"])
            user = self.request.user
            devices.record(user, "second_factor_enrolled", f"{user.get_username()}: подключён "
                           f"ключ доступа «{devices.label_of(device)}»", channel="ui",
                           actor=user_actor(user), kind=devices.PASSKEY,
                           device=devices.label_of(device))
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
    path("registration/begin/", BeginRegistration.as_view(),
         name="credential-registration-begin"),
    path("registration/complete/", CompleteRegistration.as_view(),
         name="credential-registration-complete"),
    path("authentication/begin/", BeginCredentialAuthenticationView.as_view(),
         name="credential-authentication-begin"),
    path("authentication/complete/", CompleteAuthentication.as_view(),
         name="credential-authentication-complete"),
    path("jsi18n/", JavaScriptCatalog.as_view(packages=["django_otp_webauthn"]),
         name="js-i18n-catalog"),
]
