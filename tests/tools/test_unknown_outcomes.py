"""An upstream that lies or loses its answer: the outcome is unknown, counted, never reported as
ours by mistake, and the background sweep (tools/pipeline/sweep.py) resolves it by proof; a
payment notification that comes before the create's answer waits for it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from audit.models import JournalEntry
from sandbox.api import DEMO_TOKEN, clear_faults, send_notification, set_faults
from sandbox.models import SandboxMerchantOrderId
from tests.conftest import Assistant, order_args, sandbox_orders
from tests.tools.conftest import webhook_entries
from tools.models import (
    Ceiling,
    CeilingKind,
    Operation,
    PendingConfirmation,
    ProcessedNotification,
    TrackedOrder,
)
from tools.pipeline import sweep


@pytest.fixture(autouse=True)
def _spool_and_timeout(settings: Any, tmp_path: Path) -> None:
    settings.INVOICEBOX_TIMEOUT_SECONDS = 0.3
    settings.GATEWAY_STATE_DIR = str(tmp_path)


def confirmed_order(assistant: Assistant, **changes: Any) -> dict[str, Any]:
    args = order_args(**changes)
    _, first = assistant.call("create_order", args)
    assert first["status"] == "confirmation_required", first
    return {**args, "confirmation_token": first["confirmation"]["token"]}


def age_operations(seconds: float = 3600) -> None:
    """Move the operations' last request back in time, past the stale period."""
    for operation in Operation.objects.all():
        Operation.objects.filter(pk=operation.pk).update(
            started_at=operation.started_at - timedelta(seconds=seconds)
        )


def _repeated_creates() -> int:
    return sum(SandboxMerchantOrderId.objects.values_list("repeated_creates", flat=True))


def test_a_503_after_the_order_was_stored_is_unknown_counted_and_recovered(
    assistant: Assistant, client: Client
):
    Ceiling.objects.create(
        contour=assistant.contour, kind=CeilingKind.PER_DAY, currency="RUB", limit=36600
    )
    confirmed = confirmed_order(assistant, description="503 после записи")
    set_faults(DEMO_TOKEN, fail_after_create=True)
    status, lost = assistant.call("create_order", confirmed)
    clear_faults(DEMO_TOKEN)

    assert (status, lost["code"]) == (504, "outcome_unknown"), lost
    assert Operation.objects.get().state == "unknown"
    # Past its expiry the confirmation stays alive, and the order counts against the ceiling.
    PendingConfirmation.objects.update(expires_at=PendingConfirmation.objects.get().created_at)
    _, other = assistant.call("create_order", order_args(description="Другой"))
    assert other["code"] == "ceiling_exceeded", other
    _, retried = assistant.call("create_order", confirmed)
    assert retried["status"] == "ok", retried
    assert retried["data"]["recovered"] is True
    assert [o["id"] for o in sandbox_orders(client)] == [retried["data"]["order_id"]]
    assert _repeated_creates() == 0


def test_an_answer_with_another_merchant_order_id_is_never_reported_as_ours(
    assistant: Assistant, client: Client
):
    confirmed = confirmed_order(assistant, description="Чужой номер")
    set_faults(DEMO_TOKEN, wrong_order_after_create=True)
    _, lied = assistant.call("create_order", confirmed)
    clear_faults(DEMO_TOKEN)

    assert lied["code"] == "outcome_unknown", lied
    assert "order_id" not in lied["data"]
    _, retried = assistant.call("create_order", confirmed)
    [ours] = sandbox_orders(client)
    assert retried["status"] == "ok", retried
    assert retried["data"]["order_id"] == ours["id"]
    assert retried["data"]["merchant_order_id"] == Operation.objects.get().merchant_order_id


def test_absence_right_after_an_unknown_outcome_sends_nothing_until_the_request_is_stale(
    assistant: Assistant, client: Client
):
    confirmed = confirmed_order(assistant, description="Рано")
    set_faults(DEMO_TOKEN, fail_next=1)  # a 503 before anything is stored
    _, first = assistant.call("create_order", confirmed)
    clear_faults(DEMO_TOKEN)
    _, early = assistant.call("create_order", confirmed)

    assert first["code"] == "outcome_unknown"
    assert early["code"] == "outcome_unknown", early
    assert early["data"]["retry_after_seconds"] > 0
    assert sandbox_orders(client) == []
    age_operations()
    _, late = assistant.call("create_order", confirmed)
    assert late["status"] == "ok", late
    assert len(sandbox_orders(client)) == 1 and _repeated_creates() == 0


def test_the_sweep_resolves_a_lost_create_and_its_payment_notification_is_accepted(
    assistant: Assistant, client: Client
):
    confirmed = confirmed_order(assistant, description="Потерянный ответ")
    set_faults(DEMO_TOKEN, drop_response_after_create=True)
    _, lost = assistant.call("create_order", confirmed)
    clear_faults(DEMO_TOKEN)
    assert lost["code"] == "outcome_unknown"
    [order] = sandbox_orders(client)
    assert not TrackedOrder.objects.exists()

    assert sweep.resolve_operations() == {}  # not stale yet: left to its caller
    age_operations()
    assert sweep.resolve_operations() == {"found": 1}

    operation = Operation.objects.select_related("confirmation").get()
    assert (operation.state, operation.confirmation.status) == ("done", "executed")
    assert operation.result["order_id"] == order["id"]
    assert TrackedOrder.objects.get().order_id == order["id"]
    assert JournalEntry.objects.filter(code="operation_recovered").count() == 1
    delivery = send_notification(order["id"])
    assert delivery.answer == {"status": "success"}, delivery
    _, replayed = assistant.call("create_order", confirmed)
    assert replayed["replayed"] is True and replayed["data"]["order_id"] == order["id"]


def test_the_sweep_marks_a_create_proven_absent_failed(assistant: Assistant, client: Client):
    confirmed = confirmed_order(assistant, description="Не дошёл")
    set_faults(DEMO_TOKEN, reset_next=1)
    _, lost = assistant.call("create_order", confirmed)
    clear_faults(DEMO_TOKEN)
    assert lost["code"] == "outcome_unknown"
    age_operations()

    assert sweep.resolve_operations() == {"absent": 1}
    assert Operation.objects.get().state == "failed"
    _, retried = assistant.call("create_order", confirmed)
    assert retried["status"] == "ok", retried
    assert len(sandbox_orders(client)) == 1


def test_a_notification_before_the_create_answer_is_out_of_service_then_accepted(
    assistant: Assistant, client: Client
):
    confirmed = confirmed_order(assistant, description="Уведомление раньше ответа")
    set_faults(DEMO_TOKEN, notify_before_answer=True)
    _, done = assistant.call("create_order", confirmed)
    clear_faults(DEMO_TOKEN)

    assert done["status"] == "ok", done
    [early] = webhook_entries()
    assert (early.status, early.code) == ("error", "out_of_service")
    assert not ProcessedNotification.objects.exists()
    resent = send_notification(done["data"]["order_id"])
    assert resent.answer == {"status": "success"}, resent
    assert TrackedOrder.objects.get().status == "completed"
