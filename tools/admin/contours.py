"""Owners' admin of contours: toolsets, policy, ceilings, credentials, the tool catalog page.
Saving calls tools.contours.services, which journals every change."""

from __future__ import annotations

import json
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html

from audit.actors import user_actor
from tools import catalog
from tools.admin import pending_post
from tools.admin.forms import CeilingForm, ContourForm
from tools.admin.scope import ContourRoleInline, OwnerScoped, save_role_formset
from tools.background import alerts
from tools.contours import services as contour_service
from tools.contours.connection import ConnectionReport, check_connection
from tools.models import ApiKey, Ceiling, CeilingKind, Contour, ContourRole, InvoiceboxMode, Toolset
from tools.params import format_rub
from tools.people.factors import held, stepup
from tools.pipeline import ceilings
from tools.spec import ToolSpec

KIND_LABELS = {"read": "чтение", "write": "запись", "money": "деньги"}
WRITE_TOOLSETS = (Toolset.WRITE, Toolset.REFUND)
# The owner's POST waiting on the "what the assistant will be able to do" page, by nonce.
CONFIRM_FIELD = pending_post.CONFIRM_FIELD


# How the contour verifies payment notifications: audited like the rest.
SIGNATURE_FIELDS = ("notification_signature_method", "notification_signature_algorithm")
NOTIFICATION_FIELDSET = ("Уведомления об оплате", {"fields": SIGNATURE_FIELDS})
CUSTOM_MODE_WARNING = (
    "режим custom: токен Инвойсбокс уходит на этот адрес, а не на "
    "официальный API; только свой прокси или тестовый двойник"
)


# Settings whose change is followed by the connection check (the save's message says its result).
CONNECTION_FIELDS = ("mode", "base_url", "api_prefix", "merchant_id", "api_token")
CHECK_ATTR = "_gw_connection_report"
STEP_LEVELS = {True: messages.SUCCESS, False: messages.ERROR, None: messages.WARNING}


def report_messages(request: HttpRequest, report: ConnectionReport) -> None:
    """The check's summary and each step at its own level: a failed step is never a ✓."""
    messages.add_message(request, messages.SUCCESS if report.ok else messages.ERROR, report.summary)
    if report.answered_by:
        messages.info(request, f"кто отвечает: {report.answered_by}")
    for step, line in zip(report.steps, report.lines(), strict=True):
        messages.add_message(request, STEP_LEVELS[step.ok], line)


def tools_gained(before: list[str], after: list[str], disabled: list[str]) -> list[ToolSpec]:
    """Write tools an assistant can call with the new toolsets and could not with the old."""
    return [
        spec
        for spec in catalog.CATALOG
        if spec.writes
        and spec.toolset in after
        and spec.toolset not in before
        and spec.name not in disabled
    ]


class RussianAddText(helpers.InlineAdminFormSet):
    """Django capitalises the model name inside «Добавить еще один …»; say it plainly."""

    def inline_formset_data(self) -> str:
        data = json.loads(super().inline_formset_data())
        data["options"]["addText"] = f"Добавить ещё {self.opts.verbose_name}"
        return json.dumps(data)


def ceiling_text(kind: str, currency: str, limit: int) -> str:
    """«в сутки: 500 000,00 ₽», «записей в час: 20», as the owner typed them."""
    label = CeilingKind(kind).label
    if kind == CeilingKind.PER_HOUR:
        return f"{label}: {limit}"
    return f"{label}: {format_rub(int(limit), currency or 'RUB')}"


