"""Execution against a failing upstream: lost responses, 5xx, and recovery by lookup."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import JournalEntry
from sandbox.api import clear_faults, set_faults
from tests.conftest import Assistant, order_args, sandbox_orders
from tools.contours.services import DEMO_TOKEN
from tools.models import Operation

pytestmark = pytest.mark.django_db


def prepare(assistant: Assistant) -> dict:
    args = order_args()
    _, first = assistant.call("create_order", args)
    return {**args, "confirmation_token": first["confirmation"]["token"]}


def test_lost_response_is_unknown_then_recovered_without_a_second_order(assistant: Assistant):
    confirmed = prepare(assistant)
    set_faults(DEMO_TOKEN, drop_response_after_create=True)

    status, lost = assistant.call("create_order", confirmed)

    assert (status, lost["code"]) == (504, "outcome_unknown")
    assert "тем же токеном" in lost["hint"]
    assert Operation.objects.get().state == "unknown"
    assert len(sandbox_orders(assistant.http)) == 1

    clear_faults(DEMO_TOKEN)
    status, recovered = assistant.call("create_order", confirmed)

    assert status == 200, recovered
    assert recovered["data"]["recovered"] is True
    orders = sandbox_orders(assistant.http)
    assert [o["id"] for o in orders] == [recovered["data"]["order_id"]]
    assert Operation.objects.get().state == "done"


def test_server_error_on_create_is_unknown_and_a_retry_creates_one_order(
    assistant: Assistant, settings: Any
):
    # The retry comes after the stale period: sooner, absence proves nothing (the earlier
    # request may still land) and nothing is sent (tests/tools/test_unknown_outcomes.py).
    settings.GATEWAY_STALE_IN_FLIGHT_SECONDS = 0
    confirmed = prepare(assistant)
    set_faults(DEMO_TOKEN, error_rate=1.0)

    status, failed = assistant.call("create_order", confirmed)

    assert (status, failed["code"]) == (504, "outcome_unknown")
    entry = JournalEntry.objects.get(pk=failed["journal_id"])
    assert entry.upstream_status == 500

    clear_faults(DEMO_TOKEN)
    assert sandbox_orders(assistant.http) == []
    status, done = assistant.call("create_order", confirmed)

    assert status == 200, done
    assert "recovered" not in done["data"]
    assert len(sandbox_orders(assistant.http)) == 1
    assert Operation.objects.get().attempts == 2


def test_read_against_a_failing_upstream_is_upstream_unavailable(assistant: Assistant):
    set_faults(DEMO_TOKEN, error_rate=1.0)

    status, body = assistant.call("find_orders", {})

    assert (status, body["code"]) == (502, "upstream_unavailable")
    assert body["status"] == "error"


def test_read_survives_one_transient_failure(assistant: Assistant):
    set_faults(DEMO_TOKEN, fail_next=1)

    status, body = assistant.call("find_orders", {})

    assert status == 200, body


def test_execution_in_flight_elsewhere_is_a_duplicate_call(assistant: Assistant):
    confirmed = prepare(assistant)
    set_faults(DEMO_TOKEN, drop_response_after_create=True)
    assistant.call("create_order", confirmed)
    # Another worker has just claimed the same operation and is still waiting upstream.
    Operation.objects.update(state="in_flight")

    status, body = assistant.call("create_order", confirmed)

    assert (status, body["code"]) == (409, "duplicate_call")
    assert len(sandbox_orders(assistant.http)) == 1


def test_duplicate_merchant_order_id_upstream_is_recovered_as_the_same_order(
    assistant: Assistant,
):
    confirmed = prepare(assistant)
    set_faults(DEMO_TOKEN, drop_response_after_create=True)
    assistant.call("create_order", confirmed)
    clear_faults(DEMO_TOKEN)
    # The worker died after the upstream accepted the order; the lookup step is skipped so the
    # resend meets merchant_order_id_duplicate.
    Operation.objects.update(state="failed", attempts=0)

    status, body = assistant.call("create_order", confirmed)

    assert status == 200, body
    assert body["data"]["recovered"] is True
    assert len(sandbox_orders(assistant.http)) == 1


def test_identical_calls_of_one_reply_run_once_and_all_are_answered(assistant: Assistant):
    from tools.pipeline import gateway

    args = order_args()
    _, first = assistant.call("create_order", args)
    confirmed = {**args, "confirmation_token": first["confirmation"]["token"]}

    items = gateway.call_batch(
        assistant.contour,
        [("create_order", confirmed), ("find_orders", {}), ("create_order", dict(confirmed))],
        channel="openai",
        actor="test",
    )

    assert [item.duplicate_of for item in items] == [None, None, 0]
    assert items[2].outcome is items[0].outcome
    assert items[0].outcome.code == "ok"
    assert len(sandbox_orders(assistant.http)) == 1
    assert JournalEntry.objects.filter(code="duplicate_call", channel="openai").count() == 1
