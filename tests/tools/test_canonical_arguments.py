"""Digits written other ways (leading zeros, full-width, Arabic-Indic, signs and spaces) are
refused, not read past the duplicate protection; identical orders spelled differently are one;
enum values in another case or with lookalike letters are refused."""

from __future__ import annotations

import pytest

from tests.conftest import order_args
from tools.models import Contour
from tools.pipeline import gateway

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("amount", ["036600", "３６６００", "٣٦٦٠٠", "۳۶۶۰۰", " 36600", "+36600"])
def test_money_written_any_other_way_is_refused(contour: Contour, amount: str):
    args = order_args(amount=amount)

    outcome = gateway.call(contour, "create_order", args, channel="rest", actor="t")

    assert outcome.code == "invalid_arguments"
    assert any(p.field == "amount" for p in outcome.problems), outcome.problems


@pytest.mark.parametrize("inn", ["７７１００４４１４０", "7710044140 ", " 7710044140"])
def test_an_inn_with_other_digits_or_spaces_is_refused(contour: Contour, inn: str):
    args = order_args()
    args["customer"] = {**args["customer"], "vat_number": inn}

    outcome = gateway.call(contour, "create_order", args, channel="rest", actor="t")

    assert outcome.code == "invalid_arguments"


def test_identical_orders_spelled_differently_get_one_confirmation(contour: Contour):
    # given: the same order, its UUID-free text once in NFC and once decomposed
    composed = order_args(description="Бронирование номера, 3 ночи, Йошкар-Ола")
    decomposed = order_args(
        description="Бронирование номера, 3 ночи, Йошкар-Ола".replace("Й", "И\u0306")
    )

    first = gateway.call(contour, "create_order", composed, channel="rest", actor="t")
    second = gateway.call(contour, "create_order", decomposed, channel="rest", actor="t")

    assert first.confirmation["id"] == second.confirmation["id"]


def test_enum_values_in_another_case_or_lookalike_letters_are_refused(contour: Contour):
    for changes in ({"currency_id": "rub"}, {"currency_id": "RUВ"}):  # the last has Cyrillic В
        outcome = gateway.call(
            contour, "create_order", order_args(**changes), channel="rest", actor="t"
        )
        assert outcome.code == "invalid_arguments", changes
