"""Owners' admin: contours (toolsets, policy, ceilings, credentials), keys, the tool catalog."""

from __future__ import annotations

import json
import secrets
import uuid
from typing import Any, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html

from adapters.invoicebox.notify import (
    DEFAULT_ALGORITHM,
    DEFAULT_METHOD,
    SIGNATURE_ALGORITHMS,
    SIGNATURE_METHODS,
)
from audit import journal
from audit.admin import RevokedFilter, shortened
from tools import alerts, catalog, keys, roles
from tools.admin_money import MoneyInput, ThresholdsField, parse_roubles, roubles_text
from tools.admin_scope import (
    ContourRoleInline,
    OwnerScoped,
    contour_filter,
    key_last_use,
    save_role_formset,
)
from tools.contours import connect_sandbox_notifications
from tools.models import (
    ApiKey,
    Ceiling,
    CeilingKind,
    Contour,
    ContourRole,
    InvoiceboxMode,
    Operation,
    PendingConfirmation,
    Role,
    Toolset,
    mask_secret,
)
from tools.params import Currency, format_rub
from tools.spec import ToolSpec

admin.site.site_header = "Шлюз Инвойсбокс для ассистентов"
admin.site.site_title = "Шлюз Инвойсбокс"
admin.site.index_title = "Управление шлюзом"
admin.site.site_url = "/approvals/"  # "Открыть сайт": the operators' queue
# The model list is on the index page; the sidebar would take the width the journal needs.
admin.site.enable_nav_sidebar = False

KIND_LABELS = {"read": "чтение", "write": "запись", "money": "деньги"}
WRITE_TOOLSETS = (Toolset.WRITE, Toolset.REFUND)
# The owner's POST waiting on the "what the assistant will be able to do" page, by nonce.
PENDING_POST_KEY = "contour-writes:{nonce}"
CONFIRM_FIELD = "_confirm_writes"
# What the journal compares before and after a contour change (secrets separately, by value
# equality only: their values never enter the journal).
AUDITED_FIELDS = (
    "slug", "name", "mode", "base_url", "merchant_id", "toolsets", "disabled_tools",
    "approval_for_all_writes", "approval_thresholds", "allowed_currencies",
    "confirmation_ttl_seconds", "approval_window_hours", "dedup_window_seconds", "time_zone",
    "key_grace_hours",
)
# The webhook URL counts as a secret: a relay's URL (Telegram) carries its token.
SECRET_FIELDS = ("api_token", "notification_key", "notify_webhook_url", "notify_webhook_secret")
# The journal masks values under a key called "name" as personal data; a contour's name isn't.
JOURNAL_KEYS = {"name": "contour_name"}


# How the contour verifies payment notifications (issue 15.8): audited like the rest.
SIGNATURE_FIELDS = ("notification_signature_method", "notification_signature_algorithm")
AUDITED_FIELDS += SIGNATURE_FIELDS
NOTIFICATION_FIELDSET = ("Уведомления об оплате", {"fields": SIGNATURE_FIELDS})
CUSTOM_MODE_WARNING = ("режим custom: токен Инвойсбокс уходит на этот адрес, а не на "
                       "официальный API; только свой прокси или тестовый двойник")


