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
from django.db import IntegrityError, transaction
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
    """Take one request from the account's budget and pass the circuit; or say why not.

    No transaction and no row lock spans the check: every decision is one conditional UPDATE,
    so workers sharing an account wait on each other only for that one statement.
    """
    refusal = _circuit(account)
    if refusal is not None:
        return refusal
    return _take(account, time.time())


def _take(account: str, now: float) -> Refusal | None:
    limit, period = rate()
    start = int(now // period) * period
    window = _window(account, start)
    previous = (UpstreamWindow.objects.filter(account=account, window_start=start - period)
                .values_list("count", flat=True).first())
    # Sliding-window estimate: the previous window's requests still "in view", weighted.
    carried = (previous or 0) * (1 - (now - start) / period)
    room = math.floor(limit - carried)
    taken = UpstreamWindow.objects.filter(pk=window.pk, count__lt=room).update(
        count=F("count") + 1)
    if not taken:
        return Refusal("rate", max(0.1, math.ceil((start + period - now) * 10) / 10))
    return None


def _window(account: str, start: int) -> UpstreamWindow:
    window = UpstreamWindow.objects.filter(account=account, window_start=start).first()
    if window is not None:
        return window
    try:
        with transaction.atomic():
            window = UpstreamWindow.objects.create(account=account, window_start=start)
    except IntegrityError:  # another worker opened the same window first
        return UpstreamWindow.objects.get(account=account, window_start=start)
    _, period = rate()
    UpstreamWindow.objects.filter(account=account, window_start__lt=start - period).delete()
    return window


def _circuit(account: str) -> Refusal | None:
    opened_until = (CircuitState.objects.filter(account=account)
                    .values_list("opened_until", flat=True).first())
    if opened_until is None:
        return None
    now = timezone.now()
    if opened_until > now:
        return Refusal("circuit", (opened_until - now).total_seconds())
    # Half-open: exactly one request wins this conditional update and becomes the probe;
    # the others keep failing fast until it answers.
    probe_until = now + timedelta(seconds=settings.INVOICEBOX_BREAKER_OPEN_SECONDS)
    won = CircuitState.objects.filter(account=account, opened_until=opened_until).update(
        opened_until=probe_until)
    if won:
        return None
    return Refusal("circuit", settings.INVOICEBOX_BREAKER_OPEN_SECONDS)


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

