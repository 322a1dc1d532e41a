"""find_refunds and get_refundable over REST against the sandbox: the refunds of an
order with their amounts, and what is still refundable line by line, also when the API leaves
availableAmount out (the docs promise plain BasketItems) and the client must subtract."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.api import pay_order
from tests.conftest import Assistant, order_args
from tests.tools.test_more_tools import two_phase
from tools.models import PendingConfirmation

pytestmark = pytest.mark.django_db

NIGHT = {"sku": "ROOM-STD", "quantity": 1, "total_amount": "12200"}


def refunded_one_night(assistant: Assistant) -> str:
    assistant.contour.toolsets = ["read", "write", "refund"]
    assistant.contour.save()
    _, done = two_phase(assistant, "create_order", order_args())
    order_id = done["data"]["order_id"]
    pay_order(order_id)
    args = {
        "parent_order_id": order_id,
        "description": "Гость уехал раньше",
        "basket_items": [NIGHT],
    }
    _, first = assistant.call("create_refund", args)
    # An operator's approval, as the web UI records it (its tests live in
    # tests/tools/people/test_operator_views.py).
    PendingConfirmation.objects.filter(pk=first["confirmation"]["id"]).update(status="approved")
    _, refund = assistant.call(
        "create_refund", {**args, "confirmation_token": first["confirmation"]["token"]}
    )
    assert refund["status"] == "ok", refund
    return order_id


def refundable(assistant: Assistant, order_id: str) -> dict[str, Any]:
    _, body = assistant.call("get_refundable", {"order_id": order_id})
    assert body["status"] == "ok", body
    return body["data"]


def test_find_refunds_lists_the_orders_refunds_with_amounts(assistant: Assistant) -> None:
    order_id = refunded_one_night(assistant)

    _, body = assistant.call("find_refunds", {"order_id": order_id})

    assert body["status"] == "ok", body
    (refund,) = body["data"]["refunds"]
    assert (refund["amount"], refund["amount_human"], refund["vat_amount"]) == (
        "12200",
        "122,00 ₽",
        "2200",
    )
    assert refund["status"] and refund["refund_id"]
    assert (body["data"]["total_count"], body["data"]["refunded_amount"]) == (1, "12200")


@pytest.mark.parametrize(
    "documented_only", [False, True], ids=["with availableAmount", "documented answer"]
)
def test_get_refundable_is_the_line_less_what_was_refunded(
    assistant: Assistant, settings: Any, documented_only: bool
) -> None:
    order_id = refunded_one_night(assistant)
    settings.INVOICEBOX_SANDBOX_DOCUMENTED_ONLY = documented_only

    data = refundable(assistant, order_id)

    (line,) = data["lines"]
    assert (line["sku"], line["total_amount"]) == ("ROOM-STD", "36600")
    assert (line["available_amount"], line["available_vat_amount"]) == ("24400", "4400")
    assert (data["available_amount"], data["available_amount_human"]) == ("24400", "244,00 ₽")


def test_an_unpaid_order_has_nothing_refundable(assistant: Assistant) -> None:
    _, done = two_phase(assistant, "create_order", order_args())

    data = refundable(assistant, done["data"]["order_id"])

    assert (data["status"], data["lines"], data["available_amount"]) == ("created", [], "0")
