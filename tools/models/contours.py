"""Contours: one assistant's perimeter (endpoint, credentials, toolsets, approval policy) and
the owner's ceilings on it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from invoicebox.notify import (
    DEFAULT_ALGORITHM,
    DEFAULT_METHOD,
    SIGNATURE_ALGORITHMS,
    SIGNATURE_METHODS,
)
from tools.contours.endpoints import (
    OFFICIAL_API_ORIGIN,
    OFFICIAL_MODES,
    ApiPrefix,
    InvoiceboxMode,
    api_prefix_problem,
    base_url_problem,
)
from tools.hashing import mask_secret
from tools.params import format_rub
from tools.secret_box import EncryptedTextField, is_unreadable

UNREADABLE_TOKEN_TEXT = "токен не читается — введите заново"  # noqa: S105 - a label


class Toolset(models.TextChoices):
    READ = "read", "чтение"
    WRITE = "write", "запись"
    REFUND = "refund", "возвраты"


def _default_toolsets() -> list[str]:
    return [Toolset.READ]


def _default_confirmation_ttl() -> int:
    return settings.GATEWAY_CONFIRMATION_TTL_SECONDS


def _default_dedup_window() -> int:
    return settings.GATEWAY_DEDUP_WINDOW_SECONDS


def _default_approval_window() -> int:
    return settings.GATEWAY_APPROVAL_WINDOW_HOURS


def _default_allowed_currencies() -> list[str]:
    return ["RUB"]


def _default_approval_thresholds() -> dict[str, int]:
    return {"RUB": settings.GATEWAY_APPROVAL_THRESHOLD_KOPECKS}


class Contour(models.Model):
    """One assistant's perimeter: its Invoicebox credentials, toolsets and confirmation policy."""

    slug = models.SlugField("код", max_length=64, unique=True)
    name = models.CharField("название", max_length=200)
    mode = models.CharField(
        "режим Инвойсбокс",
        max_length=16,
        choices=InvoiceboxMode.choices,
        default=InvoiceboxMode.SANDBOX,
    )
    base_url = models.URLField("адрес API", max_length=500)
    api_prefix = models.CharField(
        "префикс API",
        max_length=2,
        choices=ApiPrefix.choices,
        default=ApiPrefix.V3,
        help_text="/v3/ — для магазинов Инвойсбокс; /l3/ — для магазинов Инвойсбокс.Бизнес "
        "(зарегистрированных на business.invoicebox.ru, токен вида «12345-API:…»). "
        "Берите тот, что указан в личном кабинете рядом с токеном; смена префикса "
        "сбрасывает токен.",
    )
    # Never rendered back in full: see masked_token and the admin form (write-only). Encrypted
    # at rest; cleared whenever mode, base URL or API prefix change (save), so it never
    # reaches a new host.
    api_token = EncryptedTextField("токен API", blank=True)
    merchant_id = models.CharField("идентификатор магазина (merchantId)", max_length=36)
    toolsets = models.JSONField("включённые наборы инструментов", default=_default_toolsets)
    confirmation_ttl_seconds = models.PositiveIntegerField(
        "срок жизни подтверждения, с", default=_default_confirmation_ttl
    )
    dedup_window_seconds = models.PositiveIntegerField(
        "окно защиты от дублей, с", default=_default_dedup_window
    )
    # A write that waits for an operator lives this long instead of confirmation_ttl_seconds.
    approval_window_hours = models.PositiveIntegerField(
        "срок на решение оператора, ч",
        default=_default_approval_window,
        validators=[MinValueValidator(1)],
    )
    # Kopecks per currency; a write above it waits for an operator. A currency missing here
    # always needs one: an unknown scale is no reason to skip the human.
    approval_thresholds = models.JSONField(
        "порог одобрения оператором, копейки по валютам", default=_default_approval_thresholds
    )
    # Writes in any other currency are refused: a currency nobody configured has no threshold
    # and no ceiling an owner ever thought about.
    allowed_currencies = models.JSONField(
        "разрешённые валюты записей", default=_default_allowed_currencies
    )
    approval_for_all_writes = models.BooleanField(
        "все записи только после одобрения оператором", default=False
    )
    # Stricter than GATEWAY_REQUIRE_SECOND_FACTOR, never looser (tools/people/factors/stepup.py).
    require_second_factor = models.BooleanField(
        "второй фактор для решений и расширения прав",
        default=False,
        help_text="решения по операциям и расширение прав ассистента требуют свежей проверки "
        "вторым фактором, даже если в настройках шлюза это выключено",
    )
    time_zone = models.CharField(
        "часовой пояс суточных потолков", max_length=64, default="Europe/Moscow"
    )
    # Per-tool switches inside the enabled toolsets: names listed here are off.
    disabled_tools = models.JSONField("выключенные инструменты", default=list, blank=True)
    # The key Invoicebox signs payment notifications with (X-Signature); write-only like the token.
    notification_key = EncryptedTextField("ключ подписи уведомлений", blank=True)
    # The shop's notification settings in the Invoicebox account choose how X-Signature is
    # made (HMAC-SHA1 by default); the contour must say the same to verify it.
    notification_signature_method = models.CharField(
        "метод подписи уведомлений",
        max_length=8,
        default=DEFAULT_METHOD,
        choices=[(method, method.upper()) for method in SIGNATURE_METHODS],
    )
    notification_signature_algorithm = models.CharField(
        "алгоритм подписи уведомлений",
        max_length=16,
        default=DEFAULT_ALGORITHM,
        choices=[(name, name) for name in SIGNATURE_ALGORITHMS],
        help_text="как в настройках уведомлений магазина в личном кабинете Инвойсбокс; "
        "по умолчанию sha1",
    )
    # Operators are told about writes waiting for them (tools/background/alerts.py); this optional relay
    # (Telegram, Slack) gets the same facts as JSON signed with the secret (HMAC-SHA256). The
    # secret is write-only and encrypted at rest like the token.
    alert_webhook_url = models.URLField("адрес вебхука для операторов", max_length=500, blank=True)
    alert_webhook_secret = EncryptedTextField("секрет подписи вебхука", blank=True)
    # After rotate_api_key the old key keeps working this long, so the assistant can switch.
    key_grace_hours = models.PositiveIntegerField(
        "старый ключ действует после замены, ч", default=24
    )
    created_at = models.DateTimeField("создан", auto_now_add=True)

    class Meta:
        verbose_name = "контур"
        verbose_name_plural = "контуры"
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(mode__in=OFFICIAL_MODES)
                | models.Q(base_url=OFFICIAL_API_ORIGIN),
                name="official_modes_use_official_origin",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        problem = base_url_problem(self.mode, self.base_url)
        if problem:
            raise ValidationError({"base_url": problem})
        problem = api_prefix_problem(self.api_prefix)
        if problem:
            raise ValidationError({"api_prefix": problem})
        # Secrets entered for one endpoint are never kept for another: unless a new one came
        # with the change, the stored one is cleared. The token would go to the new host; the
        # notification key of a former sandbox is the published one, anyone can sign with it.
        for index, name in ((3, "api_token"), (4, "notification_key")):
            if name in self.entered_secrets:
                continue  # typed for this very change (the same value again is an answer)
            if (
                self._loaded is not None
                and self.endpoint_changed
                and getattr(self, name) == self._loaded[index]
            ):
                setattr(self, name, "")
                if kwargs.get("update_fields") is not None:
                    kwargs["update_fields"] = {*kwargs["update_fields"], name}
        super().save(*args, **kwargs)
        self.entered_secrets = frozenset()
        self._remember_endpoint()

    # (mode, base_url, api_prefix, api_token, notification_key) as loaded from the database;
    # None for a new contour.
    _loaded: tuple[Any, ...] | None = None
    # Secrets a person entered for the change being saved (the admin form, set_contour_token):
    # entered again with a new address they are kept, even when the value is the same.
    entered_secrets: frozenset[str] = frozenset()

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any) -> Contour:
        instance = super().from_db(db, field_names, values)
        instance._remember_endpoint()
        return instance

    @property
    def endpoint_changed(self) -> bool:
        """True when mode, base URL or prefix differ from what was loaded from the database."""
        return self._loaded is not None and self._loaded[:3] != (
            self.mode,
            self.base_url,
            self.api_prefix,
        )

    def clean(self) -> None:
        super().clean()
        problem = base_url_problem(self.mode, self.base_url)
        if problem:
            raise ValidationError({"base_url": problem})
        problem = api_prefix_problem(self.api_prefix)
        if problem:
            raise ValidationError({"api_prefix": problem})
        if (
            self._loaded is not None
            and self.endpoint_changed
            and self.api_token == self._loaded[3]
            and "api_token" not in self.entered_secrets
        ):
            raise ValidationError(
                {
                    "api_token": "адрес API, префикс или режим изменились: введите "
                    "токен заново, прежний на новый адрес не "
                    "отправляется"
                }
            )

    def _remember_endpoint(self) -> None:
        # From __dict__: a deferred field (.only()) must not trigger a load here.
        loaded = tuple(
            self.__dict__.get(name)
            for name in ("mode", "base_url", "api_prefix", "api_token", "notification_key")
        )
        self._loaded = loaded if self.pk and None not in loaded else None

    def has_toolset(self, toolset: str) -> bool:
        return toolset in self.toolsets

    def tool_enabled(self, name: str) -> bool:
        return name not in (self.disabled_tools or [])

    @property
    def writes_enabled(self) -> bool:
        return self.has_toolset(Toolset.WRITE)

    def secrets(self) -> list[str]:
        """What the journal, logs and errors must never show of this contour."""
        return [
            secret
            for secret in (self.api_token, self.notification_key, self.alert_webhook_secret)
            if secret
        ]

    @property
    def token_unreadable(self) -> bool:
        """The stored token can't be decrypted with GATEWAY_SECRETS_KEY (another key)."""
        return is_unreadable(self.api_token)

    @property
    def masked_token(self) -> str:
        if self.token_unreadable:
            return UNREADABLE_TOKEN_TEXT
        return mask_secret(self.api_token)

    @property
    def confirmation_ttl(self) -> timedelta:
        return timedelta(seconds=self.confirmation_ttl_seconds)

    @property
    def approval_window(self) -> timedelta:
        return timedelta(hours=self.approval_window_hours)

    def allows_currency(self, currency: str) -> bool:
        return currency in (self.allowed_currencies or [])

    def approval_threshold(self, currency: str) -> int | None:
        value = (self.approval_thresholds or {}).get(currency)
        return int(value) if value is not None else None


