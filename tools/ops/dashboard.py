"""The owners' dashboard: per contour, calls and refusals, ceilings used, oldest pending work."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDay, TruncHour
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import render
from django.utils import timezone
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET

from audit.models import JournalEntry, Phase, Status
from tools.background import alerts
from tools.models import CeilingKind, Contour, PendingConfirmation, Role
from tools.ops import charts, state
from tools.params import format_rub
from tools.people import roles

# Entries an assistant's call produced (approvals, notifications, configuration are not calls).
CALL_PHASES = (Phase.CALL, Phase.READ, Phase.PREPARE, Phase.EXECUTE)
REFUSED = (Status.REJECTED, Status.ERROR)
HOURS, DAYS = 24, 30
CIRCUIT_LABELS = {
    "closed": "работает",
    "open": "разомкнут: вызовы приостановлены",
    "half_open": "ждёт пробного вызова",
    "": "",
}


@dataclass(frozen=True)
class CeilingRow:
    kind: str
    currency: str
    limit: str
    used: str
    percent: str | None
    gauge: SafeString | None


@dataclass
class Panel:
    """One contour's card (slug "" collects calls no contour could be named for)."""

    slug: str
    name: str
    mode: str
    circuit: str
    day_chart: SafeString
    month_chart: SafeString
    day_calls: int
    day_refusals: int
    month_calls: int
    month_refusals: int
    pending: int = 0
    ceilings: list[CeilingRow] = field(default_factory=list)
    invoiced: list[str] = field(default_factory=list)
    zone: str = "UTC"  # the clock of its charts, named on the page

    @property
    def circuit_label(self) -> str:
        return CIRCUIT_LABELS.get(self.circuit, self.circuit)


@dataclass(frozen=True)
class PendingRow:
    confirmation: PendingConfirmation
    age: timedelta
    amount: str
    waiting_for: str


def is_owner(user: Any) -> bool:
    """An owner of at least one contour (roles are per contour), or a superuser."""
    return roles.has_role(user, None, Role.OWNER)


def _counts(
    slug: str, since: datetime, trunc: type[TruncHour] | type[TruncDay], tz: ZoneInfo
) -> list[dict[str, Any]]:
    return list(
        # An execution's "started" entry precedes its outcome entry: one call, counted once.
        JournalEntry.objects.filter(contour=slug, at__gte=since, phase__in=CALL_PHASES)
        .exclude(status=Status.STARTED)
        .annotate(bucket=trunc("at", tzinfo=tz))
        .values("bucket")
        .annotate(calls=Count("id"), refusals=Count("id", filter=Q(status__in=REFUSED)))
        .order_by("bucket")
    )


def hourly(slug: str, tz: ZoneInfo, now: datetime) -> list[charts.Bar]:
    """The last 24 hours in the contour's time zone, the current (partial) hour last."""
    current = now.astimezone(tz).replace(minute=0, second=0, microsecond=0).astimezone(UTC)
    starts = [current - timedelta(hours=back) for back in range(HOURS - 1, -1, -1)]
    found = {row["bucket"].astimezone(UTC): row for row in _counts(slug, starts[0], TruncHour, tz)}
    bars = []
    for start in starts:
        row = found.get(start, {})
        local = start.astimezone(tz)
        bars.append(
            charts.Bar(
                f"{local:%H}", f"{local:%d.%m %H}:00", row.get("calls", 0), row.get("refusals", 0)
            )
        )
    return bars


def daily(slug: str, tz: ZoneInfo, now: datetime) -> list[charts.Bar]:
    """The last 30 days, midnight to midnight in the contour's time zone, today last."""
    today = now.astimezone(tz).date()
    days: list[date] = [today - timedelta(days=back) for back in range(DAYS - 1, -1, -1)]
    since = datetime.combine(days[0], time(0), tzinfo=tz)
    found = {row["bucket"].astimezone(tz).date(): row for row in _counts(slug, since, TruncDay, tz)}
    return [
        charts.Bar(
            f"{day:%d.%m}",
            f"{day:%d.%m.%Y}",
            found.get(day, {}).get("calls", 0),
            found.get(day, {}).get("refusals", 0),
        )
        for day in days
    ]


