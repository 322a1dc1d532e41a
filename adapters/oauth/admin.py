"""Grants in the admin, beside the contour keys (each grant's key is listed there too, labelled
"OAuth: <client>"): the client, who consented, the scope, the last use; owners revoke here."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from audit.actors import user_actor
from tools.admin.scope import OwnerScoped, key_last_use
from tools.models import Contour

from . import grants
from .models import OAuthGrant


@admin.register(OAuthGrant)
class OAuthGrantAdmin(OwnerScoped, admin.ModelAdmin):
    contour_path = "key__contour"
    list_display = (
        "client_name",
        "contour",
        "consented_by",
        "created_at",
        "scope",
        "state",
        "last_use",
        "key_prefix",
    )
    list_select_related = ("client", "consented_by", "key__contour")
    search_fields = ("client__name", "client__client_id", "key__prefix")
    fields = (*list_display[:-1], "redirect_uris", "key_prefix")
    readonly_fields = fields
    actions = ["revoke"]

    def _contour_of(self, obj: Model | None) -> Contour | None:
        return obj.key.contour if isinstance(obj, OAuthGrant) else None

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False  # grants come only from an owner's consent

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False  # revoked, never deleted: the journal refers to them

    @admin.display(description="клиент", ordering="client__name")
    def client_name(self, obj: OAuthGrant) -> str:
        return obj.client.display_name

    @admin.display(description="контур")
    def contour(self, obj: OAuthGrant) -> str:
        return obj.key.contour.slug

    @admin.display(description="наборы")
    def scope(self, obj: OAuthGrant) -> str:
        return ", ".join(obj.scopes)

    @admin.display(description="состояние")
    def state(self, obj: OAuthGrant) -> str:
        if obj.key.revoked_at:
            return "отозван"
        return "действует" if obj.is_active() else "истёк"

    @admin.display(description="последний вызов")
    def last_use(self, obj: OAuthGrant) -> str:
        return key_last_use(self, obj.key)

    @admin.display(description="ключ")
    def key_prefix(self, obj: OAuthGrant) -> str:
        return f"{obj.key.prefix}…"

    @admin.display(description="адреса возврата")
    def redirect_uris(self, obj: OAuthGrant) -> str:
        return ", ".join(obj.client.redirect_uris)

    @admin.action(description="Отозвать доступ выбранных клиентов", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[OAuthGrant]) -> None:
        count = 0
        for grant in queryset.select_related("key__contour", "client", "consented_by"):
            if grant.key.revoked_at is None:
                grants.revoke(
                    grant,
                    "revoked_by_owner",
                    f"{request.user.get_username()} отозвал доступ клиента "
                    f"«{grant.client.display_name}»",
                    actor=user_actor(request.user),
                    channel="admin",
                )
                count += 1
        self.message_user(request, f"Отозвано доступов: {count}.")