def actor(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


def tool_label(spec: ToolSpec) -> str:
    return f"{spec.name} — {spec.title}"


def tools_gained(before: list[str], after: list[str], disabled: list[str]) -> list[ToolSpec]:
    """Write tools an assistant can call with the new toolsets and could not with the old."""
    return [spec for spec in catalog.CATALOG
            if spec.writes and spec.toolset in after and spec.toolset not in before
            and spec.name not in disabled]


# -- contours ---------------------------------------------------------------------------------

class ContourForm(forms.ModelForm):
    toolsets = forms.MultipleChoiceField(
        label="наборы инструментов", choices=Toolset.choices, required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="чтение включено всегда; запись и возвраты — только явно (с подтверждением "
                  "на следующей странице)",
    )
    disabled_tools = forms.MultipleChoiceField(
        label="выключенные инструменты", required=False, widget=forms.CheckboxSelectMultiple,
        choices=[(spec.name, tool_label(spec)) for spec in catalog.CATALOG],
        help_text="отмеченные ассистент не видит и не вызывает, даже если их набор включён",
    )
    # Both secrets are write-only: the fields start empty and an empty submit keeps the old one.
    api_token = forms.CharField(
        label="токен API Инвойсбокс", required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    notification_key = forms.CharField(
        label="ключ подписи уведомлений", required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    clear_notification_key = forms.BooleanField(
        label="удалить ключ подписи уведомлений", required=False,
    )
    notify_webhook_secret = forms.CharField(
        label="секрет подписи вебхука", required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="не показывается; тело подписано HMAC-SHA256, заголовок X-Gateway-Signature",
    )
    base_url = forms.URLField(label="адрес API", max_length=500, assume_scheme="https")
    notify_webhook_url = forms.URLField(
        label="адрес вебхука для операторов", max_length=500, required=False,
        assume_scheme="https",
        help_text="необязательно: JSON о каждой операции, ждущей оператора (ретранслятор в "
                  "Telegram или Slack); без данных клиента")
    approval_thresholds = ThresholdsField(
        label="порог одобрения оператором", required=False,
        help_text="в рублях и копейках, например 100 000,00; запись выше порога одобряет "
                  "оператор; валюта без порога (пустое поле) — всегда оператор",
    )
    allowed_currencies = forms.MultipleChoiceField(
        label="разрешённые валюты записей", widget=forms.CheckboxSelectMultiple,
        choices=[(code, code) for code in get_args(Currency)],
        help_text="запись в другой валюте отклоняется; если заданы потолки сумм, у каждой "
                  "разрешённой валюты должен быть свой потолок, иначе запись в ней отклоняется",
    )
    # Optional in the form (a form that doesn't send them keeps what is stored).
    notification_signature_method = forms.ChoiceField(
        label="метод подписи уведомлений", required=False,
        choices=[(m, m.upper()) for m in SIGNATURE_METHODS],
        help_text="только HMAC: метод hash из SDK не использует ключ и ничего не доказывает",
    )
    notification_signature_algorithm = forms.ChoiceField(
        label="алгоритм подписи уведомлений", required=False,
        choices=[(name, name) for name in SIGNATURE_ALGORITHMS],
        help_text="как в настройках уведомлений магазина в личном кабинете Инвойсбокс; "
                  "по умолчанию sha1",
    )

    class Meta:
        model = Contour
        fields = (
            "slug", "name", "mode", "base_url", "api_token", "merchant_id", "toolsets",
            "confirmation_ttl_seconds", "approval_window_hours", "dedup_window_seconds",
            "approval_thresholds",
            "allowed_currencies", "approval_for_all_writes", "time_zone", "disabled_tools",
            "notification_key", "notify_webhook_url", "notify_webhook_secret", "key_grace_hours",
        )
        help_texts = {
            "approval_for_all_writes": "иначе достаточно подтверждения в чате (ниже порога)",
            "dedup_window_seconds": "та же запись в этом окне вернёт прежний результат",
            "mode": "demo и production — только официальный API по https; custom — свой "
                    "адрес (прокси, тестовый двойник): токен уходит туда, проверьте адрес; "
                    "смена режима или адреса стирает токен",
            "confirmation_ttl_seconds": "сколько живёт токен подтверждения в чате",
            "approval_window_hours": "сколько запись, ждущая оператора, остаётся открытой",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        stored = self.instance if self.instance.pk else None
        token = mask_secret(stored.api_token) if stored else ""
        key = mask_secret(stored.notification_key) if stored else ""
        self.fields["api_token"].help_text = (
            f"сейчас: {token}; " if token else "") + (
            "не показывается; введите новый, чтобы заменить, или оставьте пустым")
        self.fields["notification_key"].help_text = (
            f"сейчас: {key}; " if key else "сейчас не задан; ") + (
            "не показывается; введите новый, чтобы заменить")
        self.fields["merchant_id"].required = False
        if not stored:
            self.fields["merchant_id"].help_text = (
                "новая песочница без токена и магазина получит свой магазин песочницы")

    def clean_toolsets(self) -> list[str]:
        chosen = set(self.cleaned_data.get("toolsets") or []) | {Toolset.READ}
        return [value for value in Toolset.values if value in chosen]

    def clean_disabled_tools(self) -> list[str]:
        chosen = set(self.cleaned_data.get("disabled_tools") or [])
        return [name for name in catalog.names() if name in chosen]

    def clean_approval_thresholds(self) -> dict[str, int]:
        value = self.cleaned_data.get("approval_thresholds")
        if not isinstance(value, dict):
            raise forms.ValidationError('нужен объект: {"RUB": 10000000}')
        for currency, kopecks in value.items():
            if not (isinstance(currency, str) and len(currency) == 3 and currency.isupper()):
                raise forms.ValidationError(f"{currency!r}: код валюты из трёх заглавных букв")
            if isinstance(kopecks, bool) or not isinstance(kopecks, int) or kopecks < 0:
                raise forms.ValidationError(f"{currency}: целое неотрицательное число копеек")
        return value

    def clean_notify_webhook_url(self) -> str:
        url = self.cleaned_data.get("notify_webhook_url") or ""
        problem = alerts.webhook_url_problem(url) if url else ""
        if problem:
            raise forms.ValidationError(problem)
        return url

    def clean_time_zone(self) -> str:
        value = self.cleaned_data.get("time_zone", "")
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise forms.ValidationError("неизвестный часовой пояс, например Europe/Moscow"
                                        ) from None
        return value

    def clean_notification_signature_method(self) -> str:
        return self.cleaned_data.get("notification_signature_method") or (
            self.instance.notification_signature_method or DEFAULT_METHOD)

    def clean_notification_signature_algorithm(self) -> str:
        return self.cleaned_data.get("notification_signature_algorithm") or (
            self.instance.notification_signature_algorithm or DEFAULT_ALGORITHM)

    def clean_api_token(self) -> str:
        token = self.cleaned_data.get("api_token", "")
        if token:
            return token
        if self.instance.pk:
            return self.instance.api_token
        if self.data.get("mode") == InvoiceboxMode.SANDBOX:
            return ""  # a sandbox merchant of its own is minted in clean()
        raise forms.ValidationError("для нового контура нужен токен")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if (not self.instance.pk and data.get("mode") == InvoiceboxMode.SANDBOX
                and not data.get("api_token")):
            # Its own sandbox merchant: a tester of isolation must not see another's orders.
            data["api_token"] = f"sbx_{secrets.token_hex(16)}"
            data["merchant_id"] = str(uuid.uuid4())
            self.minted_sandbox = True
        elif not data.get("merchant_id") and "merchant_id" not in self.errors:
            self.add_error("merchant_id", "обязательное поле (для новой песочницы без токена "
                                          "его можно оставить пустым)")
        if data.get("clear_notification_key"):
            data["notification_key"] = ""
        elif not data.get("notification_key") and self.instance.pk:
            data["notification_key"] = self.instance.notification_key
        if not data.get("notify_webhook_secret") and self.instance.pk:
            data["notify_webhook_secret"] = self.instance.notify_webhook_secret
        return data


class CeilingForm(forms.ModelForm):
    # Sums are typed in roubles and kopecks, the hourly count in pieces; the kind decides.
    limit = forms.CharField(
        label="предел", widget=MoneyInput(attrs={"size": 12}),
        help_text="сумма — в рублях (100 000,00), число записей — штуками (20)",
    )

    class Meta:
        model = Ceiling
        fields = ("kind", "currency", "limit")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.initial["limit"] = (str(self.instance.limit)
                                     if self.instance.kind == CeilingKind.PER_HOUR
                                     else roubles_text(self.instance.limit))

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        kind, currency = data.get("kind"), (data.get("currency") or "").strip()
        raw = str(data.get("limit") or "").strip()
        if raw and kind == CeilingKind.PER_HOUR:
            if raw.isascii() and raw.isdigit():
                data["limit"] = int(raw)
            else:
                self.add_error("limit", "число записей — целое число, например 20")
        elif raw:
            try:
                data["limit"] = parse_roubles(raw)
            except forms.ValidationError as error:
                self.add_error("limit", error)
        if kind == CeilingKind.PER_HOUR and currency:
            self.add_error("currency", "у числа записей валюты нет: оставьте пустым")
        if kind in (CeilingKind.PER_ORDER, CeilingKind.PER_DAY) and not (
                len(currency) == 3 and currency.isalpha()):
            self.add_error("currency", "для суммы нужна валюта, например RUB")
        data["currency"] = currency.upper()
        return data


class RussianAddText(helpers.InlineAdminFormSet):
    """Django capitalises the model name inside «Добавить еще один …»; say it plainly."""

    def inline_formset_data(self) -> str:
        data = json.loads(super().inline_formset_data())
        data["options"]["addText"] = f"Добавить ещё {self.opts.verbose_name}"
        return json.dumps(data)


class CeilingInline(admin.TabularInline):
    model = Ceiling
    form = CeilingForm
    extra = 0
    fields = ("kind", "currency", "limit", "limit_display")
    readonly_fields = ("limit_display",)

    @admin.display(description="сейчас")
    def limit_display(self, obj: Ceiling) -> str:
        if obj.pk is None:
            return ""
        if obj.kind == CeilingKind.PER_HOUR:
            return f"{obj.limit} в час"
        return format_rub(obj.limit, obj.currency or "RUB")


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    fields = ("prefix", "label", "user", "created_at", "revoked_at")
    readonly_fields = fields
    can_delete = False
    verbose_name_plural = "ключи API (новый — «Ключи API» → «Добавить»)"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def snapshot(contour: Contour | None) -> dict[str, Any]:
    """A contour's audited settings as plain JSON values (no secrets)."""
    if contour is None or contour.pk is None:
        return {}
    state = {JOURNAL_KEYS.get(name, name): getattr(contour, name) for name in AUDITED_FIELDS}
    state["ceilings"] = sorted(
        f"{c.kind} {c.currency or '-'} {c.limit}" for c in contour.ceilings.all())
    return state


def describe(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "—"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, bool):
        return "да" if value else "нет"
    return str(value) if value not in ("", None) else "—"


@admin.register(Contour)
class ContourAdmin(OwnerScoped, admin.ModelAdmin):
    contour_path = "pk"
    form = ContourForm
    list_display = ("slug", "name", "mode", "toolsets_display", "policy_display", "masked_token",
                    "active_keys")
    list_filter = ("mode", "approval_for_all_writes")
    search_fields = ("slug", "name")
    inlines = [CeilingInline, ApiKeyInline, ContourRoleInline]
    fieldsets = (
        (None, {"fields": ("slug", "name")}),
        ("Что может ассистент", {"fields": ("toolsets", "disabled_tools")}),
        ("Подтверждение записей", {"fields": (
            "approval_for_all_writes", "approval_thresholds", "allowed_currencies",
            "confirmation_ttl_seconds", "approval_window_hours", "dedup_window_seconds",
            "time_zone")}),
        ("Инвойсбокс", {"fields": ("mode", "base_url", "merchant_id", "api_token",
                                   "notification_key", "clear_notification_key")}),
        ("Оповещения операторов и ключи", {"fields": (
            "notify_webhook_url", "notify_webhook_secret", "key_grace_hours")}),
    )

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        return [*super().get_fieldsets(request, obj), NOTIFICATION_FIELDSET]

    def get_list_display(self, request: HttpRequest) -> list[str]:
        return ["mode_display" if name == "mode" else name
                for name in super().get_list_display(request)]

    @admin.display(description="режим", ordering="mode")
    def mode_display(self, obj: Contour) -> str:
        label = InvoiceboxMode(obj.mode).label if obj.mode in InvoiceboxMode.values else obj.mode
        if obj.mode != InvoiceboxMode.CUSTOM:
            return label
        return format_html('<span class="gw-custom-mode" style="color:#ba2121" title="{}">'
                           "⚠ {}: {}</span>", CUSTOM_MODE_WARNING, label, obj.base_url)

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
            path("catalog/", self.admin_site.admin_view(self.catalog_view),
                 name="tools_contour_catalog"),
            *super().get_urls(),
        ]

    # -- the tool catalog page --

    def catalog_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        contours = list(self.get_queryset(request).order_by("slug"))
        rows = []
        for spec in catalog.CATALOG:
            rows.append({
                "spec": spec, "kind": KIND_LABELS[spec.kind],
                "toolset": Toolset(spec.toolset).label,
                "enabled": [c for c in contours
                            if c.has_toolset(spec.toolset) and c.tool_enabled(spec.name)],
                "switched_off": [c for c in contours if not c.tool_enabled(spec.name)],
            })
        context = {**self.admin_site.each_context(request), "opts": self.model._meta,
                   "title": "Каталог инструментов", "rows": rows}
        return TemplateResponse(request, "admin/tools/catalog.html", context)

    # -- turning writes on: a confirmation page first --

    def changeform_view(self, request: HttpRequest, object_id: str | None = None,
                        form_url: str = "", extra_context: dict[str, Any] | None = None
                        ) -> HttpResponse:
        if request.method == "POST":
            if CONFIRM_FIELD in request.POST:
                if not self._restore_post(request, object_id):
                    messages.error(request, "Страница подтверждения устарела: сохраните "
                                            "контур ещё раз.")
                    return HttpResponseRedirect(request.path)
            else:
                page = self._writes_confirmation(request, object_id)
                if page is not None:
                    return page
        return super().changeform_view(request, object_id, form_url, extra_context)

    def _writes_confirmation(self, request: HttpRequest, object_id: str | None
                             ) -> HttpResponse | None:
        """The "what the assistant will then be able to do" page, when toolsets gain write or
        refund; None when no such step is needed (or the form is invalid: the normal view
        shows the errors)."""
        obj = self.get_object(request, unquote(object_id)) if object_id else None
        allowed = (self.has_change_permission(request, obj) if obj is not None
                   else self.has_add_permission(request))
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
        nonce = secrets.token_urlsafe(16)
        # Kept server-side (the session), not in hidden fields: a token typed into this
        # form must not be echoed back into a page. Popped on confirmation.
        request.session[PENDING_POST_KEY.format(nonce=nonce)] = {
            "object_id": object_id or "",
            "post": {k: request.POST.getlist(k) for k in request.POST
                     if k != "csrfmiddlewaretoken"},
        }
        data = form.cleaned_data
        thresholds = data.get("approval_thresholds") or {}
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta, "original": obj,
            "title": "Включить запись для ассистента?",
            "contour_name": data.get("name") or data.get("slug"),
            "gained": [Toolset(t).label for t in gained_sets],
            "tools": [{"spec": s, "kind": KIND_LABELS[s.kind]}
                      for s in tools_gained(before, after, data.get("disabled_tools") or [])],
            "all_writes_approved": data.get("approval_for_all_writes"),
            "thresholds": [(cur, format_rub(int(v), cur)) for cur, v in thresholds.items()],
            "ceilings": list(obj.ceilings.all()) if obj is not None else [],
            "mode": InvoiceboxMode(data["mode"]).label if data.get("mode") else "",
            "production": data.get("mode") == InvoiceboxMode.PRODUCTION,
            "confirm_field": CONFIRM_FIELD, "nonce": nonce,
            "back_url": request.path,
        }
        return TemplateResponse(request, "admin/tools/contour/confirm_writes.html", context)

    def _restore_post(self, request: HttpRequest, object_id: str | None) -> bool:
        stash = request.session.pop(
            PENDING_POST_KEY.format(nonce=request.POST.get(CONFIRM_FIELD, "")), None)
        if not stash or stash.get("object_id") != (object_id or ""):
            return False
        restored = QueryDict(mutable=True)
        for name, values in stash["post"].items():
            restored.setlist(name, values)
        restored[CONFIRM_FIELD] = "1"
        request.POST = restored
        return True

    # -- journaling every change --

    def save_model(self, request: HttpRequest, obj: Contour, form: forms.ModelForm,
                   change: bool) -> None:
        stored = Contour.objects.filter(pk=obj.pk).first() if change else None
        form.journal_before = snapshot(stored)  # type: ignore[attr-defined]
        form.secrets_before = (  # type: ignore[attr-defined]
            {name: getattr(stored, name) for name in SECRET_FIELDS} if stored else {})
        super().save_model(request, obj, form, change)
        if getattr(form, "minted_sandbox", False):
            connect_sandbox_notifications(obj, own_account=True)

    def save_formset(self, request: HttpRequest, form: forms.ModelForm, formset: Any,
                     change: bool) -> None:
        if formset.model is ContourRole:
            save_role_formset(request, formset, form.instance)
            return
        super().save_formset(request, form, formset, change)

    def save_related(self, request: HttpRequest, form: forms.ModelForm, formsets: Any,
                     change: bool) -> None:
        super().save_related(request, form, formsets, change)
        obj: Contour = form.instance
        before: dict[str, Any] = getattr(form, "journal_before", {})
        old_secrets: dict[str, str] = getattr(form, "secrets_before", {})
        after = snapshot(obj)
        changes = {key: {"before": before.get(key), "after": value}
                   for key, value in after.items() if not change or before.get(key) != value}
        replaced = [name for name in SECRET_FIELDS
                    if change and old_secrets.get(name) != getattr(obj, name)]
        if change and not changes and not replaced:
            return
        parts = [f"{key}: {describe(diff['before'])} → {describe(diff['after'])}"
                 for key, diff in changes.items()] if change else []
        parts += [f"{name}: заменён" for name in replaced]
        journal.record(
            contour=obj.slug, channel="admin", actor=actor(request), tool="", phase="configure",
            arguments={"object": "contour", "action": "changed" if change else "created",
                       "changes": changes, "credentials_replaced": replaced},
            status="ok", code="contour_changed" if change else "contour_created",
            message=(f"контур {obj.slug} изменён: " + "; ".join(parts)) if change
            else f"контур {obj.slug} создан: наборы {describe(obj.toolsets)}",
            secrets=[*obj.secrets(), obj.notify_webhook_url, *old_secrets.values()],
        )
        if not change and not request.user.is_superuser:
            # An owner who starts a contour owns it (and nothing else changes hands).
            roles.grant(request.user, Role.OWNER, obj, by=actor(request))
        if change and any(key in changes for key in ("toolsets", "disabled_tools")):
            messages.info(request, "Набор инструментов изменён: ассистент увидит его при "
                                   "следующем вызове.")


# -- API keys ---------------------------------------------------------------------------------

class ApiKeyCreateForm(forms.Form):
    contour = forms.ModelChoiceField(label="контур", queryset=Contour.objects.order_by("slug"))
    label = forms.CharField(label="метка", max_length=200, required=False,
                            help_text="для кого или для чего ключ, например «Claude, бухгалтерия»")
    user = forms.ModelChoiceField(
        label="владелец ключа", required=False,
        queryset=get_user_model().objects.order_by("username"),
        help_text="человек, у которого ключ: он не сможет одобрять то, что ключ подготовил",
    )
    toolsets = forms.MultipleChoiceField(
        label="наборы ключа", choices=Toolset.choices, required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="пусто — как у контура; ключ никогда не шире контура (например, только "
                  "чтение на контуре с записью)")
    tools = forms.MultipleChoiceField(
        label="только инструменты", required=False, widget=forms.CheckboxSelectMultiple,
        choices=[(spec.name, tool_label(spec)) for spec in catalog.CATALOG],
        help_text="пусто — все инструменты выбранных наборов")
    expires_at = forms.DateTimeField(label="действует до", required=False,
                                     help_text="после этого момента ключ получает 401")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        try:
            data["toolsets"], data["tools"] = keys.parse_scope(
                ",".join(data.get("toolsets") or []), ",".join(data.get("tools") or []))
        except keys.KeySetupError as error:
            raise forms.ValidationError(str(error)) from None
        if data.get("expires_at") and data["expires_at"] <= timezone.now():
            self.add_error("expires_at", "момент должен быть в будущем")
        return data


@admin.register(ApiKey)
class ApiKeyAdmin(OwnerScoped, admin.ModelAdmin):
    list_display = ("prefix", "contour", "label", "user", "created_at", "state", "scope",
                    "last_use")
    list_filter = (contour_filter, RevokedFilter)
    search_fields = ("prefix", "label")
    fields = ("contour", "prefix", "label", "user", "created_at", "revoked_at", "toolsets",
              "tools", "expires_at", "last_use")
    readonly_fields = ("contour", "prefix", "created_at", "revoked_at", "toolsets", "tools",
                       "expires_at", "last_use")
    last_use = key_last_use

    @admin.display(description="доступ")
    def scope(self, obj: ApiKey) -> str:
        return keys.describe_scope(obj).strip(" ()") or "как у контура"

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False,
                 **kwargs: Any) -> type[forms.ModelForm]:
        form = super().get_form(request, obj, change=change, **kwargs)
        if "user" in form.base_fields:
            form.base_fields["user"].queryset = roles.people_for(request.user)
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

    def add_view(self, request: HttpRequest, form_url: str = "",
                 extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """Issue a key and show it once; afterwards only its prefix exists (admin views are
        never cached; the page with the key also says no-store)."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ApiKeyCreateForm(request.POST or None,
                                initial={"contour": request.GET.get("contour")})
        form.fields["contour"].queryset = roles.contours_for(
            request.user, Role.OWNER).order_by("slug")
        form.fields["user"].queryset = roles.people_for(request.user)
        context = {**self.admin_site.each_context(request), "opts": self.model._meta,
                   "title": "Новый ключ API", "form": form}
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            key, raw = keys.issue(data["contour"], label=data["label"], user=data["user"],
                                  toolsets=data["toolsets"], tools=data["tools"],
                                  expires_at=data["expires_at"], actor=actor(request))
            response = TemplateResponse(request, "admin/tools/apikey/issued.html",
                                        {**context, "title": "Ключ выдан", "key": key,
                                         "raw": raw})
            response["Cache-Control"] = "no-store"
            return response
        return TemplateResponse(request, "admin/tools/apikey/add.html", context)

    def save_model(self, request: HttpRequest, obj: ApiKey, form: forms.ModelForm,
                   change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change and form.changed_data:
            self._journal_key(request, obj, "api_key_changed",
                              f"ключ {obj.prefix}…: изменены " + ", ".join(form.changed_data))

    @admin.action(description="Отозвать выбранные ключи")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = 0
        with transaction.atomic():
            for key in queryset.filter(revoked_at__isnull=True).select_related("contour"):
                key.revoke()
                self._journal_key(request, key, "api_key_revoked", f"ключ {key.prefix}… отозван")
                count += 1
        self.message_user(request, f"Отозвано ключей: {count}.")

    @admin.action(description="Заменить ключ (прежний действует ещё срок замены контура)")
    def rotate(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> HttpResponse | None:
        chosen = list(queryset.select_related("contour")[:2])
        if len(chosen) != 1:
            self.message_user(request, "Выберите один ключ.", messages.WARNING)
            return None
        try:
            key, raw = keys.rotate(chosen[0], actor=actor(request))
        except keys.KeySetupError:
            self.message_user(request, "Ключ отозван или истёк: выдайте новый.", messages.ERROR)
            return None
        chosen[0].refresh_from_db()
        context = {**self.admin_site.each_context(request), "opts": self.model._meta,
                   "title": "Ключ заменён", "key": key, "raw": raw, "replaced": chosen[0]}
        response = TemplateResponse(request, "admin/tools/apikey/issued.html", context)
        response["Cache-Control"] = "no-store"
        return response

    def _journal_key(self, request: HttpRequest, key: ApiKey, code: str, message: str) -> None:
        journal.record(
            contour=key.contour.slug, channel="admin", actor=actor(request), tool="",
            phase="configure",
            arguments={"object": "api_key", "prefix": key.prefix, "label": key.label,
                       "holder": key.user.get_username() if key.user else ""},
            status="ok", code=code, message=message,
            secrets=[key.contour.api_token, key.contour.notification_key],
        )


# -- read-only records --------------------------------------------------------------------------

class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PendingConfirmation)
class PendingConfirmationAdmin(OwnerScoped, ReadOnlyAdmin):
    list_display = ("created_at", "contour", "tool", "status", "operator_needed",
                    "expires_at", "decided_by_short", "approval_link")
    list_filter = ("status", "tool", contour_filter, "requires_approval")
    exclude = ("token_hash",)
    ordering = ("-created_at",)

    @admin.display(description="оператор", boolean=True, ordering="requires_approval")
    def operator_needed(self, obj: PendingConfirmation) -> bool:
        return obj.requires_approval

    @admin.display(description="решил", ordering="decided_by")
    def decided_by_short(self, obj: PendingConfirmation) -> str:
        return shortened(obj.decided_by, 18)

    @admin.display(description="страница оператора")
    def approval_link(self, obj: PendingConfirmation) -> str:
        if not obj.requires_approval:
            return "—"
        return format_html('<a href="{}">открыть</a>',
                           reverse("approval-detail", args=[obj.id]))


@admin.register(Operation)
class OperationAdmin(OwnerScoped, ReadOnlyAdmin):
    list_display = ("key", "contour", "tool", "state", "merchant_order_id", "amount", "currency",
                    "created_at")
    list_filter = ("state", "tool", contour_filter)


__all__ = ["ApiKeyAdmin", "ContourAdmin", "snapshot"]

# The people admin (a superuser's reset of someone's second factor) registers on import.
from tools.factors import admin as _factors_admin  # noqa: E402, F401
