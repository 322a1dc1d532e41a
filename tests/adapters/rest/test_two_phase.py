"""create_order through REST: two phases, one order, replays, and token refusals."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tests.conftest import Assistant, order_args, sandbox_orders
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import Operation, PendingConfirmation

pytestmark = pytest.mark.django_db


def test_first_call_returns_summary_and_token_and_sends_nothing_upstream(assistant: Assistant):
    status, body = assistant.call("create_order", order_args())

    assert status == 200
    assert body["status"] == "confirmation_required"
    assert body["confirmation"]["token"].startswith("ibc_")
    assert "366,00 ₽" in body["confirmation"]["summary"]
    assert "ООО «Ромашка»" in body["confirmation"]["summary"]
    assert body["data"]["summary"]["amount"] == "36600"
    assert sandbox_orders(assistant.http) == []
    entry = JournalEntry.objects.get(pk=body["journal_id"])
    assert (entry.phase, entry.status) == ("prepare", "confirmation_required")


def test_second_call_creates_exactly_one_order(assistant: Assistant):
    args = order_args()
    _, first = assistant.call("create_order", args)

    status, body = assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )

    assert status == 200, body
    assert body["status"] == "ok"
    assert body["replayed"] is False
    orders = sandbox_orders(assistant.http)
    assert len(orders) == 1
    assert orders[0]["id"] == body["data"]["order_id"]
    assert orders[0]["amount"] == 366
    assert body["data"]["merchant_order_id"].startswith("gw-")
    assert body["data"]["payment_url"]
    assert body["data"]["environment"] == "sandbox"
    assert body["data"]["request_id"]


def test_same_token_again_returns_the_same_order_replayed(assistant: Assistant):
    args = order_args()
    _, first = assistant.call("create_order", args)
    confirmed = {**args, "confirmation_token": first["confirmation"]["token"]}
    _, created = assistant.call("create_order", confirmed)

    status, again = assistant.call("create_order", confirmed)

    assert status == 200
    assert again["replayed"] is True
    assert again["data"]["order_id"] == created["data"]["order_id"]
    assert len(sandbox_orders(assistant.http)) == 1


def test_identical_first_calls_share_one_confirmation(assistant: Assistant):
    args = order_args()
    _, one = assistant.call("create_order", args)
    _, two = assistant.call("create_order", args)

    assert one["confirmation"]["token"] == two["confirmation"]["token"]
    assert PendingConfirmation.objects.count() == 1


def test_token_with_changed_arguments_is_refused(assistant: Assistant):
    args = order_args()
    _, first = assistant.call("create_order", args)
    changed = {
        **args,
        "description": "Другое назначение",
        "confirmation_token": first["confirmation"]["token"],
    }

    status, body = assistant.call("create_order", changed)

    assert (status, body["code"]) == (409, "confirmation_mismatch")
    assert sandbox_orders(assistant.http) == []


def test_expired_token_is_refused(assistant: Assistant):
    args = order_args()
    _, first = assistant.call("create_order", args)
    PendingConfirmation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    status, body = assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )

    assert (status, body["code"]) == (409, "confirmation_expired")
    assert PendingConfirmation.objects.get().status == "expired"
    assert sandbox_orders(assistant.http) == []


def test_token_of_another_contour_is_refused(assistant: Assistant):
    other = create_contour("other", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)
    intruder = Assistant(http=Client(), key=issue_key(other, actor=SCAFFOLDING), contour=other)
    args = order_args()
    _, first = assistant.call("create_order", args)

    status, body = intruder.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )

    assert (status, body["code"]) == (409, "confirmation_invalid")
    assert sandbox_orders(assistant.http) == []


def test_made_up_token_is_refused(assistant: Assistant):
    status, body = assistant.call("create_order", {**order_args(), "confirmation_token": "ibc_x"})

    assert (status, body["code"]) == (409, "confirmation_invalid")


def test_used_token_for_other_arguments_is_refused(assistant: Assistant):
    args = order_args()
    _, first = assistant.call("create_order", args)
    token = first["confirmation"]["token"]
    assistant.call("create_order", {**args, "confirmation_token": token})

    status, body = assistant.call(
        "create_order", {**args, "description": "Ещё один", "confirmation_token": token}
    )

    assert (status, body["code"]) == (409, "confirmation_used")
    assert len(sandbox_orders(assistant.http)) == 1


def test_confirmation_status_can_be_polled(assistant: Assistant):
    args = order_args()
    _, first = assistant.call("create_order", args)
    confirmation_id = first["confirmation"]["id"]

    _, pending = assistant.get(f"/api/v1/confirmations/{confirmation_id}")
    assistant.call("create_order", {**args, "confirmation_token": first["confirmation"]["token"]})
    _, executed = assistant.get(f"/api/v1/confirmations/{confirmation_id}")

    assert pending["status"] == "pending"
    assert executed["status"] == "executed"
    assert Operation.objects.get().state == "done"
