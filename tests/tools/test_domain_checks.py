"""Each domain check of create_order rejects with the field path, before anything goes upstream."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.conftest import Assistant, order_args, sandbox_orders

pytestmark = pytest.mark.django_db


def item(args: dict[str, Any], **changes: Any) -> dict[str, Any]:
    args["basket_items"][0].update(changes)
    return args


def drop(args: dict[str, Any], *names: str) -> dict[str, Any]:
    for name in names:
        args["basket_items"][0].pop(name, None)
    return args


def customer(args: dict[str, Any], **changes: Any) -> dict[str, Any]:
    args["customer"].update(changes)
    return args


CASES: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]], str]] = [
    (
        "line total is not price x quantity",
        lambda a: item(a, total_amount="36500"),
        "basket_items[0].total_amount",
    ),
    (
        "VAT does not match the VAT code",
        lambda a: item(a, vat_code="RUS_VAT20"),
        "basket_items[0].total_vat_amount",
    ),
    (
        "VAT above the line total",
        lambda a: item(a, total_vat_amount="40000"),
        "basket_items[0].total_vat_amount",
    ),
    (
        "unit price without VAT does not add up",
        lambda a: item(a, amount_wo_vat="9000"),
        "basket_items[0].amount_wo_vat",
    ),
    ("order amount is not the sum of lines", lambda a: {**a, "amount": "36700"}, "amount"),
    ("order VAT is not the sum of line VAT", lambda a: {**a, "vat_amount": "6000"}, "vat_amount"),
    (
        "measure contradicts measure_code",
        lambda a: item(a, measure="кг", measure_code="796"),
        "basket_items[0].measure",
    ),
    ("measure not in OKEI", lambda a: item(a, measure="ящик"), "basket_items[0].measure"),
    ("no unit at all", lambda a: drop(a, "measure"), "basket_items[0].measure"),
    (
        "measure_code not a code",
        lambda a: item(a, measure_code="79"),
        "basket_items[0].measure_code",
    ),
    ("INN checksum", lambda a: customer(a, vat_number="7710044141"), "customer.vat_number"),
    ("INN length", lambda a: customer(a, vat_number="77100441"), "customer.vat_number"),
    (
        "KPP with a 12-digit INN (ИП)",
        lambda a: customer(a, vat_number="500123456750"),
        "customer.tax_registration_reason_code",
    ),
    (
        "KPP for a private person",
        lambda a: customer(a, type="private"),
        "customer.tax_registration_reason_code",
    ),
    (
        "KPP format",
        lambda a: customer(a, tax_registration_reason_code="77020"),
        "customer.tax_registration_reason_code",
    ),
    (
        "expiration in the past",
        lambda a: {**a, "expiration_date": (timezone.now() - timedelta(hours=1)).isoformat()},
        "expiration_date",
    ),
    (
        "expiration without a time zone",
        lambda a: {**a, "expiration_date": "2030-01-01T00:00:00"},
        "expiration_date",
    ),
    ("amount as a number, not a kopeck string", lambda a: {**a, "amount": 36600}, "amount"),
    ("amount with a decimal point", lambda a: {**a, "amount": "366.00"}, "amount"),
    (
        "quantity as a string is not coerced",
        lambda a: item(a, quantity="3"),
        "basket_items[0].quantity",
    ),
    ("zero quantity", lambda a: item(a, quantity=0), "basket_items[0].quantity"),
    (
        "currency is required, never defaulted",
        lambda a: {k: v for k, v in a.items() if k != "currency_id"},
        "currency_id",
    ),
    ("currency outside the list", lambda a: {**a, "currency_id": "rub"}, "currency_id"),
    ("empty basket", lambda a: {**a, "basket_items": []}, "basket_items"),
    (
        "duplicate SKU",
        lambda a: {
            **a,
            "basket_items": a["basket_items"] * 2,
            "amount": "73200",
            "vat_amount": "13200",
        },
        "basket_items[1].sku",
    ),
    ("plain http URL", lambda a: {**a, "success_url": "http://shop.example/ok"}, "success_url"),
    (
        "URL on invoicebox.ru",
        lambda a: {**a, "fail_url": "https://pay.invoicebox.ru/x"},
        "fail_url",
    ),
    (
        "confirm_amount differs from amount",
        lambda a: {**a, "confirm_amount": "100"},
        "confirm_amount",
    ),
]


@pytest.mark.parametrize(("case", "mutate", "field"), CASES, ids=[c[0] for c in CASES])
def test_domain_check_rejects_with_field_path(
    assistant: Assistant, case: str, mutate: Callable, field: str
):
    status, body = assistant.call("create_order", mutate(order_args()))

    assert status == 400, body
    assert body["code"] == "invalid_arguments"
    assert field in [p["field"] for p in body["problems"]], body["problems"]
    assert all(p["message"] for p in body["problems"])
    assert "confirmation" not in body
    assert sandbox_orders(assistant.http) == []


def test_measure_code_alone_is_enough_and_fills_the_name(assistant: Assistant):
    args = drop(order_args(), "measure")
    args["basket_items"][0]["measure_code"] = "796"

    _, body = assistant.call("create_order", args)

    assert body["status"] == "confirmation_required", body
    assert "3 шт " in body["confirmation"]["summary"]


def test_ip_customer_without_kpp_passes(assistant: Assistant):
    args = customer(order_args(), vat_number="500123456750", name="ИП Иванов И. И.")
    args["customer"].pop("tax_registration_reason_code")

    _, body = assistant.call("create_order", args)

    assert body["status"] == "confirmation_required", body


def test_missing_inn_is_a_warning_not_a_refusal(assistant: Assistant):
    args = order_args()
    args["customer"].pop("vat_number")
    args["customer"].pop("tax_registration_reason_code")

    _, body = assistant.call("create_order", args)

    assert body["status"] == "confirmation_required"
    assert any("ИНН" in w for w in body["data"]["warnings"])
