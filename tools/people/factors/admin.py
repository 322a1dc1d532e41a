"""The admin's side of second factors: a superuser resets a person's devices (journaled,
the person told by email). Devices themselves are not edited here: a device added in the admin
would count without its first code, and a deletion would leave no journal entry."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice
from django_otp_webauthn.utils import get_attestation_model, get_credential_model

from audit.actors import user_actor
from tools.people.admin_site import PeopleUserAdmin
from tools.people.factors import devices, stepup

for _model in (TOTPDevice, StaticDevice, get_credential_model(), get_attestation_model()):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)

User = get_user_model()


def reset_devices(request: HttpRequest, people: QuerySet[Any]) -> int:
    """The superuser's reset of the people chosen: needs their own fresh factor where the
    gateway requires one (after a reset, the next login enrolls a new device). Refused, it
    raises ToolError, which tools/people/factors/middleware.py turns into the check and back."""
    if not request.user.is_superuser:
        raise PermissionDenied
    stepup.require(stepup.of_request(request), contour=None, action="сброс второго фактора")
    by = user_actor(request.user)
    return sum(devices.reset(person, by=by, channel="admin") for person in people)


class PeopleAdmin(PeopleUserAdmin):
    """The people admin (tools/people/admin_site.py) with the superuser's reset of a second factor."""

    actions = [*PeopleUserAdmin.actions, "reset_second_factor"]
    # django-stubs declare list_display on the instance of a generic ModelAdmin.
    list_display = (*PeopleUserAdmin.list_display, "second_factor")  # type: ignore[misc]

    @admin.display(description="второй фактор")
    def second_factor(self, user: Any) -> str:
        kinds = sorted({devices.KIND_LABELS[devices.kind_of(d)] for d in devices.confirmed(user)})
        return ", ".join(kinds) or "—"

    @admin.action(description="Сбросить второй фактор (все устройства; человеку уйдёт письмо)")
    def reset_second_factor(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        removed = reset_devices(request, queryset)
        self.message_user(
            request,
            f"Сброшено устройств: {removed}. Люди получат письмо и "
            "подключат новое устройство при следующем решении.",
            messages.SUCCESS,
        )

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        if not request.user.is_superuser:
            actions.pop("reset_second_factor", None)
        return actions
