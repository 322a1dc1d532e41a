"""The sandbox held to the documented contract: PUT on orders (docs merchant/order/update.md),
OKEI units, the documented list filters."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from sandbox.api import DEMO_MERCHANT_ID, pay_order
from sandbox.models import SandboxOrder
from tests.invoicebox.conftest import ORDERS, loads, reference_order

pytestmark = pytest.mark.django_db

D = Decimal
Http = Callable[..., Any]


def _create(http: Http) -> dict[str, Any]:
    response = http("POST", ORDERS, reference_order(DEMO_MERCHANT_ID))
    assert response.status_code == 200, response.content
    return loads(response.content)["data"]


def _error(response: Any) -> dict[str, Any]:
    return loads(response.content)["error"]


def _line(quantity: int) -> dict[str, Any]:
    """quantity × 123.96 at 20 % VAT, as in the reference order."""
    total = D("123.96") * quantity
    vat = (total * 20 / 120).quantize(D("0.01"))
    return {
        "sku": "ROOM-STD",
        "name": "Бронирование номера",
        "measure": "шт",
        "measureCode": "796",
        "quantity": quantity,
        "amount": D("123.96"),
        "amountWoVat": D("103.3"),
        "totalAmount": total,
        "totalVatAmount": vat,
        "vatCode": "RUS_VAT20",
        "type": "service",
        "paymentType": "full_prepayment",
    }


def test_put_changes_an_unpaid_order(http: Http) -> None:
    order = _create(http)
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(days=30)).replace(microsecond=0)

    response = http(
        "PUT",
        f"{ORDERS}/{order['id']}",
        {
            "description": "2 ночи",
            "basketItems": [_line(2)],
            "amount": D("247.92"),
            "vatAmount": D("41.32"),
            "expirationDate": later.isoformat(),
        },
    )

    assert response.status_code == 200, response.content
    data = loads(response.content)["data"]
    assert (data["description"], data["amount"], data["status"]) == (
        "2 ночи",
        D("247.92"),
        "created",
    )
    row = SandboxOrder.objects.get(order_id=order["id"])
    assert (row.amount, row.expiration_date) == (D("247.92"), later)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"amount": D("1.00")}, 422, "wrong_total_amount"),  # against the basket it keeps
        ({"basketItems": [_line(2)]}, 422, "wrong_total_amount"),  # amount left at 3 nights
        (
            {
                "basketItems": [{**_line(2), "measure": "кг"}],
                "amount": D("247.92"),
                "vatAmount": D("41.32"),
            },
            422,
            "validation",
        ),
        ({"expirationDate": "2000-01-01T00:00:00+00:00"}, 422, "wrong_expiration_date"),
    ],
)
def test_put_refuses_what_create_would_and_changes_nothing(
    http: Http, body: dict[str, Any], status: int, code: str
) -> None:
    order = _create(http)
    before = SandboxOrder.objects.get(order_id=order["id"]).request_json

    response = http("PUT", f"{ORDERS}/{order['id']}", body)

    assert (response.status_code, _error(response)["code"]) == (status, code)
    assert SandboxOrder.objects.get(order_id=order["id"]).request_json == before


def test_put_on_a_paid_order_is_wrong_order_status(http: Http) -> None:
    order = _create(http)
    pay_order(order["id"], notify=False)

    response = http("PUT", f"{ORDERS}/{order['id']}", {"description": "поздно"})

    assert (response.status_code, _error(response)["code"]) == (422, "wrong_order_status")


def test_put_on_another_merchants_order_is_not_found(http: Http, contour: Any) -> None:
    order = _create(http)

    response = http("PUT", f"{ORDERS}/{order['id']}", {"description": "чужой"}, token=contour.token)

    assert (response.status_code, _error(response)["code"]) == (404, "not_found")


@pytest.mark.parametrize(
    ("measure", "code", "accepted"),
    # The vendor's own pairs are accepted (issue 40.4): шт./796 (BX), год/366 and компл/704 (MCP).
    [
        ("шт", "796", True),
        ("шт.", "796", True),
        ("кг", "796", False),
        ("лет", "366", True),
        ("г", "366", True),
        ("год", "366", True),
        ("компл", "704", True),
        ("рул", "736", True),
        ("пог. м", "018", True),
        ("л.", "625", True),
        ("л", "625", False),
        ("дн", "359", True),
    ],
)
def test_a_measure_must_be_a_sign_of_its_okei_code(
    http: Http, measure: str, code: str, accepted: bool
) -> None:
    body = reference_order()
    body["basketItems"][0].update(measure=measure, measureCode=code)

    response = http("POST", ORDERS, body)

    assert (response.status_code == 200) is accepted, response.content
    if not accepted:
        error = _error(response)
        assert (error["code"], error["fields"][0]["name"]) == (
            "validation",
            "basketItems[0].measure",
        )


@pytest.mark.parametrize(
    "path",
    [
        "/sandbox/invoicebox/v3/filter/api/order/shipment",
        "/sandbox/invoicebox/v3/filter/api/order/refund-order",
    ],
)
def test_shipment_and_refund_lists_take_the_documented_merchant_filter(
    http: Http, path: str
) -> None:
    # docs merchant/order/shipment_get.md:29-32 and merchant/refund/get.md:41.
    mine = http("GET", path, query={"merchantId": DEMO_MERCHANT_ID})
    other = http("GET", path, query={"merchantId": "11111111-2222-3333-4444-555555555555"})

    assert (mine.status_code, other.status_code) == (200, 200), (mine.content, other.content)
    assert loads(other.content)["data"] == []
