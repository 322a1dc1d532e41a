"""The owners' admin takes thresholds and ceilings in roubles and kopecks and shows ₽ on every
list and record a person reads; the database keeps integer kopecks."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.conftest import Assistant, order_args
from tests.tools.admin.test_owner_admin import (
    change_url,
    contour_form,
)
from tools.models import Ceiling, CeilingKind, Operation

pytestmark = pytest.mark.django_db


def test_thresholds_and_ceilings_typed_in_roubles_are_stored_in_kopecks(
    owner: Client, assistant: Assistant
):
    acme = assistant.contour

    response = owner.post(
        change_url(acme),
        contour_form(
            acme,
            approval_thresholds_RUB="1 500,5",
            approval_thresholds_USD="",
            **{
                "ceilings-TOTAL_FORMS": 2,
                "ceilings-0-kind": "per_order",
                "ceilings-0-currency": "RUB",
                "ceilings-0-limit": "250 000",
                "ceilings-1-kind": "per_hour",
                "ceilings-1-currency": "",
                "ceilings-1-limit": "20",
            },
        ),
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    acme.refresh_from_db()
    assert acme.approval_thresholds == {"RUB": 150050}
    assert sorted(Ceiling.objects.values_list("kind", "limit")) == [
        ("per_hour", 20),
        ("per_order", 25_000_000),
    ]


def test_the_change_page_shows_roubles_with_the_sign(owner: Client, assistant: Assistant):
    Ceiling.objects.create(
        contour=assistant.contour, kind=CeilingKind.PER_DAY, currency="RUB", limit=12_345_67
    )

    page = owner.get(change_url(assistant.contour)).content.decode()

    assert 'name="approval_thresholds_RUB"' in page
    assert 'value="100\u00a0000,00"' in page  # the default 10 000 000 kopecks
    assert 'value="12\u00a0345,67"' in page
    assert "12\u00a0345,67 ₽" in page  # the inline's read-out
    assert '<span class="money-sign">₽</span>' in page


@pytest.mark.parametrize("typed", ["1,234", "-5", "сто рублей", "1e5"])
def test_amounts_that_are_not_roubles_are_refused(owner: Client, assistant: Assistant, typed: str):
    response = owner.post(
        change_url(assistant.contour),
        contour_form(assistant.contour, approval_thresholds_RUB=typed),
    )

    assert response.status_code == 200
    assert "сумма в рублях" in response.content.decode()
    assistant.contour.refresh_from_db()
    assert assistant.contour.approval_thresholds == {"RUB": 10_000_000}


def made_order(assistant: Assistant) -> None:
    """One invoice of 366,00 ₽ made through the wire, as an assistant makes it."""
    arguments = order_args()  # once: its expiration date is "now", to the second
    _, first = assistant.call("create_order", arguments)
    token = first["confirmation"]["token"]
    status, made = assistant.call("create_order", {**arguments, "confirmation_token": token})
    assert (status, made["status"]) == (200, "ok"), made


def test_operations_and_confirmations_read_in_roubles_not_kopecks(
    owner: Client, assistant: Assistant
):
    made_order(assistant)
    operation = Operation.objects.get()

    pages = {
        url: owner.get(url).content.decode()
        for url in (
            "/admin/tools/operation/",
            f"/admin/tools/operation/{operation.pk}/change/",
            "/admin/tools/pendingconfirmation/",
            f"/admin/tools/pendingconfirmation/{operation.confirmation_id}/change/",
        )
    }

    # (the stored result, JSON for programs, keeps its kopecks beside amount_human)
    for url, page in pages.items():
        assert re.search(r">\s*366,00 ₽\s*<", page), url
        assert not re.search(r">\s*36600\s*<", page), url
        assert "копейки" not in page, url


def test_no_operator_needed_is_said_plainly_not_with_a_red_cross(
    owner: Client, assistant: Assistant
):
    made_order(assistant)

    page = owner.get("/admin/tools/pendingconfirmation/").content.decode()

    assert "icon-no.svg" not in page


def test_the_form_says_roubles_here_and_kopecks_elsewhere(owner: Client, assistant: Assistant):
    page = owner.get(change_url(assistant.contour)).content.decode()

    # the thresholds' help, the ceilings' (and the blank ceiling row's template)
    assert page.count("API, команды и настройки принимают копейки") >= 2
