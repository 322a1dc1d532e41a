"""Contours, their API keys, pending confirmations and idempotent operations."""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models.functions import Now
from django.utils import timezone

from adapters.invoicebox.notify import (
    DEFAULT_ALGORITHM,
    DEFAULT_METHOD,
    SIGNATURE_ALGORITHMS,
    SIGNATURE_METHODS,
)
from tools.current_key import AUTHENTICATED_KEY
from tools.endpoints import (
    OFFICIAL_API_ORIGIN,
    OFFICIAL_MODES,
    ApiPrefix,
    InvoiceboxMode,
    api_prefix_problem,
    base_url_problem,
    is_loopback,
    is_own_sandbox,
)
from tools.hashing import mask_secret, sha256_hex
from tools.params import format_rub
from tools.secret_box import EncryptedTextField

# Kept importable from here: every caller reads them as model facts.
__all__ = ["AUTHENTICATED_KEY", "OFFICIAL_API_ORIGIN", "OFFICIAL_MODES", "ApiPrefix",
           "InvoiceboxMode", "api_prefix_problem", "base_url_problem", "is_loopback",
           "is_own_sandbox", "mask_secret", "sha256_hex"]


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
        "режим Инвойсбокс", max_length=16, choices=InvoiceboxMode.choices,
        default=InvoiceboxMode.SANDBOX,
    )
    base_url = models.URLField("адрес API", max_length=500)
    api_prefix = models.CharField(
        "префикс API", max_length=2, choices=ApiPrefix.choices, default=ApiPrefix.V3,
        help_text="/v3/ — для магазинов Инвойсбокс; /l3/ — для магазинов Инвойсбокс.Бизнес "
                  "(зарегистрированных на business.invoicebox.ru, токен вида «12345-API:…»). "
                  "Берите тот, что указан в личном кабинете рядом с токеном; смена префикса "
                  "сбрасывает токен.",
    )
    # Never rendered back in full: see masked_token and the admin form (write-only). Encrypted
    # at rest; cleared whenever mode or base URL change (save), so it never reaches a new host.
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
        "срок на решение оператора, ч", default=_default_approval_window,
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
    # Stricter than GATEWAY_REQUIRE_SECOND_FACTOR, never looser (tools/factors/stepup.py).
    require_second_factor = models.BooleanField(
        "второй фактор для решений и расширения прав", default=False,
        help_text="решения по операциям и расширение прав ассистента требуют свежей проверки "
                  "вторым фактором, даже если в настройках шлюза это выключено",
    )
    time_zone = models.CharField("часовой пояс суточных потолков", max_length=64,
                                 default="Europe/Moscow")
    # Per-tool switches inside the enabled toolsets: names listed here are off.
    disabled_tools = models.JSONField("выключенные инструменты", default=list, blank=True)
    # The key Invoicebox signs payment notifications with (X-Signature); write-only like the token.
    notification_key = EncryptedTextField("ключ подписи уведомлений", blank=True)
    # The shop's notification settings in the Invoicebox account choose how X-Signature is
    # made (HMAC-SHA1 by default); the contour must say the same to verify it.
    notification_signature_method = models.CharField(
        "метод подписи уведомлений", max_length=8, default=DEFAULT_METHOD,
        choices=[(method, method.upper()) for method in SIGNATURE_METHODS],
    )
    notification_signature_algorithm = models.CharField(
        "алгоритм подписи уведомлений", max_length=16, default=DEFAULT_ALGORITHM,
        choices=[(name, name) for name in SIGNATURE_ALGORITHMS],
        help_text="как в настройках уведомлений магазина в личном кабинете Инвойсбокс; "
                  "по умолчанию sha1",
    )
    # Operators are told about writes waiting for them (tools/alerts.py); this optional relay
    # (Telegram, Slack) gets the same facts as JSON signed with the secret (HMAC-SHA256). The
    # secret is write-only and encrypted at rest like the token.
    notify_webhook_url = models.URLField("адрес вебхука для операторов", max_length=500,
                                         blank=True)
    notify_webhook_secret = EncryptedTextField("секрет подписи вебхука", blank=True)
    # After rotate_api_key the old key keeps working this long, so the assistant can switch.
    key_grace_hours = models.PositiveIntegerField("старый ключ действует после замены, ч",
                                                  default=24)
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
            if self.endpoint_changed and getattr(self, name) == self._loaded[index]:
                setattr(self, name, "")
                if kwargs.get("update_fields") is not None:
                    kwargs["update_fields"] = {*kwargs["update_fields"], name}
        super().save(*args, **kwargs)
        self._remember_endpoint()

    # (mode, base_url, api_prefix, api_token, notification_key) as loaded from the database;
    # None for a new contour.
    _loaded: tuple[Any, ...] | None = None

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any) -> Contour:
        instance = super().from_db(db, field_names, values)
        instance._remember_endpoint()
        return instance

    @property
    def endpoint_changed(self) -> bool:
        """True when mode, base URL or prefix differ from what was loaded from the database."""
        return self._loaded is not None and self._loaded[:3] != (
            self.mode, self.base_url, self.api_prefix)

    def clean(self) -> None:
        super().clean()
        problem = base_url_problem(self.mode, self.base_url)
        if problem:
            raise ValidationError({"base_url": problem})
        problem = api_prefix_problem(self.api_prefix)
        if problem:
            raise ValidationError({"api_prefix": problem})
        if self.endpoint_changed and self.api_token == self._loaded[3]:
            raise ValidationError({"api_token": "адрес API, префикс или режим изменились: введите "
                                                "токен заново, прежний на новый адрес не "
                                                "отправляется"})


    def _remember_endpoint(self) -> None:
        # From __dict__: a deferred field (.only()) must not trigger a load here.
        loaded = tuple(self.__dict__.get(name)
                       for name in ("mode", "base_url", "api_prefix", "api_token",
                                    "notification_key"))
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
        return [secret for secret in (self.api_token, self.notification_key,
                                      self.notify_webhook_secret) if secret]

    @property
    def masked_token(self) -> str:
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

    contour = models.ForeignKey(Contour, models.CASCADE, verbose_name="контур", related_name="ceilings")
    kind = models.CharField("вид", max_length=16, choices=CeilingKind.choices)
    currency = models.CharField(
        "валюта", max_length=3, blank=True, help_text="для сумм; у числа записей пусто"
    )
    limit = models.BigIntegerField("предел (копейки или штуки)")

    class Meta:
        verbose_name = "потолок"
        verbose_name_plural = "потолки"
        constraints = [
            models.UniqueConstraint(fields=["contour", "kind", "currency"],
                                    name="one_ceiling_per_kind_and_currency"),
            models.CheckConstraint(condition=models.Q(limit__gte=0), name="ceiling_not_negative"),
        ]

    def __str__(self) -> str:
        if self.kind == CeilingKind.PER_HOUR:
            return f"{self.get_kind_display()}: {self.limit}"
        return f"{self.get_kind_display()}: {format_rub(self.limit, self.currency or 'RUB')}"


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def active(self) -> ApiKeyQuerySet:
        unexpired = models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=Now())
        return self.filter(unexpired, revoked_at__isnull=True)


