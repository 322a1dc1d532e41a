"""Owners' ceilings: per-operation amount, daily total per currency, hourly count of writes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.db.models import Sum

from tools import clock
from tools.errors import ToolError
from tools.models import Ceiling, CeilingKind, Contour, Operation, OperationState
from tools.money import kopecks
from tools.params import format_rub

# Operations that count: done ones, and those that may have happened (in flight, unknown).
COUNTED_STATES = (OperationState.IN_FLIGHT, OperationState.DONE, OperationState.UNKNOWN)


@dataclass(frozen=True)
class Request:
    """What one write weighs: its amount in kopecks (None for writes without one)."""

    amount: int | None
    currency: str | None


def day_start(contour: Contour, now: datetime) -> datetime:
    """Daily ceilings roll over at midnight in the contour's time zone, not UTC."""
    local = now.astimezone(ZoneInfo(contour.time_zone))
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def used(ceiling: Ceiling, now: datetime, *, exclude_operation: int | None = None) -> int | None:
    """What counts against a ceiling right now (None for the per-operation cap)."""
    counted = Operation.objects.filter(contour=ceiling.contour, state__in=COUNTED_STATES)
    if exclude_operation is not None:
        counted = counted.exclude(pk=exclude_operation)
    if ceiling.kind == CeilingKind.PER_HOUR:
        return counted.filter(created_at__gte=now - timedelta(hours=1)).count()
    if ceiling.kind == CeilingKind.PER_DAY:
        return (
            counted.filter(
                currency=ceiling.currency, created_at__gte=day_start(ceiling.contour, now)
            ).aggregate(total=Sum("amount"))["total"]
            or 0
        )
    return None


AMOUNT_KINDS = (CeilingKind.PER_ORDER, CeilingKind.PER_DAY)

# No wait lets this write through (the per-operation cap; a sum above the whole daily
# ceiling; a zero hourly count): not 429, which clients retry.
NEVER_PASSES = 422


def hour_frees_at(
    ceiling: Ceiling, now: datetime, count: int, *, exclude_operation: int | None = None
) -> datetime | None:
    """When the hourly count drops below the limit: the write that must age out first is the
    (count - limit + 1)-th oldest of the last hour. None when the limit is zero."""
    if ceiling.limit <= 0:
        return None
    counted = Operation.objects.filter(
        contour=ceiling.contour, state__in=COUNTED_STATES, created_at__gte=now - timedelta(hours=1)
    )
    if exclude_operation is not None:
        counted = counted.exclude(pk=exclude_operation)
    must_leave = max(count - ceiling.limit + 1, 1)
    created = list(counted.order_by("created_at").values_list("created_at", flat=True)[:must_leave])
    return created[-1] + timedelta(hours=1) if created else now


def next_midnight(contour: Contour, now: datetime) -> datetime:
    # Wall-clock arithmetic within one zone: the next 00:00 even on a 23- or 25-hour day.
    return day_start(contour, now) + timedelta(days=1)


def retry_data(contour: Contour, now: datetime, frees_at: datetime) -> dict[str, object]:
    """data.retry_after_seconds (REST: Retry-After) and the moment in the contour's clock."""
    seconds = max(math.ceil((frees_at - now).total_seconds()), 1)
    local = frees_at.astimezone(ZoneInfo(contour.time_zone))
    return {"retry_after_seconds": seconds, "frees_at": local.isoformat(timespec="seconds")}


def _check_currency(contour: Contour, request: Request, ceilings: list[Ceiling]) -> None:
    """Fail closed: a currency off the contour's list, or one that no amount ceiling covers
    while the contour has amount ceilings, is refused rather than passed unlimited."""
    currency = request.currency
    if not currency:
        return
    allowed = list(contour.allowed_currencies or [])
    if not contour.allows_currency(currency):
        raise ToolError(
            "currency_not_allowed",
            f"валюта {currency} не разрешена в контуре «{contour.slug}»; разрешены: "
            + (", ".join(allowed) or "никакие"),
            hint="выставьте счёт в разрешённой валюте или попросите владельца контура "
            "добавить валюту (и потолки для неё)",
            data={"currency": currency, "allowed_currencies": allowed},
        )
    amount_ceilings = [c for c in ceilings if c.kind in AMOUNT_KINDS]
    if amount_ceilings and not any(c.currency == currency for c in amount_ceilings):
        covered = sorted({c.currency for c in amount_ceilings})
        raise ToolError(
            "currency_not_allowed",
            f"для валюты {currency} в контуре «{contour.slug}» нет потолка, а для "
            f"{', '.join(covered)} есть: запись без потолка не выполняется",
            hint="попросите владельца контура задать потолок для этой валюты",
            data={"currency": currency, "currencies_with_ceilings": covered},
        )


