"""The admin's forms: a contour's settings, a ceiling, a new API key."""

from __future__ import annotations

from typing import Any, cast, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from invoicebox.notify import (
    DEFAULT_ALGORITHM,
    DEFAULT_METHOD,
    SIGNATURE_ALGORITHMS,
    SIGNATURE_METHODS,
)
from tools import catalog, secret_box
from tools.admin.widgets import MoneyInput, ThresholdsField, parse_roubles, roubles_text
from tools.background import alerts
from tools.contours import api_tokens
from tools.contours.services import (
    UUID_RE,
    default_base_url,
    mint_sandbox_merchant,
    new_contour_defaults,
)
from tools.keys import scope as keys
from tools.models import (
    UNREADABLE_TOKEN_TEXT,
    Ceiling,
    CeilingKind,
    Contour,
    InvoiceboxMode,
    Toolset,
    mask_secret,
)
from tools.params import Currency
from tools.spec import ToolSpec


def tool_label(spec: ToolSpec) -> str:
    return f"{spec.name} — {spec.title}"


# The one place a person meets both units: the form is in roubles, everything else in kopecks.
KOPECKS_NOTE = (
    "Здесь — рубли; API, команды и настройки принимают копейки: 100 000,00 ₽ там — 10000000."
)
KEPT_FROM_LAST_SUBMIT_HELP = (
    "токен из прошлой отправки формы сохранён (поле пустое, чтобы "
    "не показывать его); введите другой, чтобы заменить"
)


