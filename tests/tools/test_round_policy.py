"""roundPolicy is sent as strict, and the default line arithmetic is exact under it."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from adapters.invoicebox.models import SandboxOrder
from tests.conftest import Assistant, order_args
from tests.tools.test_more_tools import two_phase

pytestmark = pytest.mark.django_db


def three_at_123_45(vat: str) -> dict[str, Any]:
    line = {"sku": "MUG", "name": "Кружка", "measure": "шт", "quantity": 3, "amount": "12345",
            "total_amount": "37035", "total_vat_amount": vat, "vat_code": "RUS_VAT20",
            "type": "commodity"}
    return order_args(basket_items=[line], amount="37035", vat_amount=vat)


def test_an_order_is_sent_with_round_policy_strict(assistant: Assistant) -> None:
    # when
    _, done = two_phase(assistant, "create_order", order_args())

    # then
    assert done["status"] == "ok", done
    sent = json.loads(SandboxOrder.objects.get().request_json)
    assert sent["orderSetting"] == {"roundPolicy": "strict"}


def test_a_line_whose_price_without_vat_cannot_be_exact_is_refused_with_the_exact_vat(
    assistant: Assistant,
) -> None:
    # given: 3 × 123,45 ₽ at 20 %, VAT of the line total 61,73 ₽: (370,35 − 61,73) / 3 is
    # 102,873… ₽, so any whole-kopeck amountWoVat is a kopeck off under strict
    args = three_at_123_45("6173")

    # when
    status, body = assistant.call("create_order", args)

    # then: refused before anything is sent, naming the VAT by the unit that is exact
    assert (status, body["code"]) == (400, "invalid_arguments"), body
    (problem,) = [p for p in body["problems"] if p["field"].endswith("total_vat_amount")]
    assert "6174" in problem["message"] and "10287" in problem["message"]
    assert not SandboxOrder.objects.exists()


def test_the_exact_vat_by_the_unit_gives_an_exact_line(assistant: Assistant) -> None:
    # when
    _, done = two_phase(assistant, "create_order", three_at_123_45("6174"))

    # then: 102,87 × 3 + 61,74 = 370,35 exactly
    assert done["status"] == "ok", done
    (item,) = json.loads(SandboxOrder.objects.get().request_json,
                         parse_float=Decimal)["basketItems"]
    assert item["amountWoVat"] * item["quantity"] + item["totalVatAmount"] == item["totalAmount"]
