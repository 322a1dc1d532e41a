"""Issue 27: an upstream that lies, the background recovery, notifications before the answer,
and the database as a fault (through Django's query hook, connection.execute_wrapper)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.test import Client

from adapters.invoicebox.models import SandboxMerchantOrderId
from adapters.invoicebox.sandbox import DEMO_TOKEN, clear_faults, send_notification, set_faults
from audit import spool
from audit.journal import verify_chain
from audit.models import JournalEntry
from tests.conftest import Assistant, order_args, sandbox_orders
from tests.reliability.conftest import webhook_entries
from tools import outbox, recovery
from tools.models import (
    Ceiling,
    CeilingKind,
    Operation,
    OutboxTask,
    PendingConfirmation,
    ProcessedNotification,
    TrackedOrder,
)

Capture = Callable[..., Any]


@pytest.fixture(autouse=True)
def _spool_and_timeout(settings: Any, tmp_path: Path) -> None:
    settings.INVOICEBOX_TIMEOUT_SECONDS = 0.3
    settings.GATEWAY_STATE_DIR = str(tmp_path)


def _prepare(assistant: Assistant, **changes: Any) -> dict[str, Any]:
    args = order_args(**changes)
    _, first = assistant.call("create_order", args)
    assert first["status"] == "confirmation_required", first
    return {**args, "confirmation_token": first["confirmation"]["token"]}


def _age_operations(seconds: float = 3600) -> None:
    """Move the operations' last request back in time, past the stale period."""
    for operation in Operation.objects.all():
        Operation.objects.filter(pk=operation.pk).update(
            started_at=operation.started_at - timedelta(seconds=seconds))


def _repeated_creates() -> int:
    return sum(SandboxMerchantOrderId.objects.values_list("repeated_creates", flat=True))


def test_a_503_after_the_order_was_stored_is_unknown_counted_and_recovered(
        assistant: Assistant, client: Client):
    Ceiling.objects.create(contour=assistant.contour, kind=CeilingKind.PER_DAY, currency="RUB",
                           limit=36600)
    confirmed = _prepare(assistant, description="503 после записи")
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
        assistant: Assistant, client: Client):
    confirmed = _prepare(assistant, description="Чужой номер")
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
        assistant: Assistant, client: Client):
    confirmed = _prepare(assistant, description="Рано")
    set_faults(DEMO_TOKEN, fail_next=1)  # a 503 before anything is stored
    _, first = assistant.call("create_order", confirmed)
    clear_faults(DEMO_TOKEN)
    _, early = assistant.call("create_order", confirmed)

    assert first["code"] == "outcome_unknown"
    assert early["code"] == "outcome_unknown", early
    assert early["data"]["retry_after_seconds"] > 0
    assert sandbox_orders(client) == []
    _age_operations()
    _, late = assistant.call("create_order", confirmed)
    assert late["status"] == "ok", late
    assert len(sandbox_orders(client)) == 1 and _repeated_creates() == 0


def test_the_sweep_resolves_a_lost_create_and_its_payment_notification_is_accepted(
        assistant: Assistant, client: Client):
    confirmed = _prepare(assistant, description="Потерянный ответ")
    set_faults(DEMO_TOKEN, drop_response_after_create=True)
    _, lost = assistant.call("create_order", confirmed)
    clear_faults(DEMO_TOKEN)
    assert lost["code"] == "outcome_unknown"
    [order] = sandbox_orders(client)
    assert not TrackedOrder.objects.exists()

    assert recovery.resolve_operations() == {}  # not stale yet: left to its caller
    _age_operations()
    assert recovery.resolve_operations() == {"found": 1}

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
    confirmed = _prepare(assistant, description="Не дошёл")
    set_faults(DEMO_TOKEN, reset_next=1)
    _, lost = assistant.call("create_order", confirmed)
    clear_faults(DEMO_TOKEN)
    assert lost["code"] == "outcome_unknown"
    _age_operations()

    assert recovery.resolve_operations() == {"absent": 1}
    assert Operation.objects.get().state == "failed"
    _, retried = assistant.call("create_order", confirmed)
    assert retried["status"] == "ok", retried
    assert len(sandbox_orders(client)) == 1


def test_a_notification_before_the_create_answer_is_out_of_service_then_accepted(
        assistant: Assistant, client: Client):
    confirmed = _prepare(assistant, description="Уведомление раньше ответа")
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


@contextmanager
def database_down(when: Callable[[str], bool] = lambda sql: True) -> Iterator[None]:
    """Every query that `when` picks fails as with a cut connection."""

    def refuse(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if when(sql):
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(refuse):
        yield


# Without the test's own transaction: a server has none around a call, and the spool is only
# for entries no caller's transaction depends on.
@pytest.mark.django_db(transaction=True)
def test_a_database_down_is_an_envelope_and_its_entry_reaches_the_journal_later(
        assistant: Assistant):
    with database_down():
        status, answer = assistant.call("get_order", {"order_id": "x" * 36})

    assert status == 503, answer
    assert answer["code"] == "database_unavailable"
    assert answer["journal_id"] is None and answer["journal_pending"]
    assert spool.pending() == 1
    # The database is back: the next journaled call drains the spool first.
    assistant.call("find_orders", {"page_size": 1})
    entry = JournalEntry.objects.get(arguments___spooled__id=answer["journal_pending"])
    assert (entry.code, entry.channel) == ("database_unavailable", "rest")
    assert spool.pending() == 0
    assert verify_chain() is None


@pytest.mark.django_db(transaction=True)
def test_the_database_lost_after_the_upstream_create_is_unknown_then_recovered(
        assistant: Assistant, client: Client):
    confirmed = _prepare(assistant, description="База пропала после создания")
    cut_at: list[str] = []

    def from_the_tracking_on(sql: str) -> bool:
        """Down from the first write after the upstream create (tracking the order) on."""
        if "tools_trackedorder" in sql:
            cut_at.append(sql)
        return bool(cut_at)

    with database_down(from_the_tracking_on):
        status, cut = assistant.call("create_order", confirmed)

    assert (status, cut["code"]) == (504, "outcome_unknown"), cut
    assert cut["journal_pending"]
    [order] = sandbox_orders(client)
    assert Operation.objects.get().state == "in_flight"
    _age_operations()
    assert recovery.resolve_operations() == {"found": 1}
    assert TrackedOrder.objects.get().order_id == order["id"]
    spool.drain()
    assert JournalEntry.objects.filter(arguments___spooled__id=cut["journal_pending"]).exists()


def test_an_outbox_task_lost_by_the_broker_is_sent_again_until_done(
        settings: Any, assistant: Assistant):
    settings.CELERY_TASK_ALWAYS_EAGER = False  # memory:// broker: sent, never consumed
    from config.celery import app

    app.conf.task_always_eager = False
    settings.GATEWAY_OUTBOX_LEASE_SECONDS = 0.0
    try:
        item = outbox.enqueue("tools.tasks.process_notification", 10**9)
        assert outbox.sweep_outbox() == 1
        assert OutboxTask.objects.get().attempts == 2
        from tools.tasks import process_notification

        assert process_notification.run(10**9, outbox_id=item.pk) == "gone"
        assert OutboxTask.objects.get().done_at is not None
        assert outbox.sweep_outbox() == 0
    finally:
        app.conf.task_always_eager = True