def check(contour: Contour, request: Request, *, exclude_operation: int | None = None) -> None:
    """Refuse with what is used and what is left; called at prepare and, under the contour's
    row lock, again at execution (the caller holds the lock)."""
    ceilings = list(Ceiling.objects.filter(contour=contour))
    for ceiling in ceilings:
        ceiling.contour = contour  # already loaded; spare a query per ceiling
    _check_currency(contour, request, ceilings)
    if not ceilings:
        return
    now = clock.now()  # one clock: a worker's own would count its own day
    for ceiling in ceilings:
        if ceiling.kind == CeilingKind.PER_HOUR:
            count = used(ceiling, now, exclude_operation=exclude_operation) or 0
            if count + 1 > ceiling.limit:
                frees_at = hour_frees_at(ceiling, now, count, exclude_operation=exclude_operation)
                data: dict[str, object] = {
                    "ceiling": "per_hour",
                    "limit": ceiling.limit,
                    "used": count,
                    "remaining": max(ceiling.limit - count, 0),
                }
                if frees_at is None:
                    hint = (
                        "запись в контуре выключена нулевым потолком: попросите владельца "
                        "контура поднять его"
                    )
                else:
                    data.update(retry_data(contour, now, frees_at))
                    hint = (
                        f"повторите не раньше чем через {data['retry_after_seconds']} с "
                        "или попросите владельца контура поднять потолок"
                    )
                raise ToolError(
                    "ceiling_exceeded",
                    f"часовой потолок записей исчерпан: {count} из {ceiling.limit} за последний "
                    f"час, остаток {max(ceiling.limit - count, 0)}",
                    hint=hint,
                    data=data,
                    http_status=NEVER_PASSES if frees_at is None else None,
                )
            continue
        if request.amount is None or ceiling.currency != request.currency:
            continue
        currency = request.currency or ""
        if ceiling.kind == CeilingKind.PER_ORDER and request.amount > ceiling.limit:
            raise ToolError(
                "ceiling_exceeded",
                f"потолок одной операции {format_rub(ceiling.limit, currency)}: запрошено "
                f"{format_rub(request.amount, currency)}, это больше на "
                f"{format_rub(request.amount - ceiling.limit, currency)}",
                hint="повтор не поможет: уменьшите сумму или попросите владельца контура "
                "поднять потолок",
                data={
                    "ceiling": "per_order",
                    "currency": currency,
                    **kopecks(
                        currency, limit=ceiling.limit, used=request.amount, remaining=ceiling.limit
                    ),
                },
                http_status=NEVER_PASSES,
            )
        if ceiling.kind == CeilingKind.PER_DAY:
            spent = used(ceiling, now, exclude_operation=exclude_operation) or 0
            if spent + request.amount > ceiling.limit:
                left = max(ceiling.limit - spent, 0)
                never = request.amount > ceiling.limit
                retry = {} if never else retry_data(contour, now, next_midnight(contour, now))
                raise ToolError(
                    "ceiling_exceeded",
                    f"суточный потолок {format_rub(ceiling.limit, currency)}: уже использовано "
                    f"{format_rub(spent, currency)}, остаток {format_rub(left, currency)}, "
                    f"запрошено {format_rub(request.amount, currency)}",
                    hint=(
                        "повтор не поможет: сумма больше всего суточного потолка; уменьшите "
                        "её или попросите владельца контура поднять потолок"
                        if never
                        else "операция не выполнена; потолок обнулится в полночь по времени "
                        f"контура ({retry['frees_at']})"
                    ),
                    data={
                        "ceiling": "per_day",
                        "currency": currency,
                        **kopecks(currency, limit=ceiling.limit, used=spent, remaining=left),
                        **retry,
                    },
                    http_status=NEVER_PASSES if never else None,
                )