class ApiKey(models.Model):
    """A contour's Bearer key; only its hash and a visible prefix are stored."""

    PREFIX_LENGTH = 12

    contour = models.ForeignKey(Contour, models.CASCADE, verbose_name="контур", related_name="api_keys")
    label = models.CharField("метка", max_length=200, blank=True)
    # The person who holds the key, when known: an editable label, so the four-eyes rule
    # (tools.approvals.prepared_by) never rests on it alone.
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                             blank=True, related_name="api_keys", verbose_name="владелец ключа")
    # Who issued the key and so saw its raw secret: recorded once at issue, never edited (no
    # form shows it as a field; PROTECT: the person outlives the record). None: no person
    # (a command, scaffolding).
    issued_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                                  null=True, blank=True, editable=False, related_name="+",
                                  verbose_name="выдал")
    prefix = models.CharField("префикс", max_length=PREFIX_LENGTH, db_index=True)
    key_hash = models.CharField("хеш ключа", max_length=64, unique=True)
    created_at = models.DateTimeField("создан", auto_now_add=True)
    revoked_at = models.DateTimeField("отозван", null=True, blank=True)
    # A key may be narrower than its contour (never wider): empty means "as the contour".
    toolsets = models.JSONField("наборы ключа", default=list, blank=True,
                                help_text="пусто — все наборы контура")
    tools = models.JSONField("инструменты ключа", default=list, blank=True,
                             help_text="пусто — все инструменты его наборов")
    expires_at = models.DateTimeField("действует до", null=True, blank=True)
    last_used_at = models.DateTimeField("последний вызов", null=True, blank=True)
    last_used_channel = models.CharField("канал последнего вызова", max_length=16, blank=True)
    last_used_address = models.GenericIPAddressField("адрес последнего вызова", null=True,
                                                     blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        verbose_name = "ключ API"
        verbose_name_plural = "ключи API"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.contour.slug})"

    @classmethod
    def issue(cls, contour: Contour, label: str = "", user: Any = None, *,
              toolsets: list[str] | None = None, tools: list[str] | None = None,
              expires_at: timezone.datetime | None = None, issued_by: Any = None
              ) -> tuple[ApiKey, str]:
        """Create a key and return it with the full secret, which is never stored."""
        raw = "ibg_" + secrets.token_urlsafe(32)
        key = cls.objects.create(
            contour=contour, label=label, prefix=raw[: cls.PREFIX_LENGTH], key_hash=sha256_hex(raw),
            user=user, toolsets=list(toolsets or []), tools=list(tools or []),
            expires_at=expires_at, issued_by=issued_by,
        )
        return key, raw

    def allows(self, toolset: str, tool: str) -> bool:
        """Whether this key's own scope covers the tool (the contour's is checked apart)."""
        return ((not self.toolsets or toolset in self.toolsets)
                and (not self.tools or tool in self.tools))

    @property
    def narrowed(self) -> bool:
        return bool(self.toolsets or self.tools)

    def is_active(self, now: datetime | None = None) -> bool:
        """The rule of ApiKeyQuerySet.active(), for one key already read; `now` is the
        database's (authenticate reads it with the key)."""
        return self.revoked_at is None and (self.expires_at is None
                                            or self.expires_at > (now or timezone.now()))

    @classmethod
    def authenticate(cls, raw: str) -> ApiKey | None:
        if not raw:
            return None
        # key_hash is unique: one row or none. Whether it is active is decided on the row, by
        # the rule of active(): the same answer, and a query that costs the ORM 40 % less to
        # build (this runs on every call of every protocol).
        key = next(iter(cls.objects.select_related("contour").filter(key_hash=sha256_hex(raw))
                        .annotate(database_now=Now())), None)
        if key is not None and not key.is_active(key.database_now):
            key = None
        # The core's scope check asks for this key again in the same request: keep it at hand.
        AUTHENTICATED_KEY.set(key)
        return key

    def revoke(self) -> None:
        self.revoked_at = timezone.now()
        self.save(update_fields=["revoked_at"])


