"""A list answer that repeats its rows is refused as a bad upstream answer, in every list tool:
one rule (invoicebox/transport.py `_refuse_repeats`), on every page and across pages,
so a count or a sum is never inflated (issue 39.2)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from sandbox.api import DEMO_TOKEN, pay_order, set_faults
from tests.conftest import SANDBOX, Assistant, order_args
from tests.tools.test_more_tools import SHIP_LINE, two_phase

pytestmark = pytest.mark.django_db


@pytest.fixture
def orders(assistant: Assistant) -> list[str]:
    made = []
    for n in range(3):
        _, body = two_phase(assistant, "create_order", order_args(description=f"Счёт {n}"))
        assert body["status"] == "ok", body
        pay_order(body["data"]["order_id"])
        made.append(body["data"]["order_id"])
    return made


def repeating(settings: Any, *kinds: str) -> None:
    settings.INVOICEBOX_SANDBOX_REPEAT_ROWS = list(kinds)


def assert_refused(status: int, body: dict[str, Any], repeated: str) -> None:
    assert (status, body["code"]) == (502, "upstream_unavailable"), body
    assert repeated in body["message"], body["message"]
    assert "ничего не посчитано" in body["message"]


def test_find_orders_with_every_row_twice_is_refused_not_counted(
    assistant: Assistant, orders: list[str], settings: Any
):
    _, honest = assistant.call("find_orders", {})
    assert honest["data"]["total_count"] == 3, honest
    repeating(settings, "orders")

    status, body = assistant.call("find_orders", {})

    assert_refused(status, body, "пришёл в списке дважды")
    assert "orders" not in body["data"]


def test_a_last_page_longer_than_its_total_leaves_is_refused(
    assistant: Assistant, orders: list[str]
):
    """A stuck pager answers page 2 with page 1's rows under page 2's number (the sandbox's
    loop_pages switch; found by the chaos campaign's list_loop scenario, issue 39.5): 3 orders
    at 2 a page leave 1 row for page 2, so 2 rows there are page 1's again, not counted."""
    _, honest = assistant.call("find_orders", {"page": 2, "page_size": 2})
    assert len(honest["data"]["orders"]) == 1, honest
    set_faults(DEMO_TOKEN, loop_pages=True)

    status, body = assistant.call("find_orders", {"page": 2, "page_size": 2})

    assert (status, body["code"]) == (502, "upstream_unavailable"), body
    assert "orders" not in body["data"]


def test_get_order_through_a_repeating_list_is_refused(
    assistant: Assistant, orders: list[str], settings: Any
):
    repeating(settings, "orders")

    status, body = assistant.call("get_order", {"order_id": orders[0]})

    assert_refused(status, body, f"счёт {orders[0]} пришёл в списке дважды")


def test_find_shipments_and_the_shipped_sum_refuse_repeated_rows(
    assistant: Assistant, orders: list[str], settings: Any
):
    args = {"order_id": orders[0], "basket_items": [SHIP_LINE]}
    _, done = two_phase(assistant, "create_shipment", args)
    assert done["status"] == "ok", done
    repeating(settings, "shipments")

    listed = assistant.call("find_shipments", {"order_id": orders[0]})
    # The remainder would be undercounted if the shipped sum counted the row twice.
    prepared = assistant.call("create_shipment", {**args, "allow_duplicate": True})

    assert_refused(*listed, "пришла в списке дважды")
    assert_refused(*prepared, "пришла в списке дважды")


def test_find_refunds_refuses_repeated_rows(assistant: Assistant, orders: list[str], settings: Any):
    assistant.contour.toolsets = ["read", "write", "refund"]
    assistant.contour.save()
    made = Client().post(
        f"{SANDBOX}/billing/api/order/refund-order",
        content_type="application/json",
        data={
            "parentId": orders[0],
            "merchantOrderId": "refund-by-hand",
            "description": "возврат",
            "amount": 122,
            "vatAmount": 22,
            "basketItems": [
                {
                    "sku": "ROOM-STD",
                    "name": "Бронирование номера",
                    "measure": "шт",
                    "measureCode": "796",
                    "quantity": 1,
                    "amount": 122,
                    "amountWoVat": 100,
                    "totalAmount": 122,
                    "totalVatAmount": 22,
                    "vatCode": "RUS_VAT22",
                    "type": "service",
                    "paymentType": "full_prepayment",
                }
            ],
        },
        HTTP_AUTHORIZATION=f"Bearer {DEMO_TOKEN}",
        HTTP_USER_AGENT="tests/1.0",
    )
    assert made.status_code in (200, 201), made.content
    repeating(settings, "refunds")

    status, body = assistant.call("find_refunds", {"order_id": orders[0]})

    assert_refused(status, body, "пришёл в списке дважды")


def test_the_directory_refuses_repeated_rows(assistant: Assistant, settings: Any):
    repeating(settings, "directory")

    status, body = assistant.call("lookup_company_by_inn", {"inn": "7710044140"})

    assert_refused(status, body, "пришли в списке дважды")
