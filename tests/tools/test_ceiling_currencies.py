"""A currency off the contour's list is refused, and so is an allowed currency without a ceiling
when others have one: a currency never goes without a ceiling by omission."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.conftest import order_args, sandbox_orders
from tools.models import Ceiling, CeilingKind, Contour
from tools.pipeline import gateway

pytestmark = pytest.mark.django_db


def test_a_currency_off_the_contour_list_is_refused(contour: Contour):
    outcome = gateway.call(
        contour, "create_order", order_args(currency_id="EUR"), channel="rest", actor="t"
    )

    assert outcome.code == "currency_not_allowed"
    assert "EUR" in outcome.message and "RUB" in outcome.message
    assert outcome.confirmation is None


def test_an_allowed_currency_without_a_ceiling_is_refused_when_others_have_one(
    contour: Contour, client: Client
):
    # given: RUB ceilings, EUR allowed but without any
    contour.allowed_currencies = ["RUB", "EUR"]
    contour.save()
    Ceiling.objects.create(
        contour=contour, kind=CeilingKind.PER_ORDER, currency="RUB", limit=100_000_00
    )
    Ceiling.objects.create(
        contour=contour, kind=CeilingKind.PER_DAY, currency="RUB", limit=500_000_00
    )

    # when
    huge = order_args(currency_id="EUR", amount="999999999999", vat_amount="0")
    for item in huge["basket_items"]:
        item.update(
            amount="333333333333",
            total_amount="999999999999",
            total_vat_amount="0",
            vat_code="VATNONE",
        )
    outcome = gateway.call(contour, "create_order", huge, channel="rest", actor="t")
    euros = gateway.call(
        contour, "create_order", order_args(currency_id="EUR"), channel="rest", actor="t"
    )

    # then
    assert outcome.code in {"currency_not_allowed", "invalid_arguments"}, outcome.message
    assert euros.code == "currency_not_allowed", euros.message
    assert "нет потолка" in euros.message
    assert sandbox_orders(client) == []


def test_a_currency_with_its_own_ceiling_passes(contour: Contour):
    contour.allowed_currencies = ["RUB", "EUR"]
    contour.save()
    for currency in ("RUB", "EUR"):
        Ceiling.objects.create(
            contour=contour, kind=CeilingKind.PER_ORDER, currency=currency, limit=100_000_00
        )

    outcome = gateway.call(
        contour, "create_order", order_args(currency_id="EUR"), channel="rest", actor="t"
    )

    assert outcome.status == "confirmation_required", outcome.message
