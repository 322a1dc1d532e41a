"""Issue 40.2, 40.5, 40.6: the sandbox's switches disagree with the gateway where the live API
might, and the capabilities a shop asks for (guarantee reversal, invoiceSetting, the number
the payer sees, amount filters) go through the real path: REST, the gateway, the sandbox."""

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
from sandbox.models import SandboxOrder, SandboxShipment
from tests.conftest import Assistant, order_args
from tests.tools.test_more_tools import SHIP_LINE, new_order, two_phase

pytestmark = pytest.mark.django_db

# 1 000 screws at 0,37 ₽, 20 %: VAT per unit 0,06 ₽ × 1 000 = 60,00 ₽, as the Bitrix module
# computes it (its line VAT would be 61,67 ₽).
SCREWS = {
    "sku": "SCR",
    "name": "Саморез",
    "measure": "шт",
    "quantity": 1000,
    "amount": "37",
    "total_amount": "37000",
    "total_vat_amount": "6000",
    "vat_code": "RUS_VAT20",
    "type": "commodity",
}


def sent_order(merchant_order_id: str) -> dict[str, Any]:
    row = SandboxOrder.objects.get(merchant_order_id=merchant_order_id)
    return json.loads(row.request_json, parse_float=Decimal)


def test_per_unit_vat_is_the_merchants_arithmetic_and_is_sent_as_given(
    assistant: Assistant,
) -> None:
    status, done = two_phase(
        assistant,
        "create_order",
        order_args(basket_items=[SCREWS], amount="37000", vat_amount="6000"),
    )

    assert (status, done["status"]) == (200, "ok"), done
    item = sent_order(done["data"]["merchant_order_id"])["basketItems"][0]
    assert (item["totalVatAmount"], item["amountWoVat"]) == (Decimal("60"), Decimal("0.31"))


def test_an_api_that_takes_only_line_vat_names_the_field(assistant: Assistant, settings) -> None:
    settings.INVOICEBOX_SANDBOX_PER_UNIT_VAT = False

    _, done = two_phase(
        assistant,
        "create_order",
        order_args(basket_items=[SCREWS], amount="37000", vat_amount="6000"),
    )

    assert done["code"] == "upstream_rejected", done
    assert [f["field"] for f in done["data"]["upstream_fields"]] == [
        "basketItems[0].totalVatAmount"
    ]


def test_a_strict_sandbox_refuses_unstated_rounding_and_accepts_the_stated_one(
    assistant: Assistant, settings
) -> None:
    settings.INVOICEBOX_SANDBOX_ROUND_POLICY = "strict"
    coffee = {
        "sku": "C",
        "name": "Кофе",
        "measure": "кг",
        "quantity": 0.75,
        "amount": "133333",
        "total_amount": "100000",
        "total_vat_amount": "18033",
        "vat_code": "RUS_VAT22",
        "type": "commodity",
    }
    args = order_args(basket_items=[coffee], amount="100000", vat_amount="18033")
    body = {"merchantId": "ffffffff-ffff-ffff-ffff-ffffffffffff"}

    # the gateway states halfUp, and the order and its shipment pass under strict
    _, done = two_phase(assistant, "create_order", args)
    assert done["status"] == "ok", done
    assert sent_order(done["data"]["merchant_order_id"])["orderSetting"] == {
        "roundPolicy": "halfUp"
    }
    # the same body without the statement is refused by the strict default
    unstated = {
        **sent_order(done["data"]["merchant_order_id"]),
        **body,
        "merchantOrderId": "unstated-1",
    }
    unstated.pop("orderSetting")
    unstated["expirationDate"] = (timezone.now() + timezone.timedelta(days=1)).isoformat()
    answer = Client().post(
        "/sandbox/invoicebox/v3/billing/api/order/order",
        simplejson.dumps(unstated, use_decimal=True),
        content_type="application/json",
        HTTP_AUTHORIZATION="Bearer b37c4c689295904ed21eee5d9a48d42e",
    )
    assert answer.status_code == 422, answer.content
    assert answer.json()["error"]["code"] == "wrong_basket_item_total_amount"