class ToolsetsWidget(forms.CheckboxSelectMultiple):
    """«чтение» is always on (clean_toolsets adds it): shown ticked and locked, not unticked."""

    def create_option(
        self,
        name: str,
        value: Any,
        label: Any,
        selected: Any,
        index: int,
        subindex: int | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        if value == Toolset.READ:
            option["selected"] = True
            option["attrs"] = {**option["attrs"], "checked": True, "disabled": True}
        return option


class ContourForm(forms.ModelForm):
    toolsets = forms.MultipleChoiceField(
        label="наборы инструментов",
        choices=Toolset.choices,
        required=False,
        widget=ToolsetsWidget,
        help_text="чтение включено всегда; запись и возвраты — только явно (с подтверждением "
        "на следующей странице)",
    )
    disabled_tools = forms.MultipleChoiceField(
        label="выключенные инструменты",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        choices=[(spec.name, tool_label(spec)) for spec in catalog.CATALOG],
        help_text="отмеченные ассистент не видит и не вызывает, даже если их набор включён",
    )
    # Both secrets are write-only: the fields start empty and an empty submit keeps the old one.
    api_token = forms.CharField(
        label="токен API Инвойсбокс",
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    notification_key = forms.CharField(
        label="ключ подписи уведомлений",
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    clear_notification_key = forms.BooleanField(
        label="удалить ключ подписи уведомлений",
        required=False,
    )
    alert_webhook_secret = forms.CharField(
        label="секрет подписи вебхука",
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="не показывается; тело подписано HMAC-SHA256, заголовок X-Gateway-Signature",
    )
    # Empty: the mode's own address (tools.contours.services.new_contour_defaults).
    base_url = forms.URLField(
        label="адрес API",
        max_length=500,
        assume_scheme="https",
        required=False,
        widget=forms.URLInput(attrs={"class": "vURLField gw-wide"}),
        help_text="пусто — адрес режима: встроенная песочница, или https://api.invoicebox.ru "
        "для demo и production; свой адрес — только в режиме custom",
    )
    # A token typed into a form that came back with an error is carried to the next submit
    # sealed (Fernet, GATEWAY_SECRETS_KEY), never echoed into the page as it was typed.
    api_token_sealed = forms.CharField(required=False, widget=forms.HiddenInput)
    alert_webhook_url = forms.URLField(
        label="адрес вебхука для операторов",
        max_length=500,
        required=False,
        assume_scheme="https",
        help_text="необязательно: JSON о каждой операции, ждущей оператора (ретранслятор в "
        "Telegram или Slack); без данных клиента",
    )
    approval_thresholds = ThresholdsField(
        label="порог одобрения оператором",
        required=False,
        help_text="в рублях и копейках, например 100 000,00; запись выше порога одобряет "
        "оператор; валюта без порога (пустое поле) — всегда оператор. " + KOPECKS_NOTE,
    )
    allowed_currencies = forms.MultipleChoiceField(
        label="разрешённые валюты записей",
        widget=forms.CheckboxSelectMultiple,
        required=False,
        choices=[(code, code) for code in get_args(Currency)],
        help_text="запись в другой валюте отклоняется; если заданы потолки сумм, у каждой "
        "разрешённой валюты должен быть свой потолок, иначе запись в ней отклоняется",
    )
    # Optional in the form (a form that doesn't send them keeps what is stored).
    notification_signature_method = forms.ChoiceField(
        label="метод подписи уведомлений",
        required=False,
        choices=[(m, m.upper()) for m in SIGNATURE_METHODS],
        help_text="только HMAC: метод hash из SDK не использует ключ и ничего не доказывает",
    )
    notification_signature_algorithm = forms.ChoiceField(
        label="алгоритм подписи уведомлений",
        required=False,
        choices=[(name, name) for name in SIGNATURE_ALGORITHMS],
        help_text="как в настройках уведомлений магазина в личном кабинете Инвойсбокс; "
        "по умолчанию sha1",
    )

    class Meta:
        model = Contour
        fields = (
            "slug",
            "name",
            "mode",
            "base_url",
            "api_prefix",
            "api_token",
            "merchant_id",
            "toolsets",
            "confirmation_ttl_seconds",
            "approval_window_hours",
            "dedup_window_seconds",
            "approval_thresholds",
            "allowed_currencies",
            "approval_for_all_writes",
            "require_second_factor",
            "time_zone",
            "disabled_tools",
            "notification_key",
            "alert_webhook_url",
            "alert_webhook_secret",
            "key_grace_hours",
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
        token = stored.masked_token if stored else ""
        key = (
            UNREADABLE_TOKEN_TEXT
            if stored and secret_box.is_unreadable(stored.notification_key)
            else mask_secret(stored.notification_key)
            if stored
            else ""
        )
        self.fields["api_token"].help_text = (f"сейчас: {token}; " if token else "") + (
            "не показывается; введите новый, чтобы заменить, или оставьте пустым"
        )
        self.fields["notification_key"].help_text = (
            f"сейчас: {key}; " if key else "сейчас не задан; "
        ) + ("не показывается; введите новый, чтобы заменить")
        self.fields["merchant_id"].required = False
        if not stored:
            self.fields["merchant_id"].help_text = (
                "новая песочница без токена и магазина получит свой магазин песочницы; для "
                "рабочего магазина — «Идентификатор магазина» из кабинета Инвойсбокс, вкладка "
                "«Интеграция (API)»"
            )
            if not self.is_bound:
                # The same starting values as `manage.py create_contour`: one service says.
                defaults = new_contour_defaults(
                    str(self.initial.get("mode") or InvoiceboxMode.SANDBOX)
                )
                self.initial = {**defaults, **self.initial}
        if self.is_bound and self.data.get("api_token_sealed") and not self.data.get("api_token"):
            self.fields["api_token"].help_text = KEPT_FROM_LAST_SUBMIT_HELP

    def clean_base_url(self) -> str:
        url = self.cleaned_data.get("base_url") or ""
        mode = self.data.get("mode") or ""
        if not url and mode in InvoiceboxMode.values and mode != InvoiceboxMode.CUSTOM:
            return default_base_url(mode)
        if not url:
            raise forms.ValidationError(
                "в режиме custom укажите адрес своего прокси или тестового двойника"
            )
        return url

    def clean_merchant_id(self) -> str:
        value = (self.cleaned_data.get("merchant_id") or "").strip()
        if value and not UUID_RE.match(value):
            raise forms.ValidationError(
                "идентификатор магазина — UUID вида 6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b: "
                "скопируйте его из кабинета Инвойсбокс, вкладка «Интеграция (API)»"
            )
        return value

    def clean_allowed_currencies(self) -> list[str]:
        chosen = list(self.cleaned_data.get("allowed_currencies") or [])
        writes = {Toolset.WRITE, Toolset.REFUND} & set(
            self.data.getlist("toolsets") if hasattr(self.data, "getlist") else []
        )
        if not chosen and writes:
            raise forms.ValidationError("для записи отметьте хотя бы одну валюту (обычно RUB)")
        return chosen

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

    def clean_alert_webhook_url(self) -> str:
        url = self.cleaned_data.get("alert_webhook_url") or ""
        problem = alerts.webhook_url_problem(url) if url else ""
        if problem:
            raise forms.ValidationError(problem)
        return url

    def clean_time_zone(self) -> str:
        value = self.cleaned_data.get("time_zone", "")
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise forms.ValidationError(
                "неизвестный часовой пояс, например Europe/Moscow"
            ) from None
        return value

    def clean_notification_signature_method(self) -> str:
        return self.cleaned_data.get("notification_signature_method") or (
            self.instance.notification_signature_method or DEFAULT_METHOD
        )

    def clean_notification_signature_algorithm(self) -> str:
        return self.cleaned_data.get("notification_signature_algorithm") or (
            self.instance.notification_signature_algorithm or DEFAULT_ALGORITHM
        )

    # Whether this submit carries a token (typed now, or typed into the form's last submit):
    # entered, it is the owner's answer for a new address even when it equals the stored one.
    token_entered = False

    def clean_api_token(self) -> str:
        raw = self.cleaned_data.get("api_token", "")
        try:
            token = api_tokens.clean(raw) if raw else self._unsealed_token()
        except api_tokens.TokenInputError as error:
            raise forms.ValidationError(str(error)) from None
        if token:
            self.token_entered = True
            return token
        if self.instance.pk:
            return self.instance.api_token
        if self.data.get("mode") == InvoiceboxMode.SANDBOX:
            return ""  # a sandbox merchant of its own is minted in clean()
        raise forms.ValidationError("для нового контура нужен токен")

    def _unsealed_token(self) -> str:
        sealed = self.data.get("api_token_sealed") or ""
        if not sealed.startswith(secret_box.PREFIX):
            return ""  # only what this form sealed itself
        try:
            return secret_box.unseal(sealed)
        except ValueError:  # sealed under a key no longer listed: ask for the token again
            return ""

    def _carry_token(self, token: str) -> None:
        """Put the typed token, sealed, into the hidden field the re-shown form renders."""
        data = cast("dict[str, Any]", self.data).copy()  # a QueryDict or a dict: both copy
        data["api_token_sealed"] = secret_box.seal(token)
        self.data = data
        # The bound field copied its help text when cleaning began.
        self.fields["api_token"].help_text = KEPT_FROM_LAST_SUBMIT_HELP
        self["api_token"].help_text = KEPT_FROM_LAST_SUBMIT_HELP

    def clean(self) -> dict[str, Any]:
        super().clean()  # Django's returns self.cleaned_data (typed as maybe None)
        data = self.cleaned_data
        typed = data.get("api_token") or ""
        if typed and self.token_entered:
            self._carry_token(typed)
            self.instance.entered_secrets = frozenset({"api_token"})
        if (
            not self.instance.pk
            and data.get("mode") == InvoiceboxMode.SANDBOX
            and not data.get("api_token")
        ):
            # Its own sandbox merchant: a tester of isolation must not see another's orders.
            data["api_token"], data["merchant_id"] = mint_sandbox_merchant()
        elif not data.get("merchant_id") and "merchant_id" not in self.errors:
            self.add_error(
                "merchant_id",
                "обязательное поле (для новой песочницы без токена его можно оставить пустым)",
            )
        if data.get("clear_notification_key"):
            data["notification_key"] = ""
        elif not data.get("notification_key") and self.instance.pk:
            data["notification_key"] = self.instance.notification_key
        if not data.get("alert_webhook_secret") and self.instance.pk:
            data["alert_webhook_secret"] = self.instance.alert_webhook_secret
        return data


class CeilingForm(forms.ModelForm):
    # Sums are typed in roubles and kopecks, the hourly count in pieces; the kind decides.
    limit = forms.CharField(
        label="предел",
        widget=MoneyInput(attrs={"size": 12}),
        help_text="сумма — в рублях (100 000,00), число записей — штуками (20). " + KOPECKS_NOTE,
    )

    class Meta:
        model = Ceiling
        fields = ("kind", "currency", "limit")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.initial["limit"] = (
                str(self.instance.limit)
                if self.instance.kind == CeilingKind.PER_HOUR
                else roubles_text(self.instance.limit)
            )

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
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
            len(currency) == 3 and currency.isalpha()
        ):
            self.add_error("currency", "для суммы нужна валюта, например RUB")
        data["currency"] = currency.upper()
        return data


class ApiKeyCreateForm(forms.Form):
    contour = forms.ModelChoiceField(label="контур", queryset=Contour.objects.order_by("slug"))
    label = forms.CharField(
        label="метка",
        max_length=200,
        required=False,
        help_text="для кого или для чего ключ, например «Claude, бухгалтерия»",
    )
    user = forms.ModelChoiceField(
        label="владелец ключа",
        required=False,
        queryset=get_user_model().objects.order_by("username"),
        help_text="человек, у которого ключ: он не сможет одобрять то, что ключ подготовил",
    )
    toolsets = forms.MultipleChoiceField(
        label="наборы ключа",
        choices=Toolset.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="пусто — как у контура; ключ никогда не шире контура (например, только "
        "чтение на контуре с записью)",
    )
    tools = forms.MultipleChoiceField(
        label="только инструменты",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        choices=[(spec.name, tool_label(spec)) for spec in catalog.CATALOG],
        help_text="пусто — все инструменты выбранных наборов",
    )
    expires_at = forms.DateTimeField(
        label="действует до",
        required=False,
        widget=forms.DateTimeInput(attrs={"placeholder": "31.12.2026 18:00", "size": 20}),
        help_text="дата и время, например 31.12.2026 18:00 (время сервера: "
        f"{settings.TIME_ZONE}); пусто — бессрочно; после этого момента ключ "
        "получает 401",
    )

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        try:
            data["toolsets"], data["tools"] = keys.parse_scope(
                ",".join(data.get("toolsets") or []), ",".join(data.get("tools") or [])
            )
        except keys.KeySetupError as error:
            raise forms.ValidationError(str(error)) from None
        if data.get("expires_at") and data["expires_at"] <= timezone.now():
            self.add_error("expires_at", "момент должен быть в будущем")
        return data
