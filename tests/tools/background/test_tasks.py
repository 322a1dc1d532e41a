"""Celery tasks: idempotent, by id, retried only when retrying can help."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from celery.exceptions import Retry
from django.utils import timezone

from audit.models import JournalEntry
from sandbox.api import DEMO_TOKEN, clear_faults, pay_order, set_faults
from tests.conftest import Assistant, order_args
from tests.tools.conftest import issue, tracked
from tools.background import tasks
from tools.models import PendingConfirmation, ProcessedNotification, TrackedOrder
from tools.pipeline import gateway


def test_expire_confirmations_expires_only_stale_open_ones(assistant: Assistant):
    for n in range(3):
        assistant.call("create_order", order_args(description=f"Счёт {n}"))
    stale, fresh, executed = PendingConfirmation.objects.order_by("created_at")
    PendingConfirmation.objects.filter(pk__in=[stale.pk, executed.pk]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    PendingConfirmation.objects.filter(pk=executed.pk).update(status="executed")

    first = tasks.expire_confirmations.delay().get()
    second = tasks.expire_confirmations.delay().get()

    assert (first, second) == (1, 0)
    statuses = dict(PendingConfirmation.objects.values_list("pk", "status"))
    assert statuses == {stale.pk: "expired", fresh.pk: "pending", executed.pk: "executed"}


def test_expiry_leaves_a_confirmation_whose_execution_began(assistant: Assistant):
    set_faults(DEMO_TOKEN, drop_response_after_create=True)
    args = order_args()
    first = gateway.call(assistant.contour, "create_order", args, channel="rest", actor="t")
    gateway.call(
        assistant.contour,
        "create_order",
        {**args, "confirmation_token": first.confirmation["token"]},
        channel="rest",
        actor="t",
    )
    PendingConfirmation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    assert tasks.expire_confirmations() == 0
    assert PendingConfirmation.objects.get().status == "pending"


def test_refresh_open_orders_reads_the_status_upstream(assistant: Assistant):
    paid, open_ = issue(assistant), issue(assistant, description="Второй")
    pay_order(paid["order_id"], notify=False)  # paid, but nobody told the gateway

    queued = tasks.refresh_open_orders.delay().get()
    again = tasks.refresh_open_orders.delay().get()

    assert (queued, again) == (2, 1)  # the paid one is no longer open
    assert tracked(paid["order_id"]).status == "completed"
    assert tracked(paid["order_id"]).paid_at is not None
    assert tracked(open_["order_id"]).status == "created"
    [entry] = JournalEntry.objects.filter(channel="celery")
    assert (entry.code, entry.arguments["order_id"]) == ("status_refreshed", paid["order_id"])


def test_refresh_skips_orders_past_the_age_limit(assistant: Assistant, settings: Any):
    order = issue(assistant)
    TrackedOrder.objects.update(created_at=timezone.now() - timedelta(days=31))
    settings.GATEWAY_REFRESH_MAX_AGE_DAYS = 30

    assert tasks.refresh_open_orders() == 0
    assert tracked(order["order_id"]).status == "created"


def test_a_retryable_upstream_failure_is_retried_by_a_worker(assistant: Assistant):
    order = issue(assistant)
    set_faults(DEMO_TOKEN, error_rate=1.0)
    pk = tracked(order["order_id"]).pk
    task = tasks.refresh_order
    # As a worker runs it (not eager): the retry is scheduled, here re-run eagerly and skipped.
    task.push_request(
        is_eager=False, retries=0, id="t-1", called_directly=False, args=[pk], kwargs={}
    )
    try:
        with pytest.raises(Retry) as retry:
            task.run(pk)
    finally:
        task.pop_request()
        clear_faults(DEMO_TOKEN)

    assert retry.value.when == 5  # the first backoff step
    assert tracked(order["order_id"]).status == "created"


def test_a_refused_token_is_not_retried(assistant: Assistant):
    order = issue(assistant)
    contour = assistant.contour
    contour.api_token = "0" * 32  # not a sandbox token: 401
    contour.save()
    task = tasks.refresh_order
    task.push_request(is_eager=False, retries=0, id="t-2", called_directly=False)
    try:
        outcome = task.run(tracked(order["order_id"]).pk)
    finally:
        task.pop_request()

    assert outcome == "skipped: unauthorized"


def test_tasks_for_vanished_rows_do_nothing(db: None):
    assert tasks.refresh_order.delay(10**9).get() == "gone"
    assert tasks.process_notification.delay(10**9).get() == "gone"


def test_a_notification_the_api_contradicts_is_flagged(assistant: Assistant):
    order = issue(assistant)
    row = tracked(order["order_id"])
    processed = ProcessedNotification.objects.create(
        contour=assistant.contour,
        notification_id=order["order_id"],
        order_id=row.order_id,
        status="completed",
    )

    outcome = tasks.process_notification.delay(processed.pk).get()

    assert outcome == "unconfirmed"
    entry = JournalEntry.objects.get(channel="celery")
    assert (entry.status, entry.code) == ("error", "notification_unconfirmed")
    assert entry.arguments["upstream_status"] == "created"
    assert tracked(order["order_id"]).status == "created"


def test_the_beat_schedule_names_real_tasks(settings: Any):
    from config.celery import app

    app.loader.import_default_modules()
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in app.tasks
