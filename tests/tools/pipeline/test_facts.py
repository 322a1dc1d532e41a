"""A confirmation binds to what the person saw (issue 39.3): when the order changed upstream
between the summary and the execution, nothing is sent; a new summary and token are answered."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from sandbox.api import DEMO_TOKEN
from tests.conftest import SANDBOX, Assistant
from tests.tools.test_more_tools import SHIP_LINE, new_order
from tools.models import PendingConfirmation

pytestmark = pytest.mark.django_db


def changed_upstream(order_id: str, roubles: int) -> None:
    """The merchant edits the order in their account: one line, a new amount."""
    line = {
        "sku": "ROOM-STD",
        "name": "Бронирование номера",
        "measure": "шт",
        "measureCode": "796",
        "quantity": 1,
        "amount": roubles,
        "amountWoVat": roubles,
        "totalAmount": roubles,
        "totalVatAmount": 0,
        "vatCode": "VATNONE",
        "type": "service",
        "paymentType": "full_prepayment",
    }
    answer = Client().put(
        f"{SANDBOX}/billing/api/order/order/{order_id}",
        content_type="application/json",
        data={"amount": roubles, "vatAmount": 0, "basketItems": [line]},
        HTTP_AUTHORIZATION=f"Bearer {DEMO_TOKEN}",
        HTTP_USER_AGENT="tests/1.0",
    )
    assert answer.status_code == 200, answer.content


def confirmed(assistant: Assistant, name: str, args: dict[str, Any]) -> dict[str, Any]:
    _, first = assistant.call(name, args)
    assert first["status"] == "confirmation_required", first
    return {**args, "confirmation_token": first["confirmation"]["token"]}


def test_a_cancel_of_an_order_changed_since_its_summary_asks_again(assistant: Assistant):
    order_id = new_order(assistant)
    args = {"order_id": order_id, "reason": "клиент передумал"}
    old = confirmed(assistant, "cancel_order", args)
    changed_upstream(order_id, 999)

    status, asked = assistant.call("cancel_order", old)
    _, read = assistant.call("get_order", {"order_id": order_id})

    assert (status, asked["status"]) == (200, "confirmation_required"), asked
    assert "366,00 ₽" in asked["message"] and "999,00 ₽" in asked["message"]
    assert asked["data"]["facts_changed"] == [
        "сумма счёта: было 366,00 ₽, стало 999,00 ₽",
        "НДС счёта: было 66,00 ₽, стало 0,00 ₽",
    ]
    assert "999,00 ₽" in asked["confirmation"]["summary"]
    assert read["data"]["status"] == "created"  # nothing was sent
    _, stale = assistant.call("cancel_order", old)
    assert stale["code"] == "confirmation_expired", stale

    _, done = assistant.call(
        "cancel_order", {**args, "confirmation_token": asked["confirmation"]["token"]}
    )
    assert done["status"] == "ok" and done["data"]["status"] == "canceled", done


def test_an_update_of_an_order_changed_since_its_summary_asks_again(assistant: Assistant):
    """Found by the chaos campaign's facts_changed scenario (issue 39.5): the update's summary
    names the order's amount and customer, so it binds to them like a cancel."""
    order_id = new_order(assistant)
    args = {"order_id": order_id, "description": "Новое назначение"}
    old = confirmed(assistant, "update_order", args)
    changed_upstream(order_id, 999)

    status, asked = assistant.call("update_order", old)
    _, read = assistant.call("get_order", {"order_id": order_id, "response_format": "detailed"})

    assert (status, asked["status"]) == (200, "confirmation_required"), asked
    assert "сумма счёта: было 366,00 ₽, стало 999,00 ₽" in asked["data"]["facts_changed"]
    assert read["data"]["description"] != "Новое назначение"  # nothing was sent
    _, done = assistant.call(
        "update_order", {**args, "confirmation_token": asked["confirmation"]["token"]}
    )
    assert done["status"] == "ok", done


def test_an_unchanged_order_executes_on_the_first_token(assistant: Assistant):
    order_id = new_order(assistant, paid=True)
    args = {"order_id": order_id, "basket_items": [SHIP_LINE]}

    _, done = assistant.call("create_shipment", confirmed(assistant, "create_shipment", args))

    assert done["status"] == "ok", done
    stored = PendingConfirmation.objects.get(tool="create_shipment").summary_data
    assert stored["upstream_facts"]["already_shipped"] == 0
