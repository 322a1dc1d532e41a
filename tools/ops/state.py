"""Selectors of operational state read from the database: pending work, ceilings, circuits."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Min, QuerySet, Sum

from invoicebox.limits import account_key
from invoicebox.models import CircuitState
from tools.models import (
    Ceiling,
    ConfirmationStatus,
    Contour,
    Operation,
    OperationState,
    PendingConfirmation,
)
from tools.pipeline import ceilings as ceilings_module

CIRCUIT_STATES = ("closed", "open", "half_open")


@dataclass(frozen=True)
class PendingStat:
    """Open confirmations of one contour, split by who must act next."""

    contour: str
    waiting_for: str  # "operator" (needs approval) | "assistant" (needs the second call)
    count: int
    oldest: datetime | None


@dataclass(frozen=True)
class CeilingUsage:
    """One ceiling and what counts against it now (used is None for the per-operation cap)."""

    contour: str
    kind: str
    currency: str
    limit: int
    used: int | None

    @property
    def ratio(self) -> float | None:
        if self.used is None:
            return None
        # A zero ceiling allows nothing: it is always exhausted.
        return self.used / self.limit if self.limit else 1.0


def open_confirmations(now: datetime) -> QuerySet[PendingConfirmation]:
    return PendingConfirmation.objects.filter(status=ConfirmationStatus.PENDING, expires_at__gt=now)


def pending_stats(now: datetime) -> list[PendingStat]:
    """Every contour twice (operator, assistant), with zero counts too: absent is not zero."""
    rows = {
        (row["contour__slug"], row["requires_approval"]): row
        for row in open_confirmations(now)
        .values("contour__slug", "requires_approval")
        .annotate(count=Count("id"), oldest=Min("created_at"))
    }
    stats: list[PendingStat] = []
    for slug in Contour.objects.order_by("slug").values_list("slug", flat=True):
        for needs_operator, waiting_for in ((True, "operator"), (False, "assistant")):
            row = rows.get((slug, needs_operator))
            stats.append(
                PendingStat(
                    slug, waiting_for, row["count"] if row else 0, row["oldest"] if row else None
                )
            )
    return stats


def oldest_pending(
    now: datetime, limit: int = 10, contours: QuerySet[Contour] | None = None
) -> list[PendingConfirmation]:
    qs = open_confirmations(now)
    if contours is not None:
        qs = qs.filter(contour__in=contours)
    return list(qs.select_related("contour").order_by("created_at")[:limit])


def ceiling_usage(now: datetime, contour: Contour | None = None) -> list[CeilingUsage]:
    """What tools.pipeline.ceilings.check would count right now, ceiling by ceiling."""
    ceilings = Ceiling.objects.select_related("contour").order_by(
        "contour__slug", "kind", "currency"
    )
    if contour is not None:
        ceilings = ceilings.filter(contour=contour)
    usage: list[CeilingUsage] = []
    for ceiling in ceilings:
        spent = ceilings_module.used(ceiling, now)
        usage.append(
            CeilingUsage(ceiling.contour.slug, ceiling.kind, ceiling.currency, ceiling.limit, spent)
        )
    return usage


def invoiced(contour: Contour, since: datetime) -> dict[str, int]:
    """Kopecks of orders issued since `since`, per currency (done create_order operations)."""
    rows = (
        Operation.objects.filter(
            contour=contour, tool="create_order", state=OperationState.DONE, created_at__gte=since
        )
        .values("currency")
        .annotate(total=Sum("amount"))
        .order_by("currency")
    )
    return {row["currency"]: row["total"] or 0 for row in rows}


def circuits(now: datetime, contours: list[Contour] | None = None) -> list[tuple[str, str]]:
    """(contour slug, breaker state) for every contour (or those given, already read); the
    account is a digest of its token."""
    if contours is None:
        contours = list(Contour.objects.order_by("slug").only("slug", "api_token"))
    accounts = {contour.slug: account_key(contour.api_token) for contour in contours}
    states = {
        state.account: state
        for state in CircuitState.objects.filter(account__in=set(accounts.values()))
    }
    return [
        (slug, states[account].state_at(now) if account in states else "closed")
        for slug, account in accounts.items()
    ]


def circuit_counts(now: datetime, contours: list[Contour] | None = None) -> dict[str, int]:
    counts = Counter(state for _, state in circuits(now, contours))
    return {state: counts.get(state, 0) for state in CIRCUIT_STATES}
