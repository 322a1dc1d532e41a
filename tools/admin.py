"""Owners' admin: contours (toolsets, policy, ceilings, credentials), keys, confirmations."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from tools.models import ApiKey, Ceiling, Contour, Operation, PendingConfirmation


class ContourForm(forms.ModelForm):
    # The token is write-only: the field starts empty and an empty submit keeps the old one.
    api_token = forms.CharField(
        label="токен API Инвойсбокс", required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="хранится, но не показывается; оставьте пустым, чтобы не менять",
    )

    notification_key = forms.CharField(
        label="ключ подписи уведомлений", required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="не показывается; оставьте пустым, чтобы не менять",
    )
    base_url = forms.URLField(label="адрес API", max_length=500, assume_scheme="https")

    class Meta:
        model = Contour
        fields = (
            "slug", "name", "mode", "base_url", "api_token", "merchant_id", "toolsets",
            "confirmation_ttl_seconds", "dedup_window_seconds", "approval_thresholds",
            "approval_for_all_writes", "time_zone", "disabled_tools", "notification_key",
        )

    def clean_notification_key(self) -> str:
        return self.cleaned_data.get("notification_key") or (
            self.instance.notification_key if self.instance.pk else "")

    def clean_api_token(self) -> str:
        token = self.cleaned_data.get("api_token", "")
        if token:
            return token
        if self.instance.pk:
            return self.instance.api_token
        raise forms.ValidationError("для нового контура нужен токен")


class CeilingInline(admin.TabularInline):
    model = Ceiling
    extra = 0


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    fields = ("prefix", "label", "created_at", "revoked_at")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Contour)
class ContourAdmin(admin.ModelAdmin):
    form = ContourForm
    list_display = ("slug", "name", "mode", "toolsets", "masked_token", "approval_for_all_writes")
    search_fields = ("slug", "name")
    inlines = [CeilingInline, ApiKeyInline]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("prefix", "contour", "label", "created_at", "revoked_at")
    list_filter = ("contour",)
    readonly_fields = ("prefix", "key_hash", "created_at", "revoked_at")
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # keys are issued with create_api_key, which shows the key once

    @admin.action(description="Отозвать выбранные ключи")
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        for key in queryset.filter(revoked_at__isnull=True):
            key.revoke()


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PendingConfirmation)
class PendingConfirmationAdmin(ReadOnlyAdmin):
    list_display = ("id", "contour", "tool", "status", "requires_approval", "created_at",
                    "expires_at", "decided_by")
    list_filter = ("status", "tool", "contour", "requires_approval")
    exclude = ("token_hash",)


@admin.register(Operation)
class OperationAdmin(ReadOnlyAdmin):
    list_display = ("key", "contour", "tool", "state", "merchant_order_id", "amount", "currency",
                    "created_at")
    list_filter = ("state", "tool", "contour")
