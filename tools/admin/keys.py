"""Owners' admin of API keys: issue (shown once), rotate, revoke, relabel; all through
tools.keys.services, which journals each."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.html import format_html

from audit.actors import user_actor
from audit.admin import RevokedFilter
from tools.admin.forms import ApiKeyCreateForm
from tools.admin.scope import OwnerScoped, contour_filter, key_last_use
from tools.keys import scope as keys
from tools.keys import services as key_service
from tools.models import ApiKey, Role
from tools.people import roles
from tools.people.factors import stepup


@admin.register(ApiKey)
class ApiKeyAdmin(OwnerScoped, admin.ModelAdmin):
    # Short cells that wrap (templates/admin/tools/apikey/change_list.html): the whole list
    # fits a 1 280 px laptop screen beside its filters.
    list_display = (
        "prefix",
        "contour_slug",
        "label",
        "user",
        "created_short",
        "state",
        "scope",
        "last_use",
    )
    list_filter = (contour_filter, RevokedFilter)
    search_fields = ("prefix", "label")
    fields = (
        "contour",
        "prefix",
        "label",
        "user",
        "issued_by",
        "issued_by_command",
        "created_at",
        "revoked_at",
        "toolsets",
        "tools",
        "expires_at",
        "last_use",
    )
    # The issuer (a person, or a command) is fixed at issue: the four-eyes rule rests on it.
    readonly_fields = (
        "contour",
        "prefix",
        "issued_by",
        "issued_by_command",
        "created_at",
        "revoked_at",
        "toolsets",
        "tools",
        "expires_at",
        "last_use",
    )
    last_use = key_last_use

    @admin.display(description="контур", ordering="contour__slug")
    def contour_slug(self, obj: ApiKey) -> str:
        return format_html('<span title="{}">{}</span>', obj.contour.name, obj.contour.slug)

    @admin.display(description="создан", ordering="created_at")
    def created_short(self, obj: ApiKey) -> str:
        return f"{timezone.localtime(obj.created_at):%d.%m.%Y %H:%M}"

    @admin.display(description="доступ")
    def scope(self, obj: ApiKey) -> str:
        return keys.describe_scope(obj).strip(" ()") or "как у контура"

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm]:
        form = super().get_form(request, obj, change=change, **kwargs)
        if "user" in form.base_fields:
            cast(forms.ModelChoiceField, form.base_fields["user"]).queryset = roles.people_for(
                request.user
            )
        return form

    actions = ["revoke", "rotate"]

    @admin.display(description="состояние")
    def state(self, obj: ApiKey) -> str:
        if obj.revoked_at:
            return "отозван"
        if obj.expires_at and obj.expires_at <= timezone.now():
            return "истёк"
        return "действует"

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoke instead: the prefix stays to read the journal by

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """Issue a key and show it once; afterwards only its prefix exists (admin views are
        never cached; the page with the key also says no-store)."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ApiKeyCreateForm(
            request.POST or None, initial={"contour": request.GET.get("contour")}
        )
        cast(forms.ModelChoiceField, form.fields["contour"]).queryset = roles.contours_for(
            request.user, Role.OWNER
        ).order_by("slug")
        cast(forms.ModelChoiceField, form.fields["user"]).queryset = roles.people_for(request.user)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Новый ключ API",
            "form": form,
        }
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            key, raw = key_service.issue(
                data["contour"],
                label=data["label"],
                user=data["user"],
                toolsets=data["toolsets"],
                tools=data["tools"],
                expires_at=data["expires_at"],
                actor=user_actor(request.user),
                channel="admin",
                issued_by=request.user,
                step_up=stepup.of_request(request),
            )
            response = TemplateResponse(
                request,
                "admin/tools/apikey/issued.html",
                {**context, "title": "Ключ выдан", "key": key, "raw": raw},
            )
            response["Cache-Control"] = "no-store"
            return response
        return TemplateResponse(request, "admin/tools/apikey/add.html", context)

    def save_model(
        self, request: HttpRequest, obj: ApiKey, form: forms.ModelForm, change: bool
    ) -> None:
        key_service.change(obj, form.changed_data, actor=user_actor(request.user), channel="admin")

    @admin.action(description="Отозвать выбранные ключи")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = 0
        with transaction.atomic():
            for key in queryset.filter(revoked_at__isnull=True):
                count += key_service.revoke(key, actor=user_actor(request.user), channel="admin")
        self.message_user(request, f"Отозвано ключей: {count}.")

    @admin.action(description="Заменить ключ (прежний действует ещё срок замены контура)")
    def rotate(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> HttpResponse | None:
        chosen = list(queryset.select_related("contour")[:2])
        if len(chosen) != 1:
            self.message_user(request, "Выберите один ключ.", messages.WARNING)
            return None
        try:
            key, raw = key_service.rotate(
                chosen[0],
                actor=user_actor(request.user),
                channel="admin",
                by=request.user,
                step_up=stepup.of_request(request),
            )
        except keys.KeySetupError:
            self.message_user(request, "Ключ отозван или истёк: выдайте новый.", messages.ERROR)
            return None
        chosen[0].refresh_from_db()
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Ключ заменён",
            "key": key,
            "raw": raw,
            "replaced": chosen[0],
        }
        response = TemplateResponse(request, "admin/tools/apikey/issued.html", context)
        response["Cache-Control"] = "no-store"
        return response
