"""What the gateway knows of orders it issued: tracked orders and processed payment notifications."""

from __future__ import annotations

from django.db import models

from tools.models.contours import Contour


class TrackedOrder(models.Model):
    """An order this gateway issued: what notifications and status refreshes compare against."""

    contour = models.ForeignKey(
        Contour, models.CASCADE, verbose_name="контур", related_name="orders"
    )
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
        indexes = [
            models.Index(fields=["contour", "status"]),
            models.Index(fields=["merchant_order_id"]),
        ]

    def __str__(self) -> str:
        return f"{self.merchant_order_id} ({self.status})"


class ProcessedNotification(models.Model):
    """A payment notification handled once per (contour, id, status): Invoicebox retries one,
    and its `id` is the order's, so "hold" then "completed" of one order are two."""

    contour = models.ForeignKey(
        Contour, models.CASCADE, verbose_name="контур", related_name="notifications"
    )
    notification_id = models.CharField(max_length=64)
    order_id = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=32)
    answer = models.JSONField(default=dict)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "уведомление"
        verbose_name_plural = "уведомления"
        constraints = [
            models.UniqueConstraint(
                fields=["contour", "notification_id", "status"],
                name="one_notification_per_id_and_status",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.notification_id} ({self.status})"
