"""Issue 40, "done when": one confirmed shipment never makes two, under every sandbox switch and a
lost answer. Each switch (alone, and with the documented-only answer, the hardest for recovery)
runs the real path: a confirmed create_shipment whose answer the sandbox drops after storing
the shipment, then the caller's retry or the sweep; upstream there is exactly one shipment."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from sandbox.api import DEMO_TOKEN, clear_faults, pay_order, set_faults
from sandbox.models import SandboxShipment
from tests.conftest import Assistant, order_args
from tests.tools.test_capabilities import another_shops_shipment
from tests.tools.test_more_tools import SHIP_LINE, two_phase
from tests.tools.test_ordinary_invoices import SWITCHES as BASKET_SWITCHES
from tests.tools.test_shipment_recovery import age_operations
from tools.models import Operation
from tools.pipeline import sweep

pytestmark = pytest.mark.django_db

# Every sandbox switch, one setting each beyond its default: the basket rules (shared with the
# ordinary-invoice corpus), the list rules, and the repeated-rows fault on shipment lists.
LIST_SWITCHES: dict[str, dict[str, Any]] = {
    "paging-docs": {"INVOICEBOX_SANDBOX_PAGING": "docs"},
    "paging-vendor": {"INVOICEBOX_SANDBOX_PAGING": "vendor"},
    "paging-none": {"INVOICEBOX_SANDBOX_PAGING": "none"},
    "repeat-shipment-rows": {"INVOICEBOX_SANDBOX_REPEAT_ROWS": ["shipments"]},
    # the shipment list takes orderId (and merchantId) and applies neither: a leaky filter
    "leaky-order-filter": {"INVOICEBOX_SANDBOX_IGNORED_SHIPMENT_FILTERS": ["orderId"]},
    "shared-token+leaky-filters": {
        "INVOICEBOX_SANDBOX_SHARED_TOKEN": True,
        "INVOICEBOX_SANDBOX_IGNORED_SHIPMENT_FILTERS": ["orderId", "merchantId"],
    },
    # a token of several shops whose API also drops unknown keys: only merchantId narrows
    "shared-token+unknown-query-ignored": {
        "INVOICEBOX_SANDBOX_SHARED_TOKEN": True,
        "INVOICEBOX_SANDBOX_UNKNOWN_QUERY": "ignore",
    },
}
SINGLE = {**BASKET_SWITCHES, **LIST_SWITCHES}
DOCUMENTED = {"INVOICEBOX_SANDBOX_DOCUMENTED_ONLY": True}
CONFIGS: dict[str, dict[str, Any]] = {
    **SINGLE,
    **{
        f"{name}+documented-only": {**switches, **DOCUMENTED}
        for name, switches in SINGLE.items()
        if switches != DOCUMENTED
    },
}
# Settings that configure the sandbox rather than switch a rule of the API it models.
NOT_SWITCHES = {
    "INVOICEBOX_SANDBOX_IN_PROCESS",
    "INVOICEBOX_SANDBOX_IN_PROCESS_URLS",
    "INVOICEBOX_SANDBOX_BASE_URL",
    "INVOICEBOX_SANDBOX_NOTIFICATION_KEY",
    "INVOICEBOX_SANDBOX_TOKENS",
}

# 0,75 kg at 1 333,33 ₽: price × quantity is not whole kopecks, so the order states its
# rounding and its shipment must pass under the strict and none defaults too.
COFFEE = {
    "sku": "C",
    "name": "Кофе",
    "measure": "кг",
    "quantity": 0.75,
    "amount": "133333",
    "total_amount": "100000",
    "total_vat_amount": "18033",
    "vat_code": "RUS_VAT22",
    "type": "commodity",
}
BASKETS = {"whole": SHIP_LINE, "rounded": COFFEE}


def declared_switches() -> set[str]:
    """The sandbox switches config/settings/invoicebox.py declares."""
    source = (Path(django_settings.BASE_DIR) / "config/settings/invoicebox.py").read_text()
    return set(re.findall(r"^(INVOICEBOX_SANDBOX_\w+) =", source, re.M)) - NOT_SWITCHES


# Switches of the sandbox's notifications, which a shipment never sends.
NOT_ABOUT_SHIPMENTS = {"INVOICEBOX_SANDBOX_NOTIFICATION_RETRY_SECONDS"}


def test_every_sandbox_switch_is_exercised() -> None:
    used = {name for switches in CONFIGS.values() for name in switches}
    assert declared_switches() - NOT_ABOUT_SHIPMENTS == used


@pytest.fixture(params=sorted(CONFIGS))
def config(request: pytest.FixtureRequest, settings: Any, tmp_path: Path) -> str:
    settings.INVOICEBOX_TIMEOUT_SECONDS = 0.3
    settings.GATEWAY_STATE_DIR = str(tmp_path)
    for name, value in CONFIGS[request.param].items():
        setattr(settings, name, value)
    if settings.INVOICEBOX_SANDBOX_SHARED_TOKEN:
        # an unnumbered shipment of the same sum that only a token of several shops sees: a
        # recovery that took it for ours would answer a wrong shipment
        another_shops_shipment()
    return request.param


def confirmed_shipment(assistant: Assistant, line: dict[str, Any]) -> dict[str, Any]:
    _, order = two_phase(
        assistant,
        "create_order",
        order_args(
            basket_items=[line],
            amount=line["total_amount"],
            vat_amount=line["total_vat_amount"],
        ),
    )
    assert order["status"] == "ok", order
    pay_order(order["data"]["order_id"])
    args = {"order_id": order["data"]["order_id"], "basket_items": [line]}
    _, first = assistant.call("create_shipment", args)
    assert first["status"] == "confirmation_required", first
    return {**args, "confirmation_token": first["confirmation"]["token"]}


@pytest.mark.parametrize(
    ("path", "basket"), [("caller", "whole"), ("caller", "rounded"), ("sweep", "whole")]
)
def test_a_lost_shipment_answer_never_ships_twice(
    assistant: Assistant, config: str, path: str, basket: str, settings: Any
) -> None:
    confirmed = confirmed_shipment(assistant, BASKETS[basket])
    foreign = SandboxShipment.objects.count()  # another shop's, under a shared token
    set_faults(DEMO_TOKEN, drop_response_after_create=True)
    _, lost = assistant.call("create_shipment", confirmed)
    clear_faults(DEMO_TOKEN)
    assert lost["code"] == "outcome_unknown", lost
    assert SandboxShipment.objects.count() == foreign + 1
    age_operations()  # past the stale period: absence would now mean "send again"
    repeats = "shipments" in settings.INVOICEBOX_SANDBOX_REPEAT_ROWS

    if path == "sweep":
        swept = sweep.resolve_operations()
        assert swept == ({"lookup_failed": 1} if repeats else {"found": 1}), swept
    _, retried = assistant.call("create_shipment", confirmed)

    assert SandboxShipment.objects.count() == foreign + 1, retried
    if repeats:
        # A list with a row twice is no proof of anything: the outcome stays unknown, nothing
        # is sent; once the list is sound again the shipment is found by its number.
        assert retried["code"] == "upstream_unavailable", retried
        assert "тем же токеном" in retried["hint"], retried
        settings.INVOICEBOX_SANDBOX_REPEAT_ROWS = []
        _, retried = assistant.call("create_shipment", confirmed)
        path = "caller"
    assert retried["status"] == "ok", retried
    data = retried["data"]
    if path == "sweep":
        assert retried["replayed"] is True, retried
    else:
        assert data["recovered"] is True, retried
    stored = SandboxShipment.objects.get(order__order_id=confirmed["order_id"])
    assert data["shipment_id"] == str(stored.pk)
    assert (
        data["document_number"] == Operation.objects.get(tool="create_shipment").merchant_order_id
    )
    # and again: the same confirmation answers the same shipment
    _, again = assistant.call("create_shipment", confirmed)
    assert again["status"] == "ok" and again["data"]["shipment_id"] == str(stored.pk), again
    assert SandboxShipment.objects.count() == foreign + 1
