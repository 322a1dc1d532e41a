"""Every documented OKEI unit, and the vendor's own signs, from one table (issue 40.4): the
gateway accepts each (sign or code) and sends the table's pair, the sandbox takes them, and a
quantity has no cap the docs don't give."""

from __future__ import annotations

import json
from typing import Any

import pytest

from invoicebox.okei import UNITS
from sandbox.models import SandboxOrder
from tests.conftest import Assistant, order_args
from tests.tools.test_more_tools import two_phase

pytestmark = pytest.mark.django_db


def line(n: int, **unit: Any) -> dict[str, Any]:
    return {
        "sku": f"U{n}",
        "name": f"Позиция {n}",
        "quantity": 1,
        "amount": "100",
        "total_amount": "100",
        "total_vat_amount": "0",
        "vat_code": "VATNONE",
        **unit,
    }


def sent_pairs(assistant: Assistant, items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    total = str(sum(int(i["total_amount"]) for i in items))
    _, done = two_phase(
        assistant,
        "create_order",
        order_args(
            description=f"Единицы {len(items)}", basket_items=items, amount=total, vat_amount="0"
        ),
    )
    assert done["status"] == "ok", done
    body = json.loads(SandboxOrder.objects.get(order_id=done["data"]["order_id"]).request_json)
    return [(i["measure"], i["measureCode"]) for i in body["basketItems"]]


def test_every_unit_of_the_table_is_accepted_by_its_code_and_sent_as_its_pair(assistant: Assistant):
    assert len({u.code for u in UNITS}) == 55  # the docs' 45 rows and 10 Rosstat codes
    items = [line(n, measure_code=u.code) for n, u in enumerate(UNITS)]

    assert sent_pairs(assistant, items) == [(u.sign, u.code) for u in UNITS]


@pytest.mark.parametrize(
    ("typed", "pair"),
    [
        ("пог. м", ("пог. м", "018")),
        ("рул", ("рул", "736")),
        ("год", ("лет", "366")),
        ("компл", ("компл", "839")),
        ("шт.", ("шт", "796")),
        ("Мм", ("Мм", "009")),
        ("мм", ("мм", "003")),
        ("м3", ("м3", "113")),
    ],
)
def test_signs_the_docs_and_the_vendor_use_are_read(
    assistant: Assistant, typed: str, pair: tuple[str, str]
):
    assert sent_pairs(assistant, [line(1, measure=typed)]) == [pair]


def test_a_lowercased_capital_sign_is_not_guessed(assistant: Assistant):
    # «мл» is not Мл (megalitre): refused, not read as a million litres.
    status, body = assistant.call(
        "create_order",
        order_args(basket_items=[line(1, measure="мл")], amount="100", vat_amount="0"),
    )

    assert (status, body["code"]) == (400, "invalid_arguments"), body


def test_a_quantity_above_a_million_is_not_capped(assistant: Assistant):
    sms = line(1, measure="шт", quantity=2_000_000, amount="1", total_amount="2000000")

    assert sent_pairs(assistant, [sms]) == [("шт", "796")]
