"""The two phases of a write: the pending confirmation, and the operation that executes it once."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone

from tools.models.contours import Contour


class ConfirmationStatus(models.TextChoices):
    PENDING = "pending", "ожидает"
    APPROVED = "approved", "одобрено"
    REJECTED = "rejected", "отклонено"
    EXECUTED = "executed", "исполнено"
    EXPIRED = "expired", "истекло"


class PendingConfirmation(models.Model):
    """The first phase of a write: what will be done, bound to one contour, tool and arguments."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    contour = models.ForeignKey(
        Contour, models.CASCADE, verbose_name="контур", related_name="confirmations"
    )
    tool = models.CharField("инструмент", max_length=64)
    arguments = models.JSONField("канонические аргументы")
    args_hash = models.CharField("хеш аргументов", max_length=64)
    summary = models.TextField("сводка")
    summary_data = models.JSONField("сводка (данные)", default=dict)
    token_hash = models.CharField("хеш токена", max_length=64, unique=True)
    status = models.CharField(
        "статус",
        max_length=16,
        choices=ConfirmationStatus.choices,
        default=ConfirmationStatus.PENDING,
    )
    created_by = models.CharField("подготовил", max_length=200, blank=True)
    # The people behind each key that prepared this write, snapshotted when it did: the key's
    # issuer and its holder at that moment (its issuer when it had none). None of them may
    # approve it, whatever the key's holder becomes later (tools.pipeline.approvals.prepared_by).
    barred_approvers = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="+",
        verbose_name="не могут одобрить (выдали ключ или держали его)",
    )
    # A key issued by a command (ApiKey.issued_by_command) prepared it: no superuser approves.
    prepared_by_command_key = models.BooleanField(
        "подготовил ключ, выданный командой", default=False
    )
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
        indexes = [
            models.Index(fields=["contour", "tool", "args_hash", "status"]),
            # The admin's list, newest first, reads its page off this index instead of sorting
            # every confirmation (issue 43: 52 ms at 100 000 rows, growing with them).
            models.Index(fields=["created_at"], name="tools_confirmation_created"),
        ]

    def __str__(self) -> str:
        return f"{self.tool} {self.id} ({self.status})"

    def is_expired(self, now: datetime | None = None) -> bool:
        return (now or timezone.now()) >= self.expires_at


class OperationState(models.TextChoices):
    IN_FLIGHT = "in_flight", "выполняется"
    DONE = "done", "выполнена"
    FAILED = "failed", "не выполнена"
    UNKNOWN = "unknown", "результат неизвестен"


# Operations that may have happened upstream (tools.pipeline.confirmations.UNRESOLVED_STATES): a few at
# any time among all a contour ever made, so they have an index of their own (partial).
UNRESOLVED_OPERATION_STATES = (OperationState.IN_FLIGHT, OperationState.UNKNOWN)


class Operation(models.Model):
    """Idempotency record: one upstream write per key, guaranteed by the unique constraint."""

    key = models.CharField("ключ операции", max_length=64, unique=True)
    contour = models.ForeignKey(
        Contour, models.CASCADE, verbose_name="контур", related_name="operations"
    )
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
        indexes = [
            models.Index(fields=["contour", "created_at"]),
            # prepare's look for an unresolved execution of the same write
            # (tools.pipeline.confirmations.unresolved_operation) reads only these rows, however many
            # operations the contour has finished (issue 43: 10 065 of 10 071 rows filtered).
            models.Index(
                fields=["contour", "tool", "created_at"],
                condition=models.Q(state__in=UNRESOLVED_OPERATION_STATES),
                name="tools_operation_unresolved",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool} {self.key} ({self.state})"
