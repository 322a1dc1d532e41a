"""What the client sends for update_order, the order date filters and shipment lists, checked
against the documented shapes (docs/invoicebox-api.md)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from urllib.parse import parse_qsl

import pytest

from invoicebox.client import BasketLine, Customer, OrderUpdate
from tests.invoicebox.test_client import REMOTE_URL, Remote, list_reply, order_reply

pytestmark = pytest.mark.django_db

D = Decimal
ORDER_ID = "0190d6a4-1f2e-7c3b-9a8d-123456789abc"
# UpdateOrderRequest, docs merchant/order/update.md:21-30.
DOCUMENTED = {
    "description",
    "amount",
    "vatAmount",
    "expirationDate",
    "basketItems",
    "metaData",
    "customer",
    "shopId",
}


@pytest.fixture
def remote() -> Remote:
    return Remote()


def test_update_order_puts_only_the_changed_documented_fields(remote: Remote) -> None:
    # given
    remote.answer = lambda request: order_reply(amount=D("247.92"), vatAmount=D("41.32"))
    line = BasketLine(
        sku="ROOM-STD",
        name="Бронирование номера",
        measure="шт",
        measure_code="796",
        quantity=D(2),
        amount=12396,
        amount_wo_vat=10330,
        total_amount=24792,
        total_vat_amount=4132,
        vat_code="RUS_VAT20",
        type="service",
        payment_type="full_prepayment",
    )
    later = dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=3)))

    # when
    order = remote.client().update_order(
        ORDER_ID,
        OrderUpdate(
            amount=24792,
            vat_amount=4132,
            basket=[line],
            expiration_date=later,
            customer=Customer(type="legal", name="ООО «Ромашка»"),
        ),
    )

    # then
    (request,) = remote.requests
    assert (request.method, str(request.url)) == (
        "PUT",
        f"{REMOTE_URL}/v3/billing/api/order/order/{ORDER_ID}",
    )
    assert request.headers["content-type"] == "application/json"
    body = json.loads(request.content, parse_float=Decimal)
    assert set(body) <= DOCUMENTED
    assert set(body) == {"amount", "vatAmount", "basketItems", "expirationDate", "customer"}
    assert (body["amount"], body["vatAmount"]) == (D("247.92"), D("41.32"))
    assert body["expirationDate"] == "2030-01-02T03:04:05+03:00"
    assert body["basketItems"][0]["measure"] == "шт"
    assert body["customer"] == {"type": "legal", "name": "ООО «Ромашка»"}
    assert order.amount == 24792


def test_a_description_alone_sends_a_description_alone(remote: Remote) -> None:
    remote.answer = lambda request: order_reply(description="Иное")

    remote.client().update_order(ORDER_ID, OrderUpdate(description="Иное"))

    assert json.loads(remote.requests[0].content) == {"description": "Иное"}


def test_find_orders_sends_the_expiration_and_payment_filters(remote: Remote) -> None:
    moment = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)

    remote.client().find_orders(expiration_from=moment, expiration_to=moment, paid_from=moment)

    sent = parse_qsl(remote.requests[0].url.query.decode("ascii"))
    assert ("expirationDate[_ge]", "2026-01-02T03:04:05+00:00") in sent
    assert ("expirationDate[_le]", "2026-01-02T03:04:05+00:00") in sent
    assert ("paidAt[_ge]", "2026-01-02T03:04:05+00:00") in sent
    assert not [name for name, _ in sent if name.startswith("paidAt[_le]")]


def test_every_read_carries_content_type_and_shipments_sort_by_a_documented_field(
    remote: Remote,
) -> None:
    remote.answer = lambda request: list_reply()

    remote.client().find_shipments(order_id=ORDER_ID)

    (request,) = remote.requests
    assert request.headers["content-type"] == "application/json"
    sent = parse_qsl(request.url.query.decode("ascii"))
    # ShipmentResponse documents id, not createdAt (docs merchant/order/shipment_create.md).
    assert ("_order[id]", "asc") in sent
    assert not [name for name, _ in sent if "createdAt" in name]
