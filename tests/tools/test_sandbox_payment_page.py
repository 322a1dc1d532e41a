"""The sandbox payer's page behind paymentUrl: Russian amounts and statuses, a pay button that
pays (and notifies) like the real page; a wrong sandbox address answered in Russian."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from django.http import HttpResponse
from django.test import Client

from sandbox.models import SandboxOrder
from tests.conftest import Assistant, order_args

pytestmark = pytest.mark.django_db


def issued_order(assistant: Assistant, **changes: str) -> dict:
    args = order_args(**changes)
    _, first = assistant.call("create_order", args)
    status, done = assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )
    assert status == 200, done
    return done["data"]


def press_pay(payer: Client, path: str, order_id: str) -> HttpResponse:
    """What the page's form sends: an urlencoded body, as a browser posts it."""
    return payer.post(
        path, urlencode({"order": order_id}), content_type="application/x-www-form-urlencoded"
    )


def test_the_payment_page_shows_roubles_with_a_comma_a_russian_status_and_pays(
    assistant: Assistant,
) -> None:
    # given
    order = issued_order(assistant)
    page_path = order["payment_url"].split("127.0.0.1:8000", 1)[-1]
    payer = Client()

    # when the payer opens the page
    page = payer.get(page_path).content.decode()

    # then
    assert "366,00\u00a0₽" in page and "366.00" not in page
    assert "ожидает оплаты" in page and "created" not in page
    assert ">Оплатить</button>" in page

    # when the payer presses the button
    paid = press_pay(payer, page_path, order["order_id"])

    # then the order is paid and the page says so, without a button
    assert paid.status_code == 303
    assert SandboxOrder.objects.get(order_id=order["order_id"]).status == "completed"
    after = payer.get(page_path).content.decode()
    assert "оплачен" in after and "Оплатить</button>" not in after


def test_a_button_for_an_order_of_another_page_pays_nothing(assistant: Assistant) -> None:
    first = issued_order(assistant)
    second = issued_order(assistant, description="Бронирование номера, 2 ночи")
    page_path = first["payment_url"].split("127.0.0.1:8000", 1)[-1]

    refused = press_pay(Client(), page_path, second["order_id"])

    assert refused.status_code == 400
    assert SandboxOrder.objects.get(order_id=second["order_id"]).status == "created"


def test_a_wrong_sandbox_address_is_answered_in_russian() -> None:
    response = Client().get("/sandbox/invoicebox/")

    body = json.loads(response.content)
    assert response.status_code == 404 and body["error"]["code"] == "not_found"
    assert body["error"]["message"].startswith("В песочнице Инвойсбокс нет такого адреса")


def test_the_sandbox_root_opened_in_a_browser_is_a_page_not_escaped_json() -> None:
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

    response = Client().get("/sandbox/invoicebox/", HTTP_ACCEPT=browser)

    page = response.content.decode()
    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert "<h1>Песочница Инвойсбокс</h1>" in page and "\\u04" not in page