def test_several_merchants_per_token_show_only_the_contours_rows(
    assistant: Assistant, settings
) -> None:
    settings.INVOICEBOX_SANDBOX_SHARED_TOKEN = True
    order_id = new_order(assistant)
    foreign = SandboxOrder.objects.create(
        order_id=uuid.uuid4(),
        order_container_id=uuid.uuid4(),
        merchant_id=uuid.uuid4(),
        merchant_order_id="foreign-1",
        amount=1,
        vat_amount=0,
        currency_id="RUB",
        created_at=timezone.now(),
        expiration_date=timezone.now(),
        request_json="{}",
    )
    SandboxShipment.objects.create(
        order=foreign,
        merchant_id=foreign.merchant_id,
        status="completed",
        amount=1,
        vat_amount=0,
        created_at=timezone.now(),
        request_json=json.dumps({"orderId": str(foreign.order_id), "basketItems": []}),
    )

    _, found = assistant.call("find_orders", {})
    _, shipments = assistant.call("find_shipments", {})

    assert [o["order_id"] for o in found["data"]["orders"]] == [order_id], found
    assert shipments["status"] == "ok", shipments


def test_unknown_query_keys_ignored_do_not_change_what_the_gateway_shows(
    assistant: Assistant, settings
) -> None:
    settings.INVOICEBOX_SANDBOX_UNKNOWN_QUERY = "ignore"
    new_order(assistant)
    answer = Client().get(
        "/sandbox/invoicebox/v3/filter/api/order/order",
        {"limit": "1", "_order[nope]": "asc"},
        HTTP_AUTHORIZATION="Bearer b37c4c689295904ed21eee5d9a48d42e",
    )

    _, found = assistant.call("find_orders", {"status": ["created"]})

    assert answer.status_code == 200 and len(answer.json()["data"]) == 1
    assert found["data"]["total_count"] == 1, found


def test_find_orders_by_amount_and_every_status_but_one(assistant: Assistant) -> None:
    small = new_order(assistant)  # 366,00 ₽
    _, big = two_phase(
        assistant,
        "create_order",
        order_args(
            basket_items=[
                {**SHIP_LINE, "quantity": 10, "total_amount": "122000", "total_vat_amount": "22000"}
            ],
            amount="122000",
            vat_amount="22000",
        ),
    )
    pay_order(small)

    _, above = assistant.call("find_orders", {"amount_from": "100000"})
    _, below = assistant.call("find_orders", {"amount_to": "36600"})
    _, unpaid = assistant.call("find_orders", {"status_not": "completed"})
    _, empty = assistant.call("find_orders", {"amount_from": "5", "amount_to": "4"})

    assert [o["order_id"] for o in above["data"]["orders"]] == [big["data"]["order_id"]]
    assert [o["order_id"] for o in below["data"]["orders"]] == [small]
    assert [o["order_id"] for o in unpaid["data"]["orders"]] == [big["data"]["order_id"]]
    assert empty["code"] == "invalid_arguments", empty


def test_the_payer_sees_the_visible_number_and_locked_requisites(assistant: Assistant) -> None:
    status, done = two_phase(
        assistant,
        "create_order",
        order_args(merchant_order_id_visible="СЧ-2026/17", lock_customer=True),
    )

    assert (status, done["status"]) == (200, "ok"), done
    sent = sent_order(done["data"]["merchant_order_id"])
    assert sent["merchantOrderIdVisible"] == "СЧ-2026/17"
    assert sent["invoiceSetting"] == {"customerLocked": True}
    page = Client().get(
        done["data"]["payment_url"].split("testserver")[-1].replace("http://localhost:8000", "")
    )
    assert "СЧ-2026/17 (реквизиты плательщика закреплены)" in page.content.decode()


def test_locked_fields_by_name_are_sent_under_the_apis_names(assistant: Assistant) -> None:
    _, done = two_phase(
        assistant, "create_order", order_args(locked_customer_fields=["vat_number", "name"])
    )

    assert sent_order(done["data"]["merchant_order_id"])["invoiceSetting"] == {
        "customerLockedFields": ["vatNumber", "name"]
    }


