"""Issue 40.6: tag-1212 item types, excise and marking on basket items, through the gateway and the
sandbox (D create.md BasketItem `type`, `excise`, `category`, `categoryType`; dictionary/tag1212.md;
merchant/honest-sign.md)."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from typing import Any

import pytest
import simplejson
from django.test import Client
from django.utils import timezone

from sandbox.api import pay_order
from sandbox.models import SandboxOrder, SandboxRefund, SandboxShipment
from tests.conftest import Assistant, order_args
from tests.tools.test_more_tools import two_phase

pytestmark = pytest.mark.django_db

# 10 packs of cigarettes with marking codes, excise 90,00 ₽ a pack, 20 % VAT inside the price.
CIGARETTES = {
    "sku": "CIG-1",
    "name": "Сигареты, пачка",
    "measure": "шт",
    "quantity": 10,
    "amount": "25000",
    "total_amount": "250000",
    "total_vat_amount": "41667",
    "vat_code": "RUS_VAT20",
    "type": 31,
    "excise": "90000",
    "category": "tobacco",
}
TAXI = {
    "sku": "RIDE",
    "name": "Поездка на такси",
    "measure": "шт",
    "quantity": 1,
    "amount": "50000",
    "total_amount": "50000",
    "total_vat_amount": "0",
    "vat_code": "VATNONE",
    "type": 4,
}


def sent_items(merchant_order_id: str) -> list[dict[str, Any]]:
    row = SandboxOrder.objects.get(merchant_order_id=merchant_order_id)
    items: list[dict[str, Any]] = json.loads(row.request_json, parse_float=Decimal)["basketItems"]
    return items


def order_of(*lines: dict[str, Any]) -> dict[str, Any]:
    return order_args(
        basket_items=list(lines),
        amount=str(sum(int(line["total_amount"]) for line in lines)),
        vat_amount=str(sum(int(line["total_vat_amount"]) for line in lines)),
    )


def test_a_marked_excisable_good_and_a_service_code_are_named_and_sent(
    assistant: Assistant,
) -> None:
    args = order_of(CIGARETTES, TAXI)

    _, first = assistant.call("create_order", args)
    status, done = assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )

    assert first["status"] == "confirmation_required", first
    assert (
        "признак предмета расчёта 31 (АТМ), акциз 900,00 ₽, маркировка tobacco (honestSign)"
        in first["message"]
    ), first["message"]
    assert "признак предмета расчёта 4 (У)" in first["message"]
    assert (status, done["status"]) == (200, "ok"), done
    cigarettes, taxi = sent_items(done["data"]["merchant_order_id"])
    assert (cigarettes["type"], cigarettes["excise"]) == (31, Decimal("900"))
    assert (cigarettes["category"], cigarettes["categoryType"]) == ("tobacco", "honestSign")
    assert taxi["type"] == 4 and "excise" not in taxi and "category" not in taxi
    # and a marked line ships as it was sold
    pay_order(done["data"]["order_id"])
    _, shipped = two_phase(
        assistant,
        "create_shipment",
        {"order_id": done["data"]["order_id"], "basket_items": [CIGARETTES]},
    )
    assert shipped["status"] == "ok", shipped
    [shipment] = SandboxShipment.objects.all()
    assert json.loads(shipment.request_json)["basketItems"][0]["categoryType"] == "honestSign"


def test_the_shops_own_category_map_is_stated(assistant: Assistant) -> None:
    cheese = {
        **CIGARETTES,
        "type": 33,
        "excise": None,
        "category": "cheese",
        "category_type": "merchantHonestSignMap",
    }
    del cheese["excise"]

    _, unstated = assistant.call("create_order", order_of({**cheese, "category_type": None}))
    _, done = two_phase(assistant, "create_order", order_of(cheese))

    assert unstated["code"] == "invalid_arguments", unstated
    assert "merchantHonestSignMap" in unstated["message"]
    assert done["status"] == "ok", done.get("data")
    [item] = sent_items(done["data"]["merchant_order_id"])
    assert (item["type"], item["category"], item["categoryType"]) == (
        33,
        "cheese",
        "merchantHonestSignMap",
    )


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"type": 28}, "тег 1212"),  # not in the docs' table
        ({"type": 1}, "подакцизного"),  # excise on a good that is not excisable
        ({"excise": "250001"}, "больше суммы"),
        ({"category": "caviar"}, "Честного знака"),
        ({"category": "caviar", "category_type": "honestSign"}, "Честного знака"),
        ({"category": None, "category_type": "honestSign"}, "без category"),
    ],
)
def test_marks_the_api_would_refuse_are_refused_first(
    assistant: Assistant, change: dict[str, Any], words: str
) -> None:
    line = {k: v for k, v in {**CIGARETTES, **change}.items() if v is not None}

    status, refused = assistant.call("create_order", order_of(line))

    assert (status, refused["code"]) == (400, "invalid_arguments"), refused
    assert words in refused["message"], refused["message"]


def raw_order(item_changes: dict[str, Any]) -> Any:
    item = {
        "sku": "M",
        "name": "Молоко",
        "measure": "шт",
        "measureCode": "796",
        "quantity": 1,
        "amount": 100,
        "amountWoVat": 100,
        "totalAmount": 100,
        "totalVatAmount": 0,
        "vatCode": "VATNONE",
        "type": 33,
        "paymentType": "full_prepayment",
        **item_changes,
    }
    body = {
        "merchantId": "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "merchantOrderId": f"raw-{uuid.uuid4().hex[:8]}",
        "amount": 100,
        "vatAmount": 0,
        "currencyId": "RUB",
        "languageId": "ru",
        "description": "Молоко",
        "expirationDate": (timezone.now() + timezone.timedelta(days=1)).isoformat(),
        "basketItems": [item],
    }
    return Client().post(
        "/sandbox/invoicebox/v3/billing/api/order/order",
        simplejson.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION="Bearer b37c4c689295904ed21eee5d9a48d42e",
    )


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"category": "milk"}, "basketItems[0].categoryType"),
        ({"category": "caviar", "categoryType": "honestSign"}, "basketItems[0].category"),
        ({"category": "milk", "categoryType": "honest"}, "basketItems[0].categoryType"),
        ({"type": 29}, "basketItems[0].type"),
        ({"excise": 101}, "basketItems[0].excise"),
    ],
)
def test_the_sandbox_checks_the_documented_marks(changes: dict[str, Any], field: str) -> None:
    answer = raw_order(changes)

    assert answer.status_code == 422, answer.content
    assert field in [f["name"] for f in answer.json()["error"]["fields"]], answer.json()


def test_the_sandbox_takes_a_documented_marking() -> None:
    answer = raw_order({"category": "milk", "categoryType": "honestSign", "type": "33"})

    assert answer.status_code in (200, 201), answer.content


def test_a_marked_line_is_refunded_as_sold_and_a_full_item_is_checked(
    assistant: Assistant, operator: Client
) -> None:
    assistant.contour.toolsets = ["read", "write", "refund"]
    assistant.contour.save()
    _, done = two_phase(assistant, "create_order", order_of(CIGARETTES))
    order_id = done["data"]["order_id"]
    pay_order(order_id)
    # two packs back, the line given whole as the vendor's server takes it
    line = {**CIGARETTES, "quantity": 2, "total_amount": "50000", "total_vat_amount": "8333"}
    line["excise"] = "18000"
    args = {"parent_order_id": order_id, "description": "две пачки", "basket_items": [line]}

    _, wrong_group = assistant.call(
        "create_refund", {**args, "basket_items": [{**line, "category": "otp"}]}
    )
    _, too_much_excise = assistant.call(
        "create_refund", {**args, "basket_items": [{**line, "excise": "90001"}]}
    )
    _, first = assistant.call("create_refund", args)
    operator.post(f"/approvals/{first['confirmation']['id']}/", {"decision": "approve"})
    _, refunded = assistant.call(
        "create_refund", {**args, "confirmation_token": first["confirmation"]["token"]}
    )

    assert wrong_group["code"] == "invalid_arguments" and "tobacco" in wrong_group["message"]
    assert too_much_excise["code"] == "invalid_arguments", too_much_excise
    assert "акциз 900,00 ₽" in too_much_excise["message"]
    assert refunded["status"] == "ok", refunded
    [item] = json.loads(SandboxRefund.objects.get().request_json)["basketItems"]
    assert (item["category"], item["categoryType"], str(item["type"])) == (
        "tobacco",
        "honestSign",
        "31",
    )
    assert "excise" not in item
