"""Payment notifications: the sandbox sends them signed, the webhook processes each id once."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from sandbox.api import DEMO_TOKEN, notification_body, pay_order, send_notification
from tests.conftest import Assistant
from tests.tools.conftest import (
    body_of,
    issue,
    post_notification,
    tracked,
    webhook_entries,
)
from tools.contours.services import create_contour
from tools.models import ProcessedNotification, TrackedOrder

KEY = settings.INVOICEBOX_SANDBOX_NOTIFICATION_KEY
Capture = Callable[..., Any]
VECTOR = (
    Path(__file__).resolve().parents[2]
    / "invoicebox"
    / "fixtures"
    / "notification-vector.body.json"
)


def test_a_sandbox_contour_gets_the_sandbox_key_and_the_shop_url(assistant: Assistant):
    from sandbox.api import notification_url_of

    assert assistant.contour.notification_key == KEY
    assert notification_url_of(DEMO_TOKEN).endswith("/invoicebox/notifications/acme")


def test_paying_in_the_sandbox_notifies_and_marks_the_order_paid(
    assistant: Assistant, django_capture_on_commit_callbacks: Capture
):
    order = issue(assistant)
    assert tracked(order["order_id"]).status == "created"

    with django_capture_on_commit_callbacks(execute=True):
        pay_order(order["order_id"])

    row = tracked(order["order_id"])
    assert row.status == "completed" and row.paid_at is not None
    assert ProcessedNotification.objects.filter(notification_id=order["order_id"]).count() == 1
    [entry] = webhook_entries()
    assert (entry.contour, entry.phase, entry.status, entry.code) == ("acme", "notify", "ok", "ok")
    assert entry.arguments["merchant_order_id"] == order["merchant_order_id"]
    # The worker's follow-up (eager here) confirmed the payment by a read upstream.
    confirmed = JournalEntry.objects.get(channel="celery", code="notification_confirmed")
    assert confirmed.arguments["upstream_status"] == "completed"
    assert not JournalEntry.objects.filter(arguments__icontains=KEY).exists()
    assert all(KEY not in e.message for e in JournalEntry.objects.all())


def test_a_repeated_notification_answers_success_and_changes_nothing(
    assistant: Assistant, django_capture_on_commit_callbacks: Capture
):
    order = issue(assistant)
    with django_capture_on_commit_callbacks(execute=True):
        pay_order(order["order_id"])
    before = tracked(order["order_id"]).updated_at

    again = send_notification(order["order_id"])

    assert again.accepted and again.in_process
    assert ProcessedNotification.objects.count() == 1
    assert tracked(order["order_id"]).updated_at == before
    assert [e.code for e in webhook_entries()] == ["ok", "duplicate"]


@pytest.mark.parametrize("signature", [None, "", "0" * 40, "deadbeef"])
def test_a_wrong_or_missing_signature_is_refused_and_changes_nothing(
    assistant: Assistant, http: Client, signature: str | None
):
    order = issue(assistant)
    pay_order(order["order_id"], notify=False)
    body = notification_body(order["order_id"])

    status, answer = post_notification(http, "acme", body, None, signature=signature)

    assert (status, answer["status"], answer["code"]) == (200, "error", "signature_error")
    assert tracked(order["order_id"]).status == "created"
    assert not ProcessedNotification.objects.exists()
    [entry] = webhook_entries()
    assert (entry.status, entry.code) == ("rejected", "signature_error")
    assert not JournalEntry.objects.filter(channel="celery").exists()


def test_a_body_signed_with_another_key_is_refused(assistant: Assistant, http: Client):
    order = issue(assistant)
    body = notification_body(order["order_id"])

    _, answer = post_notification(http, "acme", body, "some-other-key")

    assert answer["code"] == "signature_error"
    assert tracked(order["order_id"]).status == "created"


def test_an_unknown_contour_can_verify_nothing(http: Client, db: None):
    _, answer = post_notification(http, "nobody", b"{}", KEY)

    assert answer["code"] == "signature_error"
    [entry] = webhook_entries()
    assert (entry.contour, entry.arguments) == ("", {"contour_slug": "nobody"})


def test_a_wrong_amount_is_refused(assistant: Assistant, http: Client):
    order = issue(assistant)
    pay_order(order["order_id"], notify=False)
    payload = json.loads(notification_body(order["order_id"]))
    payload["amount"] = 366.01

    _, answer = post_notification(http, "acme", body_of(payload), KEY)

    assert answer["code"] == "order_wrong_amount"
    assert tracked(order["order_id"]).status == "created"
    assert not ProcessedNotification.objects.exists()


def test_a_wrong_currency_is_refused_with_the_documented_code(assistant: Assistant, http: Client):
    order = issue(assistant)
    payload = {
        **json.loads(notification_body(order["order_id"])),
        "status": "completed",
        "currencyId": "USD",
    }

    _, answer = post_notification(http, "acme", body_of(payload), KEY)

    # order_wrong_currency is not on the docs' list: another currency is another sum.
    assert answer["code"] == "order_wrong_amount"
    assert "USD" in answer["message"]
    assert tracked(order["order_id"]).status == "created"


def test_an_order_this_gateway_did_not_issue_is_not_found(assistant: Assistant, http: Client):
    order = issue(assistant)
    payload = {
        **json.loads(notification_body(order["order_id"])),
        "status": "completed",
        "id": "0190aaaa-0000-7000-8000-000000000000",
        "merchantOrderId": "elsewhere-1",
    }

    _, answer = post_notification(http, "acme", body_of(payload), KEY)

    assert answer["code"] == "order_not_found"
    assert not ProcessedNotification.objects.exists()


def test_a_second_payment_of_a_paid_order_is_already_paid(
    assistant: Assistant, http: Client, django_capture_on_commit_callbacks: Capture
):
    order = issue(assistant)
    with django_capture_on_commit_callbacks(execute=True):
        pay_order(order["order_id"])
    # Another notification (another id) claiming the same order's payment.
    payload = {
        **json.loads(notification_body(order["order_id"])),
        "id": "0190bbbb-0000-7000-8000-000000000000",
    }

    _, answer = post_notification(http, "acme", body_of(payload), KEY)

    assert answer["code"] == "order_already_paid"
    assert ProcessedNotification.objects.count() == 1


def test_another_shops_notification_is_not_ours(assistant: Assistant, http: Client):
    order = issue(assistant)
    payload = {
        **json.loads(notification_body(order["order_id"])),
        "status": "completed",
        "merchantId": "11111111-1111-1111-1111-111111111111",
    }

    _, answer = post_notification(http, "acme", body_of(payload), KEY)

    assert answer["code"] == "order_not_found"
    assert tracked(order["order_id"]).status == "created"


def test_the_monitoring_probe_is_answered_without_side_effects(assistant: Assistant, http: Client):
    issue(assistant)
    probe = {
        "id": "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "status": "completed",
        "merchantId": assistant.contour.merchant_id,
        "merchantOrderId": "",
        "amount": 0,
        "currencyId": "RUB",
        "createdAt": "2026-01-01T00:00:00+00:00",
        "customer": {},
    }

    status, answer = post_notification(http, "acme", body_of(probe), KEY)

    assert (status, answer) == (200, {"status": "success"})
    assert not ProcessedNotification.objects.exists()
    assert set(TrackedOrder.objects.values_list("status", flat=True)) == {"created"}
    assert [e.code for e in webhook_entries()] == ["probe"]


def test_a_signed_but_unreadable_body_asks_invoicebox_to_retry(assistant: Assistant, http: Client):
    _, answer = post_notification(http, "acme", b'{"id": 1}', KEY)

    assert answer["code"] == "out_of_service"
    assert webhook_entries()[0].status == "error"


def test_an_oversized_body_is_refused_unread(assistant: Assistant, http: Client):
    body = b'{"id": "' + b"x" * 300_000 + b'"}'

    _, answer = post_notification(http, "acme", body, KEY)

    assert answer["code"] == "out_of_service"
    assert not ProcessedNotification.objects.exists()


def test_only_post_is_a_notification(http: Client, db: None):
    assert http.get("/invoicebox/notifications/acme").status_code == 405


def test_the_published_vector_is_accepted_for_its_order(http: Client, db: None):
    """The SDK sample, signed with key `test`, for a contour tracking order 55626."""
    contour = create_contour("sdk", mode="demo", actor=SCAFFOLDING)
    contour.notification_key = "test"
    contour.save()
    TrackedOrder.objects.create(
        contour=contour,
        order_id="0188d934-85f8-f872-2ac6-ad202d71b985",
        merchant_order_id="55626",
        amount=279067,
        currency="RUB",
        status="created",
    )
    body = VECTOR.read_bytes()

    status, answer = post_notification(
        http, "sdk", body, None, signature="4731e2fb446ba519fd9d8798a1a0873f073189e8"
    )
    repeated = post_notification(
        http, "sdk", body, None, signature="4731e2fb446ba519fd9d8798a1a0873f073189e8"
    )

    assert (status, answer) == (200, {"status": "success"})
    assert repeated == (200, {"status": "success"})
    assert ProcessedNotification.objects.get().status == "success"
    # "success" is the sample's status, not a payment ("completed"): the order stays unpaid.
    assert TrackedOrder.objects.get().status == "created"
    assert [e.code for e in webhook_entries()] == ["ok", "duplicate"]
    # No customer data in the journal: only the facts of the notification.
    assert all("OOO TEST" not in json.dumps(e.arguments) for e in webhook_entries())


def test_sandbox_pay_command_notifies_and_reports_the_answer(
    assistant: Assistant, django_capture_on_commit_callbacks: Capture
):
    order = issue(assistant)
    out, err = io.StringIO(), io.StringIO()

    call_command("sandbox_pay", order["order_id"], stdout=out, stderr=err)
    call_command("sandbox_pay", order["order_id"], "--resend", stdout=io.StringIO())

    assert json.loads(out.getvalue())["status"] == "completed"
    assert '"status": "success"' in err.getvalue()
    assert tracked(order["order_id"]).status == "completed"
    assert [e.code for e in webhook_entries()] == ["ok", "duplicate"]


def test_the_sandbox_pay_endpoint_pays_and_reports_the_notification(
    assistant: Assistant, http: Client
):
    order = issue(assistant)

    response = http.post(
        f"/sandbox/invoicebox/v3/_sandbox/pay/{order['order_id']}",
        HTTP_AUTHORIZATION=f"Bearer {DEMO_TOKEN}",
        HTTP_USER_AGENT="t/1",
    )

    assert response.status_code == 200
    body = response.json()
    assert body["data"]["status"] == "completed"
    assert body["notification"]["answer"] == {"status": "success"}
    assert tracked(order["order_id"]).status == "completed"


def test_an_order_with_its_own_notification_url_is_notified_there(
    assistant: Assistant, django_capture_on_commit_callbacks: Capture
):
    create_contour("other", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)
    order = issue(
        assistant, notification_url="http://127.0.0.1:8000/invoicebox/notifications/other"
    )

    with django_capture_on_commit_callbacks(execute=True):
        pay_order(order["order_id"])

    # The other contour did not issue it: it answers order_not_found, acme's order stays open.
    [entry] = webhook_entries()
    assert (entry.contour, entry.code) == ("other", "order_not_found")
    assert tracked(order["order_id"]).status == "created"


def test_another_invoicebox_order_with_our_number_is_refused(assistant: Assistant, http: Client):
    # A correctly signed notification about another Invoicebox order (another id) that carries
    # our merchantOrderId must not mark our unpaid order paid.
    order = issue(assistant)
    payload = {
        **json.loads(notification_body(order["order_id"])),
        "status": "completed",
        "id": "0190cccc-0000-7000-8000-000000000000",
    }

    _, answer = post_notification(http, "acme", body_of(payload), KEY)

    assert answer["code"] == "order_not_found"
    assert "0190cccc-0000-7000-8000-000000000000" in answer["message"]
    assert tracked(order["order_id"]).status == "created"
    assert not ProcessedNotification.objects.exists()
    assert webhook_entries()[-1].code == "order_not_found"


def test_a_payment_without_a_currency_is_refused(assistant: Assistant, http: Client):
    order = issue(assistant)
    payload = {**json.loads(notification_body(order["order_id"])), "status": "completed"}
    del payload["currencyId"]

    _, answer = post_notification(http, "acme", body_of(payload), KEY)

    assert answer["code"] == "order_wrong_amount"
    assert "currencyId" in answer["message"]
    assert tracked(order["order_id"]).status == "created"
    assert not ProcessedNotification.objects.exists()
