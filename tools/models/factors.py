"""A second-factor device prepared by one person for another (manage.py add_totp)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class PreparedDevice(models.Model):
    """Marks an unconfirmed TOTP device as prepared out of band: its secret went to the person
    by another hand, so the web never shows it; its first code confirms it (the bootstrap
    proof) until GATEWAY_PREPARED_DEVICE_SECONDS after `created_at`. Removed on confirmation."""

    device = models.OneToOneField(
        "otp_totp.TOTPDevice",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="prepared",
        verbose_name="устройство",
    )
    prepared_by = models.CharField("подготовил", max_length=200)
    created_at = models.DateTimeField("подготовлено", default=timezone.now)

    class Meta:
        verbose_name = "подготовленное устройство"
        verbose_name_plural = "подготовленные устройства"

    def __str__(self) -> str:
        return f"{self.device_id} ({self.prepared_by})"