def test_a_guarantee_payment_is_reversed_only_with_an_operator(
    assistant: Assistant, operator: Client
) -> None:
    order_id = new_order(assistant)
    pay_order(order_id, guarantee=True)
    args = {"order_id": order_id, "reverse_guarantee": True}

    _, plain = assistant.call("cancel_order", {"order_id": order_id})
    _, first = assistant.call("cancel_order", args)
    confirmed = {**args, "confirmation_token": first["confirmation"]["token"]}
    _, waiting = assistant.call("cancel_order", confirmed)
    operator.post(f"/approvals/{first['confirmation']['id']}/", {"decision": "approve"})
    status, done = assistant.call("cancel_order", confirmed)

    assert "reverse_guarantee=true" in plain["hint"], plain
    assert first["data"]["summary"]["reverses_guarantee"] is True, first
    assert waiting["status"] == "awaiting_approval", waiting
    assert (status, done["data"]["status"]) == (200, "canceled"), done


def test_an_ordinary_payment_or_a_shipped_one_is_not_reversed(
    assistant: Assistant, operator: Client
) -> None:
    ordinary = new_order(assistant)
    pay_order(ordinary)
    _, second = two_phase(assistant, "create_order", order_args(description="Второй счёт"))
    shipped = second["data"]["order_id"]
    pay_order(shipped, guarantee=True)
    two_phase(assistant, "create_shipment", {"order_id": shipped, "basket_items": [SHIP_LINE]})

    _, first = assistant.call("cancel_order", {"order_id": ordinary, "reverse_guarantee": True})
    operator.post(f"/approvals/{first['confirmation']['id']}/", {"decision": "approve"})
    _, refused = assistant.call(
        "cancel_order",
        {
            "order_id": ordinary,
            "reverse_guarantee": True,
            "confirmation_token": first["confirmation"]["token"],
        },
    )
    _, after_shipment = assistant.call(
        "cancel_order", {"order_id": shipped, "reverse_guarantee": True}
    )

    assert refused["code"] == "upstream_rejected", refused
    assert after_shipment["code"] == "precondition_failed", after_shipment
    assert "отгрузка" in after_shipment["message"]


SANDBOX = "/sandbox/invoicebox/v3"
DEMO = {"HTTP_AUTHORIZATION": "Bearer b37c4c689295904ed21eee5d9a48d42e"}


def post_order(template: dict[str, Any], **changes: Any) -> Any:
    body = {
        **template,
        "merchantOrderId": f"raw-{uuid.uuid4().hex[:8]}",
        "expirationDate": (timezone.now() + timezone.timedelta(days=1)).isoformat(),
        **changes,
    }
    body = {k: v for k, v in body.items() if v is not None}
    return Client().post(
        f"{SANDBOX}/billing/api/order/order",
        simplejson.dumps(body, use_decimal=True),
        content_type="application/json",
        **DEMO,
    )


def test_the_sandbox_is_no_stricter_than_the_docs_and_the_sdk(assistant: Assistant) -> None:
    # issue 40.5: the docs' own filter example, originCountryCode string(4), customer null
    new_order(assistant)
    template = sent_order(SandboxOrder.objects.get().merchant_order_id)
    item = {**template["basketItems"][0], "originCountryCode": "0643", "serviceDate": "2026-11-16"}

    by_amount = Client().get(f"{SANDBOX}/filter/api/order/order", {"amount[_gt]": "1000"}, **DEMO)
    four = post_order(template, basketItems=[item])
    no_customer = post_order(template, customer=None)
    bad_date = post_order(template, basketItems=[{**item, "serviceDate": "16.11.2026"}])
    by_shipment_date = Client().get(
        f"{SANDBOX}/filter/api/order/shipment", {"_order[createdAt]": "desc"}, **DEMO
    )

    assert by_amount.status_code == 200 and by_amount.json()["data"] == []
    assert (four.status_code, no_customer.status_code) == (200, 200), (
        four.content,
        no_customer.content,
    )
    assert bad_date.status_code == 422
    assert by_shipment_date.status_code == 200
