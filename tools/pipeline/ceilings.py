"""Owners' ceilings: per-operation amount, daily total per currency, hourly count of writes."""

from __future__ import annotations

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
        return counted.filter(
            currency=ceiling.currency, created_at__gte=day_start(ceiling.contour, now)
        ).aggregate(total=Sum("amount"))["total"] or 0
    return None


AMOUNT_KINDS = (CeilingKind.PER_ORDER, CeilingKind.PER_DAY)


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
                raise ToolError(
                    "ceiling_exceeded",
                    f"часовой потолок записей исчерпан: {count} из {ceiling.limit} за последний "
                    f"час, остаток {max(ceiling.limit - count, 0)}",
                    hint="подождите или попросите владельца контура поднять потолок",
                    data={"ceiling": "per_hour", "limit": ceiling.limit, "used": count,
                          "remaining": max(ceiling.limit - count, 0)},
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
                hint="уменьшите сумму или попросите владельца контура поднять потолок",
                data={"ceiling": "per_order", "currency": currency,
                      **kopecks(currency, limit=ceiling.limit, used=request.amount,
                                remaining=ceiling.limit)},
            )
        if ceiling.kind == CeilingKind.PER_DAY:
            spent = used(ceiling, now, exclude_operation=exclude_operation) or 0
            if spent + request.amount > ceiling.limit:
                left = max(ceiling.limit - spent, 0)
                raise ToolError(
                    "ceiling_exceeded",
                    f"суточный потолок {format_rub(ceiling.limit, currency)}: уже использовано "
                    f"{format_rub(spent, currency)}, остаток {format_rub(left, currency)}, "
                    f"запрошено {format_rub(request.amount, currency)}",
                    hint="операция не выполнена; потолок обнулится в полночь по времени контура",
                    data={"ceiling": "per_day", "currency": currency,
                          **kopecks(currency, limit=ceiling.limit, used=spent, remaining=left)},
                )
