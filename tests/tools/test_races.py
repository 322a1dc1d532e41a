"""Fifty-way races inside one process on PostgreSQL: threads, each with its own connection."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from django.db import connections

from audit.actors import SCAFFOLDING
from invoicebox.notify import sign
from sandbox.api import notification_body, pay_order
from tests.conftest import order_args
from tools.background.notifications import process
from tools.contours.services import create_contour
from tools.models import PendingConfirmation, ProcessedNotification
from tools.pipeline import gateway

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def fifty(work: Any) -> list[Any]:
    results: list[Any] = []
    barrier = threading.Barrier(50)

    def run() -> None:
        try:
            barrier.wait()
            results.append(work())
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def test_fifty_identical_first_calls_make_one_pending_confirmation():
    contour = create_contour(
        "first50", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING
    )
    args = order_args()

    outcomes = fifty(lambda: gateway.call(contour, "create_order", args, channel="rest", actor="t"))

    assert Counter(o.code for o in outcomes) == {"confirmation_required": 50}
    assert len({o.confirmation["token"] for o in outcomes}) == 1
    assert PendingConfirmation.objects.count() == 1


def test_fifty_copies_of_one_notification_are_processed_once():
    contour = create_contour(
        "notify50", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING
    )
    args = order_args()
    first = gateway.call(contour, "create_order", args, channel="rest", actor="t")
    done = gateway.call(
        contour,
        "create_order",
        {**args, "confirmation_token": first.confirmation["token"]},
        channel="rest",
        actor="t",
    )
    pay_order(done.data["order_id"], notify=False)
    body = notification_body(done.data["order_id"])
    signature = sign(body, contour.notification_key)

    answers = fifty(lambda: process("notify50", body, signature).as_dict())

    assert answers == [{"status": "success"}] * 50
    assert ProcessedNotification.objects.count() == 1
    assert contour.orders.get().status == "completed"
