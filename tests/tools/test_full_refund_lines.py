"""A full refund repeats each untouched line as sold: its own quantity and unit price."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.test import Client

from sandbox.models import SandboxRefund
from tests.conftest import Assistant
from tests.tools.test_more_tools import new_order, two_phase

pytestmark = pytest.mark.django_db


def test_full_refund_sends_each_line_with_its_own_quantity_and_price(
    assistant: Assistant, operator: Client
) -> None:
    # given: a paid order of 3 nights × 122,00 ₽, nothing refunded yet
    assistant.contour.toolsets = ["read", "write", "refund"]
    assistant.contour.save()
    order_id = new_order(assistant, paid=True)
    args = {"parent_order_id": order_id, "description": "отказ от брони"}

    # when
    _, first = assistant.call("create_refund", args)
    confirmed = {**args, "confirmation_token": first["confirmation"]["token"]}
    assistant.call("create_refund", confirmed)
    operator.post(f"/approvals/{first['confirmation']['id']}/", {"decision": "approve"})
    _, done = two_phase(assistant, "create_refund", confirmed)

    # then: the refund receipt shows 3 × 122,00, not 1 × 366,00
    assert done["status"] == "ok", done
    sent = json.loads(SandboxRefund.objects.get().request_json, parse_float=Decimal)["basketItems"]
    assert [(i["quantity"], i["amount"], i["totalAmount"]) for i in sent] == [
        (3, Decimal("122.00"), Decimal("366.00"))
    ]
