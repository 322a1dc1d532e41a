"""The catalog speaks the API as the vendor's sources show it (docs/invoicebox-api.md): OKEI
signs, full_prepayment, no promise for `final`, update_order, the expirationDate/paidAt filters."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from sandbox.api import pay_order
from sandbox.models import SandboxOrder
from tests.conftest import Assistant, order_args
from tools import catalog
from tools.models import TrackedOrder

pytestmark = pytest.mark.django_db

LINE = {
    "sku": "ROOM-STD",
    "name": "Бронирование номера",
    "quantity": 3,
    "amount": "12200",
    "total_amount": "36600",
    "total_vat_amount": "6600",
    "vat_code": "RUS_VAT22",
    "type": "service",
}


def two_phase(assistant: Assistant, name: str, args: dict[str, Any]) -> tuple[int, dict]:
    status, first = assistant.call(name, args)
    if first["status"] != "confirmation_required":
        return status, first
    return assistant.call(name, {**args, "confirmation_token": first["confirmation"]["token"]})


def sent_order(order_id: str) -> dict[str, Any]:
    """What the sandbox received for an order (its stored request)."""
    return json.loads(SandboxOrder.objects.get(order_id=order_id).request_json)


def new_order(assistant: Assistant, **changes: Any) -> str:
    _, body = two_phase(assistant, "create_order", order_args(**changes))
    assert body["status"] == "ok", body
    return body["data"]["order_id"]


# -- units ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unit", "sent"),
    [
        ({"measure": "шт."}, ("шт", "796")),  # the habitual dot is forgiven, never sent
        ({"measure": "шт"}, ("шт", "796")),
        ({"measure_code": "796"}, ("шт", "796")),
        ({"measure": "год"}, ("лет", "366")),  # "год" is the unit's name; its sign is "лет"
        ({"measure": "лист"}, ("л.", "625")),
        ({"measure_code": "625"}, ("л.", "625")),
        ({"measure": "л.", "measure_code": "112"}, ("л", "112")),
    ],
)
def test_units_go_upstream_as_okei_signs(assistant: Assistant, unit: dict, sent: tuple) -> None:
    order_id = new_order(assistant, basket_items=[{**LINE, **unit}])

    item = sent_order(order_id)["basketItems"][0]
    assert (item["measure"], item["measureCode"]) == sent


def test_l_dot_without_a_code_is_refused_as_ambiguous(assistant: Assistant) -> None:
    status, body = assistant.call(
        "create_order", order_args(basket_items=[{**LINE, "measure": "л."}])
    )

    assert (status, body["code"]) == (400, "invalid_arguments")
    assert "неоднозначна" in body["problems"][0]["message"]


def test_an_unknown_measure_code_is_a_problem_not_a_crash(assistant: Assistant) -> None:
    status, body = assistant.call(
        "create_order", order_args(basket_items=[{**LINE, "measure_code": "999"}])
    )

    assert (status, body["code"]) == (400, "invalid_arguments")
    assert "999" in body["problems"][0]["message"]


# -- paymentType ------------------------------------------------------------------------------


def test_lines_default_to_full_prepayment(assistant: Assistant) -> None:
    order_id = new_order(assistant, basket_items=[{**LINE, "measure": "шт"}])

    assert sent_order(order_id)["basketItems"][0]["paymentType"] == "full_prepayment"


def test_payment_type_default_is_explained_in_the_schema() -> None:
    item = catalog.get("create_order").params.model_json_schema()["$defs"]["BasketItemParams"]
    payment_type = item["properties"]["payment_type"]

    assert payment_type["default"] == "full_prepayment"
    assert "предоплат" in payment_type["description"] and "отгрузк" in payment_type["description"]


# -- shipment final ---------------------------------------------------------------------------


def test_no_tool_promises_what_no_source_guarantees_for_final(assistant: Assistant) -> None:
    order_id = new_order(assistant)
    pay_order(order_id, notify=False)

    _, first = assistant.call(
        "create_shipment",
        {"order_id": order_id, "final": True, "basket_items": [{**LINE, "measure": "шт"}]},
    )

    texts = [first["confirmation"]["summary"], json.dumps(first["data"], ensure_ascii=False)]
    for spec in catalog.CATALOG:
        texts += [
            spec.description_ru,
            spec.summary_ru,
            json.dumps(spec.params.model_json_schema(), ensure_ascii=False),
        ]
    assert first["status"] == "confirmation_required", first
    assert not [t for t in texts if "резерв" in t or "разблокир" in t]
    assert "не описывает" in first["data"]["summary"]["final_note"]


def test_document_number_longer_than_36_is_refused_before_upstream(assistant: Assistant) -> None:
    order_id = new_order(assistant)
    pay_order(order_id, notify=False)

    status, body = assistant.call(
        "create_shipment",
        {
            "order_id": order_id,
            "document_number": "N" * 37,
            "basket_items": [{**LINE, "measure": "шт"}],
        },
    )

    assert (status, body["code"]) == (400, "invalid_arguments")
    assert body["problems"][0]["field"] == "document_number"


# -- update_order -----------------------------------------------------------------------------

NEW_BASKET = [
    {**LINE, "measure": "шт", "quantity": 2, "total_amount": "24400", "total_vat_amount": "4400"}
]


def test_update_order_changes_an_unpaid_order_in_two_phases(assistant: Assistant) -> None:
    order_id = new_order(assistant)
    args = {
        "order_id": order_id,
        "description": "Бронирование номера, 2 ночи",
        "basket_items": NEW_BASKET,
        "amount": "24400",
        "vat_amount": "4400",
    }

    _, first = assistant.call("update_order", args)
    untouched = sent_order(order_id)
    status, done = assistant.call(
        "update_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )

    assert first["status"] == "confirmation_required", first
    assert "366,00 ₽ → 244,00 ₽" in first["confirmation"]["summary"]
    assert untouched["amount"] == 366 and untouched["description"] == "Бронирование номера, 3 ночи"
    assert (status, done["status"]) == (200, "ok"), done
    assert (done["data"]["amount"], done["data"]["description"]) == (
        "24400",
        "Бронирование номера, 2 ночи",
    )
    stored = sent_order(order_id)
    assert (stored["amount"], stored["basketItems"][0]["quantity"]) == (244, 2)
    # Notifications compare the paid amount with the tracked one: it follows the update.
    assert TrackedOrder.objects.get(order_id=order_id).amount == 24400


def test_update_order_extends_the_expiration_alone(assistant: Assistant) -> None:
    order_id = new_order(assistant)
    later = (timezone.now() + timedelta(days=30)).replace(microsecond=0)

    status, done = two_phase(
        assistant, "update_order", {"order_id": order_id, "expiration_date": later.isoformat()}
    )

    assert (status, done["status"]) == (200, "ok"), done
    row = SandboxOrder.objects.get(order_id=order_id)
    assert row.expiration_date == later
    assert row.amount == 366


def test_update_order_refuses_a_paid_order_and_sends_nothing(assistant: Assistant) -> None:
    order_id = new_order(assistant)
    pay_order(order_id, notify=False)
    before = sent_order(order_id)

    status, body = assistant.call("update_order", {"order_id": order_id, "description": "x"})

    assert (status, body["code"]) == (422, "precondition_failed")
    assert "create_refund" in body["hint"]
    assert sent_order(order_id) == before


def test_update_order_refuses_a_paid_order_at_execution(assistant: Assistant) -> None:
    order_id = new_order(assistant)
    args = {"order_id": order_id, "description": "Новое назначение"}
    _, first = assistant.call("update_order", args)
    pay_order(order_id, notify=False)

    status, body = assistant.call(
        "update_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )

    assert (status, body["code"]) == (422, "precondition_failed")
    assert sent_order(order_id)["description"] == "Бронирование номера, 3 ночи"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({}, "order_id"),
        ({"amount": "100"}, "amount"),
        ({"basket_items": NEW_BASKET}, "amount"),
        ({"expiration_date": "2000-01-01T00:00:00+03:00"}, "expiration_date"),
    ],
)
def test_update_order_refuses_incomplete_changes(
    assistant: Assistant, args: dict, field: str
) -> None:
    order_id = new_order(assistant)

    status, body = assistant.call("update_order", {"order_id": order_id, **args})

    assert (status, body["code"]) == (400, "invalid_arguments")
    assert field in [problem["field"] for problem in body["problems"]]


def test_update_order_reconciles_the_new_basket(assistant: Assistant) -> None:
    order_id = new_order(assistant)

    status, body = assistant.call(
        "update_order",
        {"order_id": order_id, "basket_items": NEW_BASKET, "amount": "36600", "vat_amount": "4400"},
    )

    assert (status, body["code"]) == (400, "invalid_arguments")
    assert sent_order(order_id)["amount"] == 366


def test_update_order_needs_the_write_toolset(reader: Assistant) -> None:
    status, body = reader.call(
        "update_order", {"order_id": "017f038f-c78b-736d-dc00-8bce30bd0f9f", "description": "x"}
    )

    assert (status, body["code"]) == (403, "forbidden"), body


# -- find_orders: expirationDate and paidAt ---------------------------------------------------


def test_find_orders_filters_by_expiration_and_payment(assistant: Assistant) -> None:
    soon = new_order(assistant, expiration_date=(timezone.now() + timedelta(days=2)).isoformat())
    late = new_order(assistant, expiration_date=(timezone.now() + timedelta(days=20)).isoformat())
    pay_order(late, notify=False)
    week = (timezone.now() + timedelta(days=7)).replace(microsecond=0).isoformat()
    hour_ago = (timezone.now() - timedelta(hours=1)).replace(microsecond=0).isoformat()

    _, expiring = assistant.call("find_orders", {"expiration_to": week})
    _, paid = assistant.call("find_orders", {"paid_from": hour_ago})
    _, later = assistant.call("find_orders", {"expiration_from": week})

    assert [o["order_id"] for o in expiring["data"]["orders"]] == [soon], expiring
    assert [o["order_id"] for o in paid["data"]["orders"]] == [late]
    assert [o["order_id"] for o in later["data"]["orders"]] == [late]


def test_find_orders_refuses_an_empty_payment_interval(assistant: Assistant) -> None:
    status, body = assistant.call(
        "find_orders",
        {"paid_from": "2026-02-01T00:00:00+03:00", "paid_to": "2026-01-01T00:00:00+03:00"},
    )

    assert (status, body["problems"][0]["field"]) == (400, "paid_from")
    assert "пустой интервал" in body["problems"][0]["message"]