class ConfirmationStatus(models.TextChoices):
    PENDING = "pending", "ожидает"
    APPROVED = "approved", "одобрено"
    REJECTED = "rejected", "отклонено"
    EXECUTED = "executed", "исполнено"
    EXPIRED = "expired", "истекло"


class PendingConfirmation(models.Model):
    """The first phase of a write: what will be done, bound to one contour, tool and arguments."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    contour = models.ForeignKey(Contour, models.CASCADE, verbose_name="контур",
                                related_name="confirmations")
    tool = models.CharField("инструмент", max_length=64)
    arguments = models.JSONField("канонические аргументы")
    args_hash = models.CharField("хеш аргументов", max_length=64)
    summary = models.TextField("сводка")
    summary_data = models.JSONField("сводка (данные)", default=dict)
    token_hash = models.CharField("хеш токена", max_length=64, unique=True)
    status = models.CharField(
        "статус", max_length=16, choices=ConfirmationStatus.choices, default=ConfirmationStatus.PENDING
    )
    created_by = models.CharField("подготовил", max_length=200, blank=True)
    # The people behind each key that prepared this write, snapshotted when it did: the key's
    # issuer and its holder at that moment (its issuer when it had none). None of them may
    # approve it, whatever the key's holder becomes later (tools.approvals.prepared_by).
    barred_approvers = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="+",
        verbose_name="не могут одобрить (выдали ключ или держали его)")
    # Set from the database's clock (tools/clock.py) by whoever creates the row.
    created_at = models.DateTimeField("создано", default=timezone.now)
    expires_at = models.DateTimeField("истекает")
    decided_at = models.DateTimeField("решено", null=True, blank=True)
    decided_by = models.CharField("решил", max_length=200, blank=True)
    decision_reason = models.TextField("причина решения", blank=True)
    # The second factor behind the decision (tools/factors): kind, device label and when it
    # was checked; empty when the contour required none and none was checked.
    factor_kind = models.CharField("второй фактор", max_length=16, blank=True)
    factor_device = models.CharField("устройство второго фактора", max_length=200, blank=True)
    factor_checked_at = models.DateTimeField("второй фактор проверен", null=True, blank=True)
    executed_at = models.DateTimeField("исполнено", null=True, blank=True)
    result = models.JSONField("результат", null=True, blank=True)
    requires_approval = models.BooleanField("нужно одобрение оператора", default=False)
    approval_reason = models.CharField("почему нужен оператор", max_length=200, blank=True)
    amount = models.BigIntegerField("сумма, копейки", null=True, blank=True)
    currency = models.CharField("валюта", max_length=3, blank=True)

    class Meta:
        verbose_name = "подтверждение"
        verbose_name_plural = "подтверждения"
        indexes = [models.Index(fields=["contour", "tool", "args_hash", "status"])]

    def __str__(self) -> str:
        return f"{self.tool} {self.id} ({self.status})"

    def is_expired(self, now: timezone.datetime | None = None) -> bool:
        return (now or timezone.now()) >= self.expires_at


class OperationState(models.TextChoices):
    IN_FLIGHT = "in_flight", "выполняется"
    DONE = "done", "выполнена"
    FAILED = "failed", "не выполнена"
    UNKNOWN = "unknown", "результат неизвестен"


class Operation(models.Model):
    """Idempotency record: one upstream write per key, guaranteed by the unique constraint."""

    key = models.CharField("ключ операции", max_length=64, unique=True)
    contour = models.ForeignKey(Contour, models.CASCADE, verbose_name="контур", related_name="operations")
    tool = models.CharField("инструмент", max_length=64)
    confirmation = models.OneToOneField(
        PendingConfirmation, on_delete=models.PROTECT, related_name="operation"
    )
    merchant_order_id = models.CharField("номер счёта магазина", max_length=64, unique=True)
    # What the operation weighs against the ceilings (copied from its confirmation).
    amount = models.BigIntegerField("сумма, копейки", null=True, blank=True)
    currency = models.CharField("валюта", max_length=3, blank=True)
    state = models.CharField(
        "состояние", max_length=16, choices=OperationState.choices, default=OperationState.IN_FLIGHT
    )
    attempts = models.PositiveIntegerField("попыток", default=0)
    result = models.JSONField("результат", null=True, blank=True)
    error_code = models.CharField("код ошибки", max_length=64, blank=True)
    upstream_request_id = models.CharField("запрос API", max_length=100, blank=True)
    created_at = models.DateTimeField("создана", default=timezone.now, db_index=True)
    started_at = models.DateTimeField("начата", default=timezone.now)
    finished_at = models.DateTimeField("завершена", null=True, blank=True)

    class Meta:
        verbose_name = "операция"
        verbose_name_plural = "операции"
        indexes = [models.Index(fields=["contour", "created_at"])]

    def __str__(self) -> str:
        return f"{self.tool} {self.key} ({self.state})"


class TrackedOrder(models.Model):
    """An order this gateway issued: what notifications and status refreshes compare against."""

    contour = models.ForeignKey(Contour, models.CASCADE, verbose_name="контур", related_name="orders")
    order_id = models.CharField(max_length=64)
    merchant_order_id = models.CharField(max_length=256)
    amount = models.BigIntegerField("сумма, копейки")
    currency = models.CharField(max_length=3)
    status = models.CharField(max_length=32)
    paid_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "счёт"
        verbose_name_plural = "счета"
        constraints = [
            models.UniqueConstraint(fields=["contour", "order_id"], name="one_tracked_order"),
        ]
        indexes = [models.Index(fields=["contour", "status"]),
                   models.Index(fields=["merchant_order_id"])]

    def __str__(self) -> str:
        return f"{self.merchant_order_id} ({self.status})"


class ProcessedNotification(models.Model):
    """A payment notification handled once per (contour, id, status): Invoicebox retries one,
    and its `id` is the order's, so "hold" then "completed" of one order are two."""

    contour = models.ForeignKey(Contour, models.CASCADE, verbose_name="контур",
                                related_name="notifications")
    notification_id = models.CharField(max_length=64)
    order_id = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=32)
    answer = models.JSONField(default=dict)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "уведомление"
        verbose_name_plural = "уведомления"
        constraints = [
            models.UniqueConstraint(fields=["contour", "notification_id", "status"],
                                    name="one_notification_per_id_and_status"),
        ]

    def __str__(self) -> str:
        return f"{self.notification_id} ({self.status})"


