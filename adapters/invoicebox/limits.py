"""Upstream protection shared through the database: a rate limiter and a circuit breaker.

Invoicebox allows 100 requests per 30 s per account; several workers on several hosts share
one budget, so the counters live in the database, never in process memory.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from adapters.invoicebox.models import CircuitState, UpstreamWindow


@dataclass(frozen=True)
class Refusal:
    """Why a request was not sent, and when trying again makes sense."""

    reason: str  # "rate" | "circuit"
    retry_after: float


def account_key(token: str) -> str:
    # The token itself never reaches a table or a log: only a digest names the account.
    return hashlib.sha256(token.encode()).hexdigest()[:32]


def rate() -> tuple[int, int]:
    limit, _, period = settings.INVOICEBOX_RATE_LIMIT.partition("/")
    return int(limit), int(period)


def admit(account: str) -> Refusal | None:
    """Take one request from the account's budget and pass the circuit; or say why not."""
    now = time.time()
    with transaction.atomic():
        refusal = _circuit(account)
        if refusal is not None:
            return refusal
        return _take(account, now)


def _take(account: str, now: float) -> Refusal | None:
    limit, period = rate()
    start = int(now // period) * period
    window, _ = UpstreamWindow.objects.select_for_update().get_or_create(
        account=account, window_start=start)
    previous = UpstreamWindow.objects.filter(account=account, window_start=start - period).first()
    # Sliding-window estimate: the previous window's requests still "in view", weighted.
    overlap = 1 - (now - start) / period
    in_view = window.count + (previous.count * overlap if previous else 0)
    if in_view + 1 > limit:
        return Refusal("rate", max(0.1, math.ceil((start + period - now) * 10) / 10))
    UpstreamWindow.objects.filter(pk=window.pk).update(count=F("count") + 1)
    UpstreamWindow.objects.filter(account=account, window_start__lt=start - period).delete()
    return None


def _circuit(account: str) -> Refusal | None:
    state, _ = CircuitState.objects.select_for_update().get_or_create(account=account)
    if state.opened_until is None:
        return None
    now = timezone.now()
    if state.opened_until > now:
        return Refusal("circuit", (state.opened_until - now).total_seconds())
    # Half-open: this request is the one probe; the others keep failing fast until it answers.
    state.opened_until = now + timedelta(seconds=settings.INVOICEBOX_BREAKER_OPEN_SECONDS)
    state.save(update_fields=["opened_until"])
    return None


def record(account: str, *, server_fault: bool) -> None:
    """A 5xx, timeout or network error counts; any other answer closes the circuit."""
    if not server_fault:
        CircuitState.objects.filter(account=account).filter(
            Q(failures__gt=0) | Q(opened_until__isnull=False)
        ).update(failures=0, opened_until=None)
        return
    with transaction.atomic():
        state, _ = CircuitState.objects.select_for_update().get_or_create(account=account)
        state.failures += 1
        if state.failures >= settings.INVOICEBOX_BREAKER_FAILURES:
            state.opened_until = timezone.now() + timedelta(
                seconds=settings.INVOICEBOX_BREAKER_OPEN_SECONDS)
        state.save(update_fields=["failures", "opened_until"])


def circuit_open(account: str) -> bool:
    state = CircuitState.objects.filter(account=account).first()
    return bool(state and state.opened_until and state.opened_until > timezone.now())
