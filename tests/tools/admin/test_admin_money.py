"""The owners' admin takes thresholds and ceilings in roubles and kopecks and shows ₽; the
database keeps integer kopecks."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.conftest import Assistant
from tests.tools.admin.test_owner_admin import (
    change_url,
    contour_form,
)
from tools.models import Ceiling, CeilingKind

pytestmark = pytest.mark.django_db


def test_thresholds_and_ceilings_typed_in_roubles_are_stored_in_kopecks(
        owner: Client, assistant: Assistant):
    acme = assistant.contour

    response = owner.post(change_url(acme), contour_form(
        acme, approval_thresholds_RUB="1 500,5", approval_thresholds_USD="",
        **{"ceilings-TOTAL_FORMS": 2,
           "ceilings-0-kind": "per_order", "ceilings-0-currency": "RUB",
           "ceilings-0-limit": "250 000",
           "ceilings-1-kind": "per_hour", "ceilings-1-currency": "", "ceilings-1-limit": "20"}))

    assert response.status_code == 302, response.content.decode()[:3000]
    acme.refresh_from_db()
    assert acme.approval_thresholds == {"RUB": 150050}
    assert sorted(Ceiling.objects.values_list("kind", "limit")) == [
        ("per_hour", 20), ("per_order", 25_000_000)]


def test_the_change_page_shows_roubles_with_the_sign(owner: Client, assistant: Assistant):
    Ceiling.objects.create(contour=assistant.contour, kind=CeilingKind.PER_DAY, currency="RUB",
                           limit=12_345_67)

    page = owner.get(change_url(assistant.contour)).content.decode()

    assert 'name="approval_thresholds_RUB"' in page
    assert 'value="100\u00a0000,00"' in page  # the default 10 000 000 kopecks
    assert 'value="12\u00a0345,67"' in page
    assert "12\u00a0345,67 ₽" in page  # the inline's read-out
    assert '<span class="money-sign">₽</span>' in page


@pytest.mark.parametrize("typed", ["1,234", "-5", "сто рублей", "1e5"])
def test_amounts_that_are_not_roubles_are_refused(owner: Client, assistant: Assistant,
                                                  typed: str):
    response = owner.post(change_url(assistant.contour), contour_form(
        assistant.contour, approval_thresholds_RUB=typed))

    assert response.status_code == 200
    assert "сумма в рублях" in response.content.decode()
    assistant.contour.refresh_from_db()
    assert assistant.contour.approval_thresholds == {"RUB": 10_000_000}
