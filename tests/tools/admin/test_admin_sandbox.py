"""A sandbox contour added in the admin without a token gets a sandbox merchant of its own:
what another contour issued stays invisible to it."""

from __future__ import annotations

import pytest
from django.test import Client

from audit.actors import SCAFFOLDING
from tests.conftest import Assistant, order_args
from tests.tools.admin.test_owner_admin import (
    thresholds_form,
)
from tools.contours.services import DEMO_TOKEN
from tools.keys.services import issue_key
from tools.models import Contour

pytestmark = pytest.mark.django_db


def new_sandbox_form(slug: str) -> dict[str, object]:
    return {
        "slug": slug,
        "name": "Проверка",
        "mode": "sandbox",
        "base_url": "http://127.0.0.1:8000/sandbox/invoicebox",
        "api_prefix": "v3",
        "merchant_id": "",
        "api_token": "",
        "toolsets": ["read"],
        "confirmation_ttl_seconds": 900,
        "approval_window_hours": 24,
        "dedup_window_seconds": 600,
        **thresholds_form({"RUB": 10000000}),
        "allowed_currencies": ["RUB"],
        "time_zone": "Europe/Moscow",
        "key_grace_hours": 24,
        "_save": "Сохранить",
        **{
            f"{p}-{k}": v
            for p in ("ceilings", "api_keys", "roles")
            for k, v in (
                ("TOTAL_FORMS", 0),
                ("INITIAL_FORMS", 0),
                ("MIN_NUM_FORMS", 0),
                ("MAX_NUM_FORMS", 1000),
            )
        },
    }


def test_a_new_sandbox_contour_without_a_token_gets_its_own_merchant(
    owner: Client, assistant: Assistant
):
    # given: the demo-shop contour issued an order
    args = order_args()
    token = assistant.call("create_order", args)[1]["confirmation"]["token"]
    assert assistant.call("create_order", {**args, "confirmation_token": token})[0] == 200

    # when: an owner adds a sandbox contour, leaving token and merchant empty
    response = owner.post("/admin/tools/contour/add/", new_sandbox_form("isolated"))

    # then
    assert response.status_code == 302, response.content.decode()[:3000]
    isolated = Contour.objects.get(slug="isolated")
    assert isolated.api_token.startswith("sbx_") and isolated.api_token != DEMO_TOKEN
    assert isolated.merchant_id != assistant.contour.merchant_id
    other = Assistant(http=Client(), key=issue_key(isolated, actor=SCAFFOLDING), contour=isolated)
    status, body = other.call("find_orders", {})
    assert (status, body["data"]["orders"]) == (200, [])
    assert assistant.call("find_orders", {})[1]["data"]["orders"]


def test_a_new_demo_contour_still_needs_its_token(owner: Client, assistant: Assistant):
    form = {**new_sandbox_form("demo2"), "mode": "demo", "base_url": "https://api.invoicebox.ru"}

    response = owner.post("/admin/tools/contour/add/", form)

    assert response.status_code == 200
    assert "для нового контура нужен токен" in response.content.decode()
    assert not Contour.objects.filter(slug="demo2").exists()
