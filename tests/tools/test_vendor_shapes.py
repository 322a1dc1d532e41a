"""Arguments written for the vendor's MCP server pass (issue 40.3): basket items with
service_date and group_name (sent on the lines), find_shipments without order_id and with
paging, refund lines given as full basket items (their extra fields checked, not refused)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sandbox.api import pay_order
from sandbox.models import SandboxOrder, SandboxRefund
from tests.conftest import VALID_ORDER, Assistant, order_args
from tests.tools.test_more_tools import SHIP_LINE, two_phase
from tools.models import PendingConfirmation

pytestmark = pytest.mark.django_db

LINE = VALID_ORDER["basket_items"][0]


def paid_order(assistant: Assistant, description: str, **line: Any) -> str:
    args = order_args(description=description, basket_items=[{**LINE, **line}])
    _, done = two_phase(assistant, "create_order", args)
    assert done["status"] == "ok", done
    pay_order(done["data"]["order_id"])
    return done["data"]["order_id"]


def test_service_date_and_group_name_are_sent_on_the_lines(assistant: Assistant):
    order_id = paid_order(
        assistant, "Проживание", service_date="2026-03-01", group_name="Проживание"
    )

    sent = json.loads(SandboxOrder.objects.get(order_id=order_id).request_json)
    assert sent["basketItems"][0]["serviceDate"] == "2026-03-01"
    assert sent["basketItems"][0]["groupName"] == "Проживание"
    _, shipped = two_phase(
        assistant,
        "create_shipment",
        {"order_id": order_id, "basket_items": [{**SHIP_LINE, "service_date": "2026-03-01"}]},
    )
    assert shipped["status"] == "ok", shipped


def test_find_shipments_without_an_order_and_by_pages(assistant: Assistant):
    for n in range(2):
        order_id = paid_order(assistant, f"Заказ {n}")
        _, done = two_phase(
            assistant, "create_shipment", {"order_id": order_id, "basket_items": [SHIP_LINE]}
        )
        assert done["status"] == "ok", done

    _, first = assistant.call("find_shipments", {"page": 1, "page_size": 1})
    _, second = assistant.call("find_shipments", {"page": 2, "page_size": 1})
    _, of_one = assistant.call("find_shipments", {"order_id": order_id, "page_size": 1})

    assert first["status"] == "ok", first
    assert (first["data"]["total_count"], first["data"]["truncated"]) == (2, True)
    assert len(first["data"]["shipments"]) == len(second["data"]["shipments"]) == 1
    assert (
        first["data"]["shipments"][0]["shipment_id"]
        != second["data"]["shipments"][0]["shipment_id"]
    )
    assert first["data"]["shipments"][0]["amount_human"] == "122,00 ₽"
    assert of_one["data"]["order_id"] == order_id and of_one["data"]["total_count"] == 1


def refund_args(order_id: str, **line: Any) -> dict[str, Any]:
    full = {
        **LINE,
        "quantity": 1,
        "total_amount": "12200",
        "total_vat_amount": "2200",
        "amount": "12200",
        "payment_type": "full_payment",
        **line,
    }
    return {
        "parent_order_id": order_id,
        "description": "Гость уехал раньше",
        "basket_items": [full],
    }


def test_a_refund_line_given_as_a_full_basket_item_is_accepted(assistant: Assistant):
    assistant.contour.toolsets = ["read", "write", "refund"]
    assistant.contour.save()
    order_id = paid_order(assistant, "Возврат составом")
    args = refund_args(order_id, group_name="Проживание")

    _, first = assistant.call("create_refund", args)
    assert first["status"] == "confirmation_required", first
    PendingConfirmation.objects.filter(pk=first["confirmation"]["id"]).update(status="approved")
    _, done = assistant.call(
        "create_refund", {**args, "confirmation_token": first["confirmation"]["token"]}
    )

    assert done["status"] == "ok", done
    sent = json.loads(SandboxRefund.objects.get().request_json)
    assert sent["basketItems"][0]["groupName"] == "Проживание"
    assert sent["basketItems"][0]["totalAmount"] == 122


def test_extra_fields_that_contradict_the_paid_line_are_named(assistant: Assistant):
    assistant.contour.toolsets = ["read", "write", "refund"]
    assistant.contour.save()
    order_id = paid_order(assistant, "Возврат с ошибкой")

    status, body = assistant.call(
        "create_refund",
        refund_args(order_id, name="Завтрак", vat_code="RUS_VAT10", amount="10000", measure="кг"),
    )

    assert (status, body["code"]) == (400, "invalid_arguments"), body
    assert {p["field"] for p in body["problems"]} == {
        f"basket_items[0].{name}" for name in ("name", "vat_code", "amount", "measure")
    }