class CeilingInline(admin.TabularInline):
    model = Ceiling
    form = CeilingForm
    extra = 0
    fields = ("kind", "currency", "limit", "usage")
    readonly_fields = ("usage",)

    @admin.display(description="использовано")
    def usage(self, obj: Ceiling) -> str:
        """What counts against the ceiling now (tools.pipeline.ceilings.used), beside its limit."""
        if obj.pk is None:
            return ""
        used = ceilings.used(obj, timezone.now())
        if used is None:
            return "проверяется каждая операция отдельно"
        if obj.kind == CeilingKind.PER_HOUR:
            return f"{used} из {obj.limit} за последний час"
        currency = obj.currency or "RUB"
        return f"{format_rub(used, currency)} из {format_rub(obj.limit, currency)} с полуночи"


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    fields = ("prefix", "label", "user", "created_at", "revoked_at")
    readonly_fields = fields
    can_delete = False
    verbose_name_plural = "ключи API (новый — «Ключи API» → «Добавить»)"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Contour)
class ContourAdmin(OwnerScoped, admin.ModelAdmin):
    contour_path = "pk"
    form = ContourForm
    list_display = (
        "slug",
        "name",
        "mode",
        "toolsets_display",
        "policy_display",
        "masked_token",
        "active_keys",
    )
    list_filter = ("mode", "approval_for_all_writes")
    search_fields = ("slug", "name")
    inlines = [CeilingInline, ApiKeyInline, ContourRoleInline]
    fieldsets = (
        (None, {"fields": ("slug", "name")}),
        ("Что может ассистент", {"fields": ("toolsets", "disabled_tools")}),
        (
            "Подтверждение записей",
            {
                "fields": (
                    "approval_for_all_writes",
                    "require_second_factor",
                    "approval_thresholds",
                    "allowed_currencies",
                    "confirmation_ttl_seconds",
                    "approval_window_hours",
                    "dedup_window_seconds",
                    "time_zone",
                )
            },
        ),
        (
            "Инвойсбокс",
            {
                "fields": (
                    "mode",
                    "base_url",
                    "api_prefix",
                    "merchant_id",
                    "api_token",
                    "api_token_sealed",
                    "notification_key",
                    "clear_notification_key",
                )
            },
        ),
        (
            "Оповещения операторов и ключи",
            {"fields": ("alert_webhook_url", "alert_webhook_secret", "key_grace_hours")},
        ),
    )

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        return [*super().get_fieldsets(request, obj), NOTIFICATION_FIELDSET]

    def get_list_display(self, request: HttpRequest) -> list[Any]:
        return [
            "mode_display" if name == "mode" else name for name in super().get_list_display(request)
        ]

    @admin.display(description="режим", ordering="mode")
    def mode_display(self, obj: Contour) -> str:
        label = InvoiceboxMode(obj.mode).label if obj.mode in InvoiceboxMode.values else obj.mode
        if obj.mode != InvoiceboxMode.CUSTOM:
            return label
        return format_html(
            '<span class="gw-custom-mode" style="color:#ba2121" title="{}">⚠ {}: {}</span>',
            CUSTOM_MODE_WARNING,
            label,
            obj.base_url,
        )

    @admin.display(description="наборы")
    def toolsets_display(self, obj: Contour) -> str:
        return ", ".join(Toolset(t).label for t in obj.toolsets if t in Toolset.values)

    @admin.display(description="подтверждение")
    def policy_display(self, obj: Contour) -> str:
        if obj.approval_for_all_writes:
            return "оператор — все записи"
        rub = obj.approval_threshold("RUB")
        return "в чате" + (f"; оператор выше {format_rub(rub)}" if rub is not None else "")

    @admin.display(description="токен API")
    def masked_token(self, obj: Contour) -> str:
        return obj.masked_token

    @admin.display(description="ключей")
    def active_keys(self, obj: Contour) -> int:
        return obj.api_keys.active().count()

    def get_inline_formsets(self, *args: Any, **kwargs: Any) -> list[helpers.InlineAdminFormSet]:
        formsets = super().get_inline_formsets(*args, **kwargs)
        for formset in formsets:
            formset.__class__ = RussianAddText
        return formsets

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # The journal outlives a contour, but its confirmations and operations would not:
        # switch the toolsets off instead.
        return False

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "catalog/",
                self.admin_site.admin_view(self.catalog_view),
                name="tools_contour_catalog",
            ),
            path(
                "<path:object_id>/check/",
                self.admin_site.admin_view(self.check_view),
                name="tools_contour_check",
            ),
            *super().get_urls(),
        ]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        contour = self.get_object(request, unquote(object_id))
        return super().change_view(
            request,
            object_id,
            form_url,
            {
                **(extra_context or {}),
                "unreachable_operators": alerts.unreachable_operators(contour),
            },
        )

    # -- «Проверить подключение»: tools.contours.connection, reads only --

    def check_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        contour = self.get_object(request, unquote(object_id))
        if request.method != "POST":
            return HttpResponseRedirect(reverse("admin:tools_contour_change", args=[contour.pk]))
        if not self.has_change_permission(request, contour):
            raise PermissionDenied
        report_messages(request, check_connection(contour))
        return HttpResponseRedirect(reverse("admin:tools_contour_change", args=[contour.pk]))

    def message_user(
        self,
        request: HttpRequest,
        message: Any,
        level: int | str = messages.INFO,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        """The save's own message, then the connection check that followed it (save_related):
        a save whose check failed is no green «успешно»."""
        report: ConnectionReport | None = getattr(request, CHECK_ATTR, None)
        if report is not None:
            delattr(request, CHECK_ATTR)
            if not report.ok and level == messages.SUCCESS:
                level = messages.WARNING
                message = format_html(
                    "{} Но подключение к Инвойсбокс не работает: "
                    "исправьте токен, адрес или магазин (ниже — что не так).",
                    message,
                )
        super().message_user(request, message, level, *args, **kwargs)
        if report is not None:
            report_messages(request, report)

    # -- the tool catalog page --

    def catalog_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        contours = list(self.get_queryset(request).order_by("slug"))
        rows = []
        for spec in catalog.CATALOG:
            rows.append(
                {
                    "spec": spec,
                    "kind": KIND_LABELS[spec.kind],
                    "toolset": Toolset(spec.toolset).label,
                    "enabled": [
                        c
                        for c in contours
                        if c.has_toolset(spec.toolset) and c.tool_enabled(spec.name)
                    ],
                    "switched_off": [c for c in contours if not c.tool_enabled(spec.name)],
                }
            )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Каталог инструментов",
            "rows": rows,
        }
        return TemplateResponse(request, "admin/tools/catalog.html", context)

    # -- turning writes on: a confirmation page first --

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        if request.method == "POST":
            if CONFIRM_FIELD in request.POST:
                # Kept across the second-factor check (tools/people/factors/held.py), a POST
                # is the one already confirmed on this page before the save was refused.
                resumed = getattr(request, held.RESUMED_ATTR, False)
                if not resumed and not pending_post.restore(request, object_id):
                    messages.error(
                        request, "Страница подтверждения устарела: сохраните контур ещё раз."
                    )
                    return HttpResponseRedirect(request.path)
            else:
                page = self._writes_confirmation(request, object_id)
                if page is not None:
                    return page
        return super().changeform_view(request, object_id, form_url, extra_context)

    def _writes_confirmation(
        self, request: HttpRequest, object_id: str | None
    ) -> HttpResponse | None:
        """The "what the assistant will then be able to do" page, when toolsets gain write or
        refund; None when no such step is needed (or the form is invalid: the normal view
        shows the errors)."""
        obj = self.get_object(request, unquote(object_id)) if object_id else None
        allowed = (
            self.has_change_permission(request, obj)
            if obj is not None
            else self.has_add_permission(request)
        )
        if not allowed or (object_id and obj is None):
            return None
        before = list(obj.toolsets) if obj is not None else [Toolset.READ]
        form_class = self.get_form(request, obj, change=obj is not None)
        form = form_class(request.POST, request.FILES, instance=obj)
        if not form.is_valid():
            return None
        after = form.cleaned_data["toolsets"]
        gained_sets = [t for t in WRITE_TOOLSETS if t in after and t not in before]
        if not gained_sets:
            return None
        posted_ceilings = self._ceilings_as_posted(request, form.instance, change=obj is not None)
        if posted_ceilings is None:
            return None  # the normal view shows the ceilings' errors
        nonce = pending_post.stash(request, object_id)
        data = form.cleaned_data
        thresholds = data.get("approval_thresholds") or {}
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "original": obj,
            "title": "Включить запись для ассистента?",
            "contour_name": data.get("name") or data.get("slug"),
            "gained": [Toolset(t).label for t in gained_sets],
            "tools": [
                {"spec": s, "kind": KIND_LABELS[s.kind]}
                for s in tools_gained(before, after, data.get("disabled_tools") or [])
            ],
            "all_writes_approved": data.get("approval_for_all_writes"),
            "thresholds": [(cur, format_rub(int(v), cur)) for cur, v in thresholds.items()],
            "ceilings": posted_ceilings,
            "mode": InvoiceboxMode(data["mode"]).label if data.get("mode") else "",
            "production": data.get("mode") == InvoiceboxMode.PRODUCTION,
            "confirm_field": CONFIRM_FIELD,
            "nonce": nonce,
            "back_url": request.path,
        }
        return TemplateResponse(request, "admin/tools/contour/confirm_writes.html", context)

    def _ceilings_as_posted(
        self, request: HttpRequest, contour: Contour, *, change: bool
    ) -> list[str] | None:
        """The ceilings this very form will save (its inline rows, deletions left out), as
        the owner reads them; None while a row is invalid. The stored ones may differ: the
        page is shown before anything is saved."""
        # ModelAdmin's own private step of changeform_view (django-stubs leave it out).
        formsets, _ = self._create_formsets(  # type: ignore[attr-defined]
            request, contour, change=change
        )
        rows = next((f for f in formsets if f.model is Ceiling), None)
        if rows is None:
            return [ceiling_text(c.kind, c.currency, c.limit) for c in contour.ceilings.all()]
        if not rows.is_valid():
            return None
        return [
            ceiling_text(row["kind"], row.get("currency") or "", row["limit"])
            for row in rows.cleaned_data
            if row and not row.get("DELETE") and row.get("limit") not in (None, "")
        ]

    # -- every save through tools.contours.services --

    def save_model(
        self, request: HttpRequest, obj: Contour, form: forms.ModelForm, change: bool
    ) -> None:
        stored = Contour.objects.filter(pk=obj.pk).first() if change else None
        form.state_before = contour_service.state_of(stored)  # type: ignore[attr-defined]
        super().save_model(request, obj, form, change)

    def save_formset(
        self, request: HttpRequest, form: forms.ModelForm, formset: Any, change: bool
    ) -> None:
        if formset.model is ContourRole:
            save_role_formset(request, formset, form.instance)
            return
        super().save_formset(request, form, formset, change)

    def save_related(
        self, request: HttpRequest, form: forms.ModelForm, formsets: Any, change: bool
    ) -> None:
        # Journaled after the inlines: the entry shows the ceilings saved with the contour.
        super().save_related(request, form, formsets, change)
        obj: Contour = form.instance
        if not change:
            contour_service.record_new(
                obj,
                actor=user_actor(request.user),
                channel="admin",
                creator=request.user,
                step_up=stepup.of_request(request),
            )
            setattr(request, CHECK_ATTR, check_connection(obj, quick=True))
            return
        changes = contour_service.record_change(
            obj,
            getattr(form, "state_before", contour_service.ContourState()),
            actor=user_actor(request.user),
            channel="admin",
            step_up=stepup.of_request(request),
        )
        if cast(ContourForm, form).token_entered or any(
            name in changes for name in CONNECTION_FIELDS
        ):
            setattr(request, CHECK_ATTR, check_connection(obj, quick=True))
        if any(key in changes for key in ("toolsets", "disabled_tools")):
            messages.info(
                request, "Набор инструментов изменён: ассистент увидит его при следующем вызове."
            )
