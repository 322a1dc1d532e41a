"""The client's shared state in the database: rate windows and circuit breakers."""

from __future__ import annotations

import datetime as dt

from django.db import models


class UpstreamWindow(models.Model):
    """Requests sent to one Invoicebox account in one rate window, shared by every process."""

    account = models.CharField(max_length=32)
    window_start = models.BigIntegerField()  # unix seconds, a multiple of the window length
    count = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = "upstream rate window"
        constraints = [
            models.UniqueConstraint(
                fields=["account", "window_start"], name="invoicebox_one_window_per_account"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.account} @ {self.window_start}: {self.count}"


class CircuitState(models.Model):
    """The circuit breaker of one Invoicebox account: consecutive server faults, open until."""

    account = models.CharField(max_length=32, unique=True)
    failures = models.PositiveIntegerField(default=0)
    opened_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "upstream circuit"

    def __str__(self) -> str:
        return f"{self.account}: {self.failures} faults, open until {self.opened_until}"

    def state_at(self, now: dt.datetime) -> str:
        """closed, open (failing fast), or half_open (the next request is the probe)."""
        if self.opened_until is None:
            return "closed"
        return "open" if self.opened_until > now else "half_open"
