"""Ceilings at their edges, operator approval, and the dedup window, through REST."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from audit.models import JournalEntry
from tests.conftest import Assistant, order_args, sandbox_orders
from tools.models import Ceiling, PendingConfirmation

pytestmark = pytest.mark.django_db


def single_line(amount: int, vat: int, **changes: Any) -> dict[str, Any]:
    """An order of one line of quantity 1 at 22 % VAT."""
    args = order_args(amount=str(amount), vat_amount=str(vat), **changes)
    args["basket_items"][0].update(
        quantity=1, amount=str(amount), total_amount=str(amount), total_vat_amount=str(vat)
    )
    return args


def execute(assistant: Assistant, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status, first = assistant.call("create_order", args)
    if first["status"] != "confirmation_required":
        return status, first
    return assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )


def decide(operator: Client, confirmation_id: str, decision: str, reason: str = "") -> str:
    response = operator.post(
        f"/approvals/{confirmation_id}/", {"decision": decision, "reason": reason}, follow=True
    )
    assert response.status_code == 200
    return response.content.decode()


# -- ceilings -------------------------------------------------------------------------------


def test_per_order_ceiling_exactly_at_the_limit_passes(assistant: Assistant):
    Ceiling.objects.create(contour=assistant.contour, kind="per_order", currency="RUB", limit=36600)

    status, body = execute(assistant, order_args())

    assert (status, body["status"]) == (200, "ok"), body


def test_per_order_ceiling_one_kopeck_over_fails_at_the_first_call(assistant: Assistant):
    Ceiling.objects.create(contour=assistant.contour, kind="per_order", currency="RUB", limit=36600)

    status, body = assistant.call("create_order", single_line(36601, 6600))

    assert (status, body["code"]) == (422, "ceiling_exceeded")  # no retry passes it
    assert "366,00 ₽" in body["message"] and "0,01 ₽" in body["message"]
    assert PendingConfirmation.objects.count() == 0


def test_a_ceiling_only_in_another_currency_leaves_this_one_refused(assistant: Assistant):
    # Fail closed: with amount ceilings set, a currency none of them covers has no limit at all.
    assistant.contour.allowed_currencies = ["RUB", "USD"]
    assistant.contour.save()
    Ceiling.objects.create(contour=assistant.contour, kind="per_order", currency="USD", limit=1)

    status, body = assistant.call("create_order", order_args())

    assert (status, body["code"]) == (422, "currency_not_allowed")
    assert body["data"]["currencies_with_ceilings"] == ["USD"]


def test_daily_ceiling_counts_executed_orders_and_says_what_is_left(assistant: Assistant):
    Ceiling.objects.create(
        contour=assistant.contour, kind="per_day", currency="RUB", limit=36600 + 12200
    )
    execute(assistant, order_args())

    at_edge = execute(assistant, single_line(12200, 2200, description="Доплата"))
    over = assistant.call("create_order", single_line(100, 18, description="Ещё"))

    assert at_edge[1]["status"] == "ok", at_edge
    assert over[1]["code"] == "ceiling_exceeded"
    assert "остаток 0,00 ₽" in over[1]["message"]
    data = dict(over[1]["data"])
    assert data.pop("retry_after_seconds") > 0 and data.pop("frees_at")  # the next midnight
    assert data == {
        "ceiling": "per_day",
        "currency": "RUB",
        "limit": "48800",
        "used": "48800",
        "remaining": "0",
        "limit_human": "488,00 ₽",
        "used_human": "488,00 ₽",
        "remaining_human": "0,00 ₽",
    }


def test_daily_ceiling_is_checked_again_at_execution(assistant: Assistant):
    Ceiling.objects.create(contour=assistant.contour, kind="per_day", currency="RUB", limit=36600)
    first_args = order_args()
    second_args = order_args(description="Второй счёт")
    _, first = assistant.call("create_order", first_args)
    _, second = assistant.call("create_order", second_args)
    assert second["status"] == "confirmation_required"  # nothing used yet at this point

    assistant.call(
        "create_order", {**first_args, "confirmation_token": first["confirmation"]["token"]}
    )
    status, body = assistant.call(
        "create_order", {**second_args, "confirmation_token": second["confirmation"]["token"]}
    )

    assert (status, body["code"]) == (429, "ceiling_exceeded")
    assert len(sandbox_orders(assistant.http)) == 1


def test_hourly_count_ceiling(assistant: Assistant):
    Ceiling.objects.create(contour=assistant.contour, kind="per_hour", limit=1)
    execute(assistant, order_args())

    status, body = assistant.call("create_order", order_args(description="Второй"))

    assert (status, body["code"]) == (429, "ceiling_exceeded")
    assert "1 из 1" in body["message"]


# -- approval -------------------------------------------------------------------------------


def test_above_threshold_waits_for_an_operator_then_executes(
    assistant: Assistant, operator: Client
):
    assistant.contour.approval_thresholds = {"RUB": 30000}
    assistant.contour.save()
    args = order_args()
    _, first = assistant.call("create_order", args)
    confirmed = {**args, "confirmation_token": first["confirmation"]["token"]}
    url = first["confirmation"]["approval_url"]
    assert url.endswith(f"/approvals/{first['confirmation']['id']}/")

    status, waiting = assistant.call("create_order", confirmed)
    assert (status, waiting["status"]) == (200, "awaiting_approval")
    assert waiting["confirmation"]["approval_url"] == url
    assert sandbox_orders(assistant.http) == []

    decide(operator, first["confirmation"]["id"], "approve")
    status, done = assistant.call("create_order", confirmed)

    assert (status, done["status"]) == (200, "ok"), done
    assert len(sandbox_orders(assistant.http)) == 1
    approval = JournalEntry.objects.get(phase="approve")
    assert (approval.channel, approval.actor) == ("ui", "user:olga")


def test_rejection_reaches_the_assistant_with_the_reason(assistant: Assistant, operator: Client):
    assistant.contour.approval_for_all_writes = True
    assistant.contour.save()
    args = order_args()
    _, first = assistant.call("create_order", args)

    decide(operator, first["confirmation"]["id"], "reject", reason="не тот покупатель")
    status, body = assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )

    assert (status, body["code"]) == (409, "approval_rejected")
    assert "не тот покупатель" in body["message"]
    assert "без токена" in body["hint"]  # what to do next: a new call, not this token again
    assert sandbox_orders(assistant.http) == []


def test_currency_without_a_threshold_needs_an_operator(assistant: Assistant):
    assistant.contour.allowed_currencies = ["RUB", "USD"]
    assistant.contour.save()

    _, body = assistant.call("create_order", order_args(currency_id="USD"))

    assert body["data"]["requires_approval"] is True
    assert "approval_url" in body["confirmation"]


def test_decided_item_cannot_be_decided_again(assistant: Assistant, operator: Client):
    assistant.contour.approval_for_all_writes = True
    assistant.contour.save()
    _, first = assistant.call("create_order", order_args())
    decide(operator, first["confirmation"]["id"], "approve")

    page = decide(operator, first["confirmation"]["id"], "reject", reason="передумал")

    assert "решение уже принято" in page
    assert PendingConfirmation.objects.get().status == "approved"


def test_only_operators_may_decide(assistant: Assistant):
    assistant.contour.approval_for_all_writes = True
    assistant.contour.save()
    _, first = assistant.call("create_order", order_args())
    stranger = Client()
    stranger.force_login(User.objects.create_user("ivan", password="pw-ivan-123"))

    response = stranger.post(f"/approvals/{first['confirmation']['id']}/", {"decision": "approve"})

    assert response.status_code == 403
    assert PendingConfirmation.objects.get().status == "pending"


def test_approval_page_needs_a_login(client: Client):
    response = client.get("/approvals/")

    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


# -- dedup window ---------------------------------------------------------------------------


def test_same_order_again_inside_the_window_returns_the_existing_one(assistant: Assistant):
    args = order_args()
    _, created = execute(assistant, args)

    status, again = assistant.call("create_order", args)

    assert status == 200
    assert again["replayed"] is True
    assert again["data"]["order_id"] == created["data"]["order_id"]
    assert "уже выполнена" in again["message"]
    assert "allow_duplicate" in again["hint"]
    assert len(sandbox_orders(assistant.http)) == 1


def test_allow_duplicate_issues_a_second_identical_order_with_its_own_confirmation(
    assistant: Assistant,
):
    args = order_args()
    _, created = execute(assistant, args)

    status, second = execute(assistant, {**args, "allow_duplicate": True})

    assert (status, second["status"]) == (200, "ok"), second
    assert second["data"]["order_id"] != created["data"]["order_id"]
    assert len(sandbox_orders(assistant.http)) == 2
    assert PendingConfirmation.objects.count() == 2


def test_same_order_after_the_window_is_a_new_order(assistant: Assistant):
    args = order_args()
    execute(assistant, args)
    PendingConfirmation.objects.update(
        executed_at=timezone.now() - timedelta(seconds=assistant.contour.dedup_window_seconds + 1),
        created_at=timezone.now() - timedelta(hours=1),
    )

    _, again = assistant.call("create_order", args)

    assert again["status"] == "confirmation_required"
    assert PendingConfirmation.objects.count() == 2


# -- cancelling an order that holds money -----------------------------------------------------


def held_order(assistant: Assistant) -> str:
    """An issued order whose payment is held (pre-authorised): the sandbox row moved to hold."""
    from sandbox.models import SandboxOrder

    _, done = execute(assistant, order_args())
    order_id = done["data"]["order_id"]
    SandboxOrder.objects.filter(order_id=order_id).update(status="hold")
    return order_id


def test_cancelling_an_order_in_hold_waits_for_an_operator(assistant: Assistant, operator: Client):
    order_id = held_order(assistant)

    _, first = assistant.call("cancel_order", {"order_id": order_id})
    token = first["confirmation"]["token"]
    _, waiting = assistant.call("cancel_order", {"order_id": order_id, "confirmation_token": token})

    assert first["data"]["requires_approval"] is True
    assert "вернутся плательщику" in first["message"]
    assert waiting["status"] == "awaiting_approval", waiting
    assert [o["status"] for o in sandbox_orders(assistant.http)] == ["hold"]
    decide(operator, waiting["confirmation"]["id"], "approve")
    _, done = assistant.call("cancel_order", {"order_id": order_id, "confirmation_token": token})
    assert done["status"] == "ok", done
    assert [o["status"] for o in sandbox_orders(assistant.http)] == ["canceled"]


def test_an_order_that_moved_to_hold_after_the_summary_is_not_cancelled(assistant: Assistant):
    from sandbox.models import SandboxOrder

    _, done = execute(assistant, order_args())
    order_id = done["data"]["order_id"]
    _, first = assistant.call("cancel_order", {"order_id": order_id})
    assert first["data"]["requires_approval"] is False
    SandboxOrder.objects.filter(order_id=order_id).update(status="hold")

    token = first["confirmation"]["token"]
    _, refused = assistant.call("cancel_order", {"order_id": order_id, "confirmation_token": token})
    _, again = assistant.call("cancel_order", {"order_id": order_id})

    # The status the person saw changed: asked again (issue 39.3), now of an operator.
    assert refused["code"] == "confirmation_required", refused
    assert refused["data"]["facts_changed"] == ["статус: было created, стало hold"]
    assert refused["data"]["requires_approval"] is True
    assert [o["status"] for o in sandbox_orders(assistant.http)] == ["hold"]
    assert again["data"]["requires_approval"] is True


def test_an_unpaid_order_cancels_with_the_chat_confirmation(assistant: Assistant):
    _, done = execute(assistant, order_args())

    _, first = assistant.call("cancel_order", {"order_id": done["data"]["order_id"]})
    _, cancelled = assistant.call(
        "cancel_order",
        {
            "order_id": done["data"]["order_id"],
            "confirmation_token": first["confirmation"]["token"],
        },
    )

    assert cancelled["status"] == "ok", cancelled
