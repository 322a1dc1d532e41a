"""Work recorded in its cause's transaction, queued after commit (tools/background/outbox.py)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class OutboxTask(models.Model):
    """Work that must survive the broker (tools/background/outbox.py): recorded in the transaction of its
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
        indexes = [models.Index(fields=["done_at", "next_attempt_at"], name="outbox_due")]

    def __str__(self) -> str:
        return f"{self.task}{self.args} ({'done' if self.done_at else 'pending'})"
