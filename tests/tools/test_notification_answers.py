"""What a notification is answered, and why.

Each test drives the real webhook (Django test client, signed body, the sandbox's own
notification body) and, where it matters, the real follow-up task against the sandbox.
The decisions are recorded in docs/invoicebox-api.md (payment notifications).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, get_args

import pytest
from django.conf import settings
from django.test import Client

from audit.models import JournalEntry
from invoicebox.notify import ErrorCode, sign
from sandbox.api import notification_body, pay_order, send_notification
from sandbox.models import SandboxOrder
from tests.conftest import Assistant
from tests.tools.conftest import body_of, issue, post_notification, tracked, webhook_entries
from tools.background import tasks
from tools.models import ProcessedNotification, TrackedOrder

KEY = settings.INVOICEBOX_SANDBOX_NOTIFICATION_KEY
Capture = Callable[..., Any]
# docs/merchant/notification/status.md, table NotificationErrorCode (InvoiceBox/docs 85d866e).
DOCUMENTED_CODES = {
    "out_of_service",
    "order_wrong_amount",
    "order_already_paid",
    "order_not_found",
    "shipping_unavailable",
    "signature_error",
}


def sandbox_status(order_id: str, status: str) -> None:
    """Move the sandbox order as Invoicebox would (hold: money pre-authorised)."""
    SandboxOrder.objects.filter(order_id=order_id).update(status=status)


# -- de-duplication on (order, status) --------------------------------------------------------


def test_completed_after_hold_of_the_same_order_is_applied_not_dropped(
    assistant: Assistant, http: Client, django_capture_on_commit_callbacks: Capture
):
    order = issue(assistant)
    sandbox_status(order["order_id"], "hold")
    held = notification_body(order["order_id"])
    with django_capture_on_commit_callbacks(execute=True):
        first = post_notification(http, "acme", held, KEY)
    assert first == (200, {"status": "success"})
    assert tracked(order["order_id"]).status == "hold"

    pay_order(order["order_id"], notify=False)
    with django_capture_on_commit_callbacks(execute=True):
        second = post_notification(http, "acme", notification_body(order["order_id"]), KEY)

    assert second == (200, {"status": "success"})
    row = tracked(order["order_id"])
    assert row.status == "completed" and row.paid_at is not None
    assert sorted(ProcessedNotification.objects.values_list("status", flat=True)) == [
        "completed",
        "hold",
    ]
    assert [e.code for e in webhook_entries()] == ["ok", "ok"]
    # Both claims were confirmed by a read upstream, neither flagged.
    assert JournalEntry.objects.filter(code="notification_confirmed").count() == 2
    assert not JournalEntry.objects.filter(code="notification_unconfirmed").exists()


def test_a_repeat_of_each_status_is_a_duplicate_with_the_same_answer(
    assistant: Assistant, http: Client
):
    order = issue(assistant)
    sandbox_status(order["order_id"], "hold")
    held = notification_body(order["order_id"])
    pay_order(order["order_id"], notify=False)
    paid = notification_body(order["order_id"])

    answers = [post_notification(http, "acme", body, KEY)[1] for body in (held, paid, held, paid)]

    assert answers == [{"status": "success"}] * 4
    assert [e.code for e in webhook_entries()] == ["ok", "ok", "duplicate", "duplicate"]
    # A late hold never takes a paid order back.
    assert tracked(order["order_id"]).status == "completed"
    assert ProcessedNotification.objects.count() == 2


def test_a_hold_arriving_after_the_payment_leaves_the_order_paid(
    assistant: Assistant, http: Client
):
    order = issue(assistant)
    pay_order(order["order_id"], notify=False)
    paid = notification_body(order["order_id"])
    late_hold = body_of({**json.loads(paid), "status": "hold"})

    assert post_notification(http, "acme", paid, KEY)[1] == {"status": "success"}
    assert post_notification(http, "acme", late_hold, KEY)[1] == {"status": "success"}

    assert tracked(order["order_id"]).status == "completed"


# -- the same payment again is success, another payment is order_already_paid ----------------


def test_a_retry_of_the_same_payment_after_the_status_poll_answers_success(
    assistant: Assistant, django_capture_on_commit_callbacks: Capture
):
    """The first delivery failed; the poll marked the order paid; Invoicebox retries."""
    order = issue(assistant)
    pay_order(order["order_id"], notify=False)
    assert tasks.refresh_order.delay(tracked(order["order_id"]).pk).get() == "completed"
    assert tracked(order["order_id"]).status == "completed"

    with django_capture_on_commit_callbacks(execute=True):
        retry = send_notification(order["order_id"])
    again = send_notification(order["order_id"])

    assert retry.accepted, retry.answer  # was order_already_paid
    assert again.accepted, again.answer
    assert [e.code for e in webhook_entries()] == ["already_applied", "duplicate"]
    assert ProcessedNotification.objects.get().status == "completed"
    assert JournalEntry.objects.filter(code="notification_confirmed").count() == 1


def test_another_invoicebox_orders_payment_never_pays_ours(assistant: Assistant, http: Client):
    """Another Invoicebox order carrying our merchantOrderId is not our order:
    its payment is refused for a person to look at; our own then counts, once."""
    order = issue(assistant)
    pay_order(order["order_id"], notify=False)
    own = notification_body(order["order_id"])
    other = body_of({**json.loads(own), "id": "0190cccc-0000-7000-8000-000000000000"})

    first = post_notification(http, "acme", other, KEY)[1]
    second = post_notification(http, "acme", own, KEY)[1]
    repeated = post_notification(http, "acme", other, KEY)[1]

    assert first["code"] == "order_not_found"  # not ours: nothing marked paid by it
    assert second == {"status": "success"}  # our own invoice's payment
    assert repeated["code"] == "order_already_paid"  # ours is paid: that one is a 2nd payment


def test_after_the_poll_another_invoicebox_order_is_already_paid(
    assistant: Assistant, http: Client
):
    order = issue(assistant)
    pay_order(order["order_id"], notify=False)
    tasks.refresh_order.delay(tracked(order["order_id"]).pk).get()
    other = body_of(
        {
            **json.loads(notification_body(order["order_id"])),
            "id": "0190dddd-0000-7000-8000-000000000000",
        }
    )

    _, answer = post_notification(http, "acme", other, KEY)

    assert answer["code"] == "order_already_paid"
    assert not ProcessedNotification.objects.exists()


# -- codes, the probe, shipping_unavailable, the signature setting ---------------------------


def test_answers_use_only_the_documented_codes():
    assert set(get_args(ErrorCode)) == DOCUMENTED_CODES


@pytest.mark.parametrize("merchant_order_id", ["", None])
@pytest.mark.parametrize(
    "extra",
    [
        {"status": "completed", "amount": 0, "currencyId": "RUB", "customer": {}},
        {},  # only what the docs promise of a probe: its id and the shop's merchantId
    ],
)
def test_the_monitoring_probe_with_an_empty_or_null_order_is_answered_success(
    assistant: Assistant, http: Client, merchant_order_id: str | None, extra: dict[str, Any]
):
    issue(assistant)
    probe = {
        "id": "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "merchantId": assistant.contour.merchant_id,
        "merchantOrderId": merchant_order_id,
        **extra,
    }

    answer = post_notification(http, "acme", body_of(probe), KEY)

    assert answer == (200, {"status": "success"})
    assert not ProcessedNotification.objects.exists()
    assert set(TrackedOrder.objects.values_list("status", flat=True)) == {"created"}
    assert [e.code for e in webhook_entries()] == ["probe"]


def test_a_probe_for_another_shop_or_unsigned_is_refused(assistant: Assistant, http: Client):
    probe = {
        "id": "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "merchantOrderId": None,
        "merchantId": "11111111-1111-1111-1111-111111111111",
    }

    _, foreign = post_notification(http, "acme", body_of(probe), KEY)
    _, unsigned = post_notification(http, "acme", body_of(probe), None)

    assert foreign["code"] == "order_not_found"
    assert unsigned["code"] == "signature_error"


def test_a_payment_for_a_closed_order_is_shipping_unavailable(assistant: Assistant, http: Client):
    order = issue(assistant)
    sandbox_status(order["order_id"], "canceled")
    canceled = notification_body(order["order_id"])
    assert post_notification(http, "acme", canceled, KEY)[1] == {"status": "success"}
    assert tracked(order["order_id"]).status == "canceled"
    paid = body_of({**json.loads(canceled), "status": "completed"})

    _, answer = post_notification(http, "acme", paid, KEY)
    _, retried = post_notification(http, "acme", paid, KEY)

    assert (answer["status"], answer["code"]) == ("error", "shipping_unavailable")
    assert "возврат" in answer["message"]
    assert retried == answer  # Invoicebox's retry gets the same answer
    # The money was taken: the order shows it, so a refund can be made and the poll sees it.
    assert tracked(order["order_id"]).status == "completed"
    codes = [(e.status, e.code) for e in webhook_entries()]
    assert codes == [("ok", "ok"), ("rejected", "shipping_unavailable"), ("rejected", "duplicate")]


@pytest.mark.parametrize("algorithm", ["sha256", "sha512", "sha3-256"])
def test_a_contour_verifies_with_its_own_signature_algorithm(
    assistant: Assistant, http: Client, algorithm: str
):
    contour = assistant.contour
    contour.notification_signature_algorithm = algorithm
    contour.save()
    order = issue(assistant)
    pay_order(order["order_id"], notify=False)
    body = notification_body(order["order_id"])

    _, with_sha1 = post_notification(http, "acme", body, KEY)
    _, with_own = post_notification(
        http, "acme", body, None, signature=sign(body, KEY, algorithm=algorithm)
    )

    assert with_sha1["code"] == "signature_error"
    assert algorithm in with_sha1["message"]
    assert with_own == {"status": "success"}
    assert tracked(order["order_id"]).status == "completed"


def test_a_stored_algorithm_nobody_offers_refuses_without_a_crash(
    assistant: Assistant, http: Client
):
    type(assistant.contour).objects.filter(pk=assistant.contour.pk).update(
        notification_signature_algorithm="crc32b"
    )
    order = issue(assistant)
    body = notification_body(order["order_id"])

    status, answer = post_notification(http, "acme", body, KEY)

    assert (status, answer["code"]) == (200, "signature_error")
    assert "crc32b" in answer["message"]