def percent(ratio: float) -> str:
    """'37', or '0,4' below ten per cent: a small share must not read as nothing used."""
    share = ratio * 100
    if share >= 10 or share == 0:
        return f"{share:.0f}"
    return f"{share:.1f}".removesuffix(".0").replace(".", ",")


def _ceiling_rows(contour: Contour, now: datetime) -> list[CeilingRow]:
    rows = []
    for usage in state.ceiling_usage(now, contour):
        kind = CeilingKind(usage.kind).label
        if usage.kind == CeilingKind.PER_HOUR:
            limit, used = str(usage.limit), str(usage.used)
        else:
            limit = format_rub(usage.limit, usage.currency)
            used = "—" if usage.used is None else format_rub(usage.used, usage.currency)
        ratio = usage.ratio
        rows.append(
            CeilingRow(
                kind=kind,
                currency=usage.currency,
                limit=limit,
                used=used,
                percent=None if ratio is None else percent(ratio),
                gauge=None if usage.used is None else charts.usage_bar(usage.used, usage.limit),
            )
        )
    return rows


def _panel(slug: str, name: str, mode: str, circuit: str, tz: ZoneInfo, now: datetime) -> Panel:
    hours, days = hourly(slug, tz, now), daily(slug, tz, now)
    return Panel(
        slug=slug,
        name=name,
        mode=mode,
        circuit=circuit,
        day_chart=charts.bar_chart(hours, title="Вызовы за 24 часа", label_every=3),
        month_chart=charts.bar_chart(days, title="Вызовы за 30 дней", label_every=5),
        day_calls=sum(bar.calls for bar in hours),
        day_refusals=sum(bar.refusals for bar in hours),
        month_calls=sum(bar.calls for bar in days),
        month_refusals=sum(bar.refusals for bar in days),
        zone=zone_label(tz, now),
    )


def zone_label(tz: ZoneInfo, now: datetime) -> str:
    """ "Europe/Moscow, UTC+03:00": which clock the hours and days of a chart follow."""
    offset = now.astimezone(tz).strftime("%z")
    return f"{tz.key}, UTC{offset[:3]}:{offset[3:]}"


def panels(now: datetime, contours: QuerySet[Contour], *, orphans: bool = True) -> list[Panel]:
    breakers = dict(state.circuits(now))
    pending: dict[str, int] = {}
    for stat in state.pending_stats(now):
        pending[stat.contour] = pending.get(stat.contour, 0) + stat.count
    result = []
    for contour in contours.order_by("slug"):
        panel = _panel(
            contour.slug,
            contour.name,
            contour.get_mode_display(),
            breakers.get(contour.slug, "closed"),
            ZoneInfo(contour.time_zone),
            now,
        )
        panel.pending = pending.get(contour.slug, 0)
        panel.ceilings = _ceiling_rows(contour, now)
        panel.invoiced = [
            format_rub(total, currency)
            for currency, total in state.invoiced(contour, now - timedelta(days=DAYS)).items()
        ]
        result.append(panel)
    if not orphans:
        return result
    unnamed = _panel("", "Без контура (ключ не опознан)", "", "", ZoneInfo("UTC"), now)
    if unnamed.month_calls:
        result.append(unnamed)
    return result


def pending_rows(now: datetime, contours: QuerySet[Contour]) -> list[PendingRow]:
    return [
        PendingRow(
            confirmation=confirmation,
            age=now - confirmation.created_at,
            amount="—"
            if confirmation.amount is None
            else format_rub(confirmation.amount, confirmation.currency or "RUB"),
            waiting_for="оператора" if confirmation.requires_approval else "ассистента",
        )
        for confirmation in state.oldest_pending(now, contours=contours)
    ]


@login_required
@require_GET
def dashboard_view(request: HttpRequest) -> HttpResponse:
    if not is_owner(request.user):
        return HttpResponseForbidden("Только для владельцев контуров.")
    now = timezone.now()
    contours = roles.contours_for(request.user, Role.OWNER)
    return render(
        request,
        "dashboard/index.html",
        {
            "panels": panels(now, contours, orphans=request.user.is_superuser),
            "pending": pending_rows(now, contours),
            "now": now,
            "undelivered": alerts.undelivered(contours.values("pk")),
            "server_zone": zone_label(ZoneInfo(settings.TIME_ZONE), now),
        },
    )
