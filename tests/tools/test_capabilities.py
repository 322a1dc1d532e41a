"""Issue 40.6, the rest of the capabilities a shop asks for, through the gateway and the sandbox:
`UZS` end to end, every row of the counterparty directory, shipment lists of a token that sees
several shops (foreign rows counted and dropped, `merchant_id` shown)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from sandbox.api import pay_order
from sandbox.models import SandboxOrder, SandboxShipment
from tests.conftest import Assistant, order_args
from tests.tools.test_more_tools import SHIP_LINE, two_phase
from tools.models import Ceiling, CeilingKind

pytestmark = pytest.mark.django_db

# 3 nights at 1 500 000,00 сум, VAT 12 % inside (the VAT code is the docs' only vocabulary).
UZS_LINE = {
    "sku": "ROOM-TAS",
    "name": "Проживание, Ташкент",
    "measure": "сут",
    "quantity": 3,
    "amount": "150000000",
    "total_amount": "450000000",
    "total_vat_amount": "0",
    "vat_code": "VATNONE",
    "type": "service",
}


def uzs_contour(assistant: Assistant) -> None:
    assistant.contour.allowed_currencies = ["RUB", "UZS"]
    assistant.contour.approval_thresholds = {
        **assistant.contour.approval_thresholds,
        "UZS": 10_000_000_00,
    }
    assistant.contour.toolsets = ["read", "write", "refund"]
    assistant.contour.save()
    for currency, limit in (("RUB", 1_000_000_00), ("UZS", 100_000_000_00)):
        Ceiling.objects.create(
            contour=assistant.contour, kind=CeilingKind.PER_ORDER, currency=currency, limit=limit
        )


def test_an_order_in_sums_is_issued_shipped_refunded_and_read(
    assistant: Assistant, operator: Client
) -> None:
    uzs_contour(assistant)
    args = order_args(
        currency_id="UZS", basket_items=[UZS_LINE], amount="450000000", vat_amount="0"
    )

    _, first = assistant.call("create_order", args)
    status, done = assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )

    assert "4\u00a0500\u00a0000,00 сум" in first["message"], first["message"]
    assert (status, done["status"]) == (200, "ok"), done
    order_id = done["data"]["order_id"]
    assert SandboxOrder.objects.get(order_id=order_id).currency_id == "UZS"
    pay_order(order_id)
    _, read = assistant.call("get_order", {"order_id": order_id})
    assert (read["data"]["currency"], read["data"]["amount_human"]) == (
        "UZS",
        "4\u00a0500\u00a0000,00 сум",
    ), read
    _, shipped = two_phase(
        assistant,
        "create_shipment",
        {
            "order_id": order_id,
            "basket_items": [{**UZS_LINE, "quantity": 1, "total_amount": "150000000"}],
        },
    )
    assert shipped["status"] == "ok", shipped
    assert shipped["data"]["amount_human"] == "1\u00a0500\u00a0000,00 сум"
    refund_args = {
        "parent_order_id": order_id,
        "description": "отказ от ночи",
        "basket_items": [{"sku": "ROOM-TAS", "quantity": 1, "total_amount": "150000000"}],
    }
    _, refund_first = assistant.call("create_refund", refund_args)
    assert refund_first["status"] == "confirmation_required", refund_first
    assert "1\u00a0500\u00a0000,00 сум" in refund_first["message"]
    operator.post(f"/approvals/{refund_first['confirmation']['id']}/", {"decision": "approve"})
    _, refunded = assistant.call(
        "create_refund",
        {**refund_args, "confirmation_token": refund_first["confirmation"]["token"]},
    )
    assert refunded["status"] == "ok", refunded
    _, found = assistant.call("find_orders", {})
    assert [o["amount_human"] for o in found["data"]["orders"]].count(
        "4\u00a0500\u00a0000,00 сум"
    ) == 1, found


# The directory row as the docs define it (D dictionary/counterparty-detail.md, "Counterparty"),
# and the tool's name for each; `id` is the API's own and nothing takes it.
DIRECTORY_ROW = {
    "vatNumber": "inn",
    "taxRegistrationReasonCode": "kpp",
    "name": "name",
    "nameFull": "name_full",
    "nameI18n": "name_i18n",
    "registrationNumber": "registration_number",
    "registrationDate": "registration_date",
    "registrationAddress": "registration_address",
    "postAddress": "post_address",
    "postAddressZip": "post_address_zip",
}


def test_every_row_of_the_directory_and_every_documented_field(assistant: Assistant) -> None:
    raw = (
        Client()
        .get(
            "/sandbox/invoicebox/v3/filter/api/counterparty-detail",
            {"vatNumber": "7802123458"},
            HTTP_AUTHORIZATION="Bearer b37c4c689295904ed21eee5d9a48d42e",
        )
        .json()["data"]
    )

    status, found = assistant.call("lookup_company_by_inn", {"inn": "7802123458"})

    assert status == 200 and found["status"] == "ok", found
    data = found["data"]
    assert set(raw[0]) == {"id", *DIRECTORY_ROW}
    shown = [data, *data["other_rows"]]
    assert data["rows_total"] == len(raw) == len(shown) == 2
    for row, upstream in zip(shown, raw, strict=True):
        assert {ours: row[ours] for ours in DIRECTORY_ROW.values()} == {
            ours: upstream[theirs] for theirs, ours in DIRECTORY_ROW.items()
        }
    assert [row["kpp"] for row in shown] == ["780201001", "770245001"]
    assert data["name_i18n"] == "Vasilyok JSC"


def test_a_single_row_has_no_others_and_an_ip_no_kpp(assistant: Assistant) -> None:
    _, found = assistant.call("lookup_company_by_inn", {"inn": "500123456750"})

    assert found["data"]["other_rows"] == [] and found["data"]["rows_total"] == 1, found
    assert found["data"]["kpp"] is None
    assert found["data"]["post_address_zip"] == "142100"


def another_shops_shipment() -> None:
    foreign = SandboxOrder.objects.create(
        order_id=uuid.uuid4(),
        order_container_id=uuid.uuid4(),
        merchant_id=uuid.uuid4(),
        merchant_order_id="foreign-1",
        amount=122,
        vat_amount=22,
        currency_id="RUB",
        created_at=timezone.now(),
        expiration_date=timezone.now(),
        request_json="{}",
        status=SandboxOrder.Status.COMPLETED,
    )
    SandboxShipment.objects.create(
        order=foreign,
        merchant_id=foreign.merchant_id,
        status="completed",
        amount=122,
        vat_amount=22,
        created_at=timezone.now(),
        request_json=json.dumps({"orderId": str(foreign.order_id), "basketItems": []}),
    )


def shipped_order(assistant: Assistant, description: str) -> str:
    _, made = two_phase(assistant, "create_order", order_args(description=description))
    order_id = made["data"]["order_id"]
    pay_order(order_id)
    _, done = two_phase(
        assistant, "create_shipment", {"order_id": order_id, "basket_items": [SHIP_LINE]}
    )
    assert done["status"] == "ok", done
    return order_id


@pytest.mark.parametrize(
    "ignored", [["orderId", "merchantId"], []], ids=["leaky-filters", "filters-applied"]
)
def test_foreign_shipment_rows_are_counted_and_dropped(
    assistant: Assistant, settings: Any, ignored: list[str]
) -> None:
    # a token of several shops, on a shipment list that may not apply its filters
    settings.INVOICEBOX_SANDBOX_SHARED_TOKEN = True
    settings.INVOICEBOX_SANDBOX_IGNORED_SHIPMENT_FILTERS = ignored
    first, second = shipped_order(assistant, "Первый"), shipped_order(assistant, "Второй")
    another_shops_shipment()
    leaky = bool(ignored)

    _, by_order = assistant.call(
        "find_shipments", {"order_id": first, "response_format": "detailed"}
    )
    _, all_ours = assistant.call("find_shipments", {"response_format": "detailed"})
    # the remainder counts this order's shipments only: 366,00 − 122,00 left, not − 366,00
    _, preview = assistant.call(
        "create_shipment",
        {"order_id": first, "basket_items": [SHIP_LINE], "allow_duplicate": True},
    )

    assert by_order["status"] == "ok", by_order
    assert [s["order_id"] for s in by_order["data"]["shipments"]] == [first]
    assert by_order["data"]["dropped_foreign"] == (2 if leaky else 0)  # the shop's, the order's
    assert {s["order_id"] for s in all_ours["data"]["shipments"]} == {first, second}, all_ours
    assert all_ours["data"]["dropped_foreign"] == (1 if leaky else 0)
    assert all_ours["data"]["truncated"] is False
    merchant = str(assistant.contour.merchant_id)
    assert {s["merchant_id"] for s in all_ours["data"]["shipments"]} == {merchant}
    assert preview["data"]["summary"]["already_shipped"] == "12200", preview
