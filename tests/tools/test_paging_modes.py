"""No guess about paging becomes an outage: every list and write tool works, over
REST, against an upstream that reads page/pageSize only (the docs), _page/_pageSize only (the
vendor's code), both, or neither (its own first page of 30, whatever is asked)."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.api import pay_order
from tests.conftest import Assistant, order_args
from tests.tools.test_more_tools import two_phase
from tools.models import PendingConfirmation

pytestmark = pytest.mark.django_db

LINE = {
    "sku": "ROOM-STD",
    "name": "Бронирование номера",
    "measure": "шт",
    "quantity": 1,
    "amount": "12200",
    "total_amount": "12200",
    "total_vat_amount": "2200",
    "vat_code": "RUS_VAT22",
    "type": "service",
}


def ok(reply: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    status, body = reply
    assert (status, body["status"]) == (200, "ok"), body
    return body["data"]


@pytest.mark.parametrize("mode", ["both", "docs", "vendor", "none"])
def test_every_list_and_write_tool_works_whatever_paging_the_upstream_reads(
    assistant: Assistant, settings: Any, mode: str
) -> None:
    settings.INVOICEBOX_SANDBOX_PAGING = mode
    assistant.contour.toolsets = ["read", "write", "refund"]
    assistant.contour.save()

    created = ok(two_phase(assistant, "create_order", order_args()))
    order_id, number = created["order_id"], created["merchant_order_id"]
    other = ok(two_phase(assistant, "create_order", order_args(description="Второй")))

    assert ok(assistant.call("get_order", {"order_id": order_id}))["order_id"] == order_id
    assert ok(assistant.call("get_order", {"merchant_order_id": number}))["order_id"] == order_id
    first_page = ok(assistant.call("find_orders", {"page_size": 1}))
    assert (len(first_page["orders"]), first_page["total_count"]) == (1, 2)
    assert first_page["truncated"] is True
    ok(two_phase(assistant, "update_order", {"order_id": other["order_id"], "description": "Иное"}))
    ok(two_phase(assistant, "cancel_order", {"order_id": other["order_id"]}))

    pay_order(order_id)
    ok(two_phase(assistant, "create_shipment", {"order_id": order_id, "basket_items": [LINE]}))
    shipments = ok(assistant.call("find_shipments", {"order_id": order_id}))
    assert shipments["total_count"] == 1
    refund_args = {
        "parent_order_id": order_id,
        "description": "Возврат ночи",
        "basket_items": [{"sku": "ROOM-STD", "quantity": 1, "total_amount": "12200"}],
    }
    _, first = assistant.call("create_refund", refund_args)
    PendingConfirmation.objects.filter(pk=first["confirmation"]["id"]).update(status="approved")
    ok(
        assistant.call(
            "create_refund", {**refund_args, "confirmation_token": first["confirmation"]["token"]}
        )
    )
    assert ok(assistant.call("find_refunds", {"order_id": order_id}))["total_count"] == 1
    assert (
        ok(assistant.call("get_refundable", {"order_id": order_id}))["available_amount"] == "24400"
    )

    # A second page is only trusted from an upstream that read a paging name.
    status, second_page = assistant.call("find_orders", {"page": 2, "page_size": 1})
    if mode == "none":
        assert second_page["status"] != "ok", second_page
    else:
        assert [o["order_id"] for o in ok((status, second_page))["orders"]] != [
            o["order_id"] for o in first_page["orders"]
        ]