class Role(models.TextChoices):
    OWNER = "owner", "владелец"
    OPERATOR = "operator", "оператор"
    AUDITOR = "auditor", "аудитор"


class ContourRole(models.Model):
    """One person's role on one contour (tools/roles.py grants, revokes and journals it)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="contour_roles", verbose_name="пользователь")
    contour = models.ForeignKey(Contour, on_delete=models.CASCADE, related_name="roles",
                                verbose_name="контур")
    role = models.CharField("роль", max_length=16, choices=Role.choices)
    granted_by = models.CharField("выдал", max_length=200, blank=True)
    granted_at = models.DateTimeField("выдана", auto_now_add=True)

    class Meta:
        verbose_name = "роль в контуре"
        verbose_name_plural = "роли в контурах"
        constraints = [models.UniqueConstraint(fields=["user", "contour", "role"],
                                               name="one_role_per_user_contour")]
        indexes = [models.Index(fields=["contour", "role"])]

    def __str__(self) -> str:
        return f"{self.user} — {self.get_role_display()} ({self.contour.slug})"


class AlertKind(models.TextChoices):
    WAITING = "waiting", "ждёт оператора"
    REMINDER = "reminder", "напоминание перед сроком"


class AlertTransport(models.TextChoices):
    EMAIL = "email", "письмо"
    WEBHOOK = "webhook", "вебхук"


class AlertState(models.TextChoices):
    PENDING = "pending", "ждёт отправки"
    SENT = "sent", "доставлено"
    FAILED = "failed", "не доставлено"
    SKIPPED = "skipped", "не понадобилось: решение принято или срок истёк"


class OperatorAlert(models.Model):
    """One message to one operator (or the contour's webhook) about a write waiting for them.

    Unique per (confirmation, kind, transport, recipient): queuing twice sends once.
    """

    confirmation = models.ForeignKey(PendingConfirmation, on_delete=models.CASCADE,
                                     related_name="alerts")
    contour = models.ForeignKey(Contour, on_delete=models.CASCADE, related_name="alerts")
    kind = models.CharField("повод", max_length=16, choices=AlertKind.choices)
    transport = models.CharField("способ", max_length=16, choices=AlertTransport.choices)
    # The operator's user id for email, "" for the contour's webhook.
    recipient = models.CharField("получатель", max_length=64, blank=True)
    state = models.CharField("состояние", max_length=16, choices=AlertState.choices,
                             default=AlertState.PENDING)
    attempts = models.PositiveIntegerField("попыток", default=0)
    last_error = models.CharField("последняя ошибка", max_length=300, blank=True)
    next_attempt_at = models.DateTimeField("следующая попытка", default=timezone.now)
    created_at = models.DateTimeField("создано", auto_now_add=True)
    sent_at = models.DateTimeField("отправлено", null=True, blank=True)

    class Meta:
        verbose_name = "оповещение оператора"
        verbose_name_plural = "оповещения операторов"
        constraints = [models.UniqueConstraint(
            fields=["confirmation", "kind", "transport", "recipient"], name="one_alert_each")]
        indexes = [models.Index(fields=["state", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"{self.kind}/{self.transport} {self.confirmation_id} ({self.state})"


class OutboxTask(models.Model):
    """Work that must survive the broker (tools/outbox.py): recorded in the transaction of its
    cause, queued after commit, re-queued by the sweep until a worker reports it done."""

    task = models.CharField("задача", max_length=100)
    args = models.JSONField("аргументы", default=list)
    created_at = models.DateTimeField("создана", default=timezone.now)
    # When the sweep may send it again if nobody reported it done (the database's clock).
    next_attempt_at = models.DateTimeField("следующая отправка", default=timezone.now)
    attempts = models.PositiveIntegerField("отправок", default=0)
    done_at = models.DateTimeField("выполнена", null=True, blank=True)

    class Meta:
        verbose_name = "задача из outbox"
        verbose_name_plural = "задачи из outbox"
        indexes = [models.Index(fields=["done_at", "next_attempt_at"],
                                name="outbox_due")]

    def __str__(self) -> str:
        return f"{self.task}{self.args} ({'done' if self.done_at else 'pending'})"
