"""Operator alerts about writes waiting for a decision."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from tools.models.confirmations import PendingConfirmation
from tools.models.contours import Contour


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

    confirmation = models.ForeignKey(
        PendingConfirmation, on_delete=models.CASCADE, related_name="alerts"
    )
    contour = models.ForeignKey(Contour, on_delete=models.CASCADE, related_name="alerts")
    kind = models.CharField("повод", max_length=16, choices=AlertKind.choices)
    transport = models.CharField("способ", max_length=16, choices=AlertTransport.choices)
    # The operator's user id for email, "" for the contour's webhook.
    recipient = models.CharField("получатель", max_length=64, blank=True)
    state = models.CharField(
        "состояние", max_length=16, choices=AlertState.choices, default=AlertState.PENDING
    )
    attempts = models.PositiveIntegerField("попыток", default=0)
    last_error = models.CharField("последняя ошибка", max_length=300, blank=True)
    next_attempt_at = models.DateTimeField("следующая попытка", default=timezone.now)
    created_at = models.DateTimeField("создано", auto_now_add=True)
    sent_at = models.DateTimeField("отправлено", null=True, blank=True)

    class Meta:
        verbose_name = "оповещение оператора"
        verbose_name_plural = "оповещения операторов"
        constraints = [
            models.UniqueConstraint(
                fields=["confirmation", "kind", "transport", "recipient"], name="one_alert_each"
            )
        ]
        indexes = [models.Index(fields=["state", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"{self.kind}/{self.transport} {self.confirmation_id} ({self.state})"
