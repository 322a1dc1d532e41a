"""tools.pipeline.ceilings: what counts against an owner's ceilings (done writes and those that
may have happened, not failed ones), the day that rolls over at the contour's own midnight,
the hour that slides, and the currencies refused rather than passed unlimited. Driven through
ceilings.check on real rows; the clock is moved by the `clock` fixture, never slept."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from audit.actors import SCAFFOLDING
from tests.conftest import Clock
from tools import catalog
from tools import clock as database_clock
from tools.contours.services import create_contour
from tools.errors import ToolError
from tools.models import Ceiling, CeilingKind, Contour, Operation, OperationState
from tools.pipeline import ceilings, confirmations
from tools.pipeline.ceilings import Request
from tools.spec import Summary

pytestmark = pytest.mark.django_db

RUB = "RUB"


@pytest.fixture
def shop() -> Contour:
    contour = create_contour("shop", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)
    contour.time_zone = "Europe/Moscow"
    contour.allowed_currencies = [RUB, "USD"]
    contour.save()
    return contour


def limit(contour: Contour, kind: str, value: int, currency: str = RUB) -> None:
    Ceiling.objects.create(
        contour=contour,
        kind=kind,
        limit=value,
        currency="" if kind == CeilingKind.PER_HOUR else currency,
    )


def spent(
    contour: Contour, amount: int, state: str = OperationState.DONE, currency: str = RUB
) -> Operation:
    """A write of `amount` kopecks recorded now, as the gateway records one."""
    spec = catalog.get("create_order")
    assert spec is not None
    number = uuid.uuid4().hex
    confirmation, _ = confirmations.prepare(
        contour,
        spec,
        {"description": number},
        Summary(text=number, amount=amount, currency=currency),
        "key:ibg_test",
    )
    return Operation.objects.create(
        key=number,
        contour=contour,
        tool=spec.name,
        confirmation=confirmation,
        merchant_order_id=number,
        amount=amount,
        currency=currency,
        state=state,
    )


def refusal(contour: Contour, request: Request, **options: int) -> ToolError:
    with pytest.raises(ToolError) as refused:
        ceilings.check(contour, request, **options)
    return refused.value


def test_one_operation_above_its_ceiling_is_refused_with_the_numbers(shop: Contour):
    limit(shop, CeilingKind.PER_ORDER, 1_000_000)

    ceilings.check(shop, Request(1_000_000, RUB))
    error = refusal(shop, Request(1_000_001, RUB))

    assert error.code == "ceiling_exceeded"
    assert error.data["ceiling"] == "per_order"
    assert "больше на 0,01" in error.message


def test_the_day_counts_done_and_unresolved_writes_never_failed_ones(shop: Contour, clock: Clock):
    limit(shop, CeilingKind.PER_DAY, 1_000_000)
    clock.move_to(datetime(2026, 3, 10, 9, 0, tzinfo=UTC))
    spent(shop, 400_000)
    spent(shop, 300_000, OperationState.UNKNOWN)
    failed = spent(shop, 900_000, OperationState.FAILED)
    in_flight = spent(shop, 200_000, OperationState.IN_FLIGHT)

    [per_day] = Ceiling.objects.filter(contour=shop)
    assert ceilings.used(per_day, database_clock.now()) == 900_000
    assert ceilings.used(per_day, database_clock.now(), exclude_operation=in_flight.pk) == 700_000
    ceilings.check(shop, Request(100_000, RUB))
    error = refusal(shop, Request(100_001, RUB))
    assert error.data["ceiling"] == "per_day"
    assert "уже использовано 9\u00a0000,00 ₽, остаток 1\u00a0000,00 ₽" in error.message
    assert failed.state == OperationState.FAILED
    # Another currency's writes count against their own ceiling only.
    spent(shop, 5_000_000, currency="USD")
    ceilings.check(shop, Request(100_000, RUB))


def test_the_day_rolls_over_at_the_contours_midnight_not_utcs(shop: Contour, clock: Clock):
    limit(shop, CeilingKind.PER_DAY, 1_000_000)
    clock.move_to(datetime(2026, 3, 10, 20, 50, tzinfo=UTC))  # 23:50 in Moscow
    spent(shop, 1_000_000)
    assert refusal(shop, Request(1, RUB)).data["ceiling"] == "per_day"

    clock.advance(11 * 60)  # 00:01 in Moscow, still the 10th in UTC

    ceilings.check(shop, Request(1_000_000, RUB))
    assert ceilings.day_start(shop, database_clock.now()) == datetime(
        2026, 3, 10, 21, 0, tzinfo=UTC
    )


def test_the_hour_slides(shop: Contour, clock: Clock):
    limit(shop, CeilingKind.PER_HOUR, 2)
    spent(shop, 100)
    clock.advance(30 * 60)
    spent(shop, 100, OperationState.UNKNOWN)

    error = refusal(shop, Request(None, None))
    assert (error.data["ceiling"], error.data["used"], error.data["remaining"]) == (
        "per_hour",
        2,
        0,
    )

    clock.advance(31 * 60)  # the first write is now more than an hour old

    ceilings.check(shop, Request(None, None))


def test_a_currency_off_the_list_or_without_a_ceiling_is_refused_not_unlimited(shop: Contour):
    assert refusal(shop, Request(100, "EUR")).code == "currency_not_allowed"
    ceilings.check(shop, Request(100, "USD"))  # allowed, and no amount ceilings at all

    limit(shop, CeilingKind.PER_ORDER, 1_000_000)

    error = refusal(shop, Request(100, "USD"))
    assert error.code == "currency_not_allowed"
    assert error.data["currencies_with_ceilings"] == [RUB]


def test_without_ceilings_any_allowed_write_passes(shop: Contour):
    spent(shop, 10**12)

    ceilings.check(shop, Request(10**12, RUB))
    ceilings.check(shop, Request(None, None))