class CeilingKind(models.TextChoices):
    PER_ORDER = "per_order", "максимум одной операции (сумма)"
    PER_DAY = "per_day", "сумма за сутки"
    PER_HOUR = "per_hour", "число записей за час"


class Ceiling(models.Model):
    """An owner's limit on what a contour's assistant may do; checked twice, the second time
    under the contour's row lock, in the transaction that records the operation."""

    contour = models.ForeignKey(
        Contour, models.CASCADE, verbose_name="контур", related_name="ceilings"
    )
    kind = models.CharField("вид", max_length=16, choices=CeilingKind.choices)
    currency = models.CharField(
        "валюта", max_length=3, blank=True, help_text="для сумм; у числа записей пусто"
    )
    limit = models.BigIntegerField("предел (копейки или штуки)")

    class Meta:
        verbose_name = "потолок"
        verbose_name_plural = "потолки"
        constraints = [
            models.UniqueConstraint(
                fields=["contour", "kind", "currency"], name="one_ceiling_per_kind_and_currency"
            ),
            models.CheckConstraint(condition=models.Q(limit__gte=0), name="ceiling_not_negative"),
        ]

    def __str__(self) -> str:
        if self.kind == CeilingKind.PER_HOUR:
            return f"{self.get_kind_display()}: {self.limit}"
        return f"{self.get_kind_display()}: {format_rub(self.limit, self.currency or 'RUB')}"
