"""The outbox: a task the broker lost is sent again until it is done."""

from __future__ import annotations

from typing import Any

from tests.conftest import Assistant
from tools.background import outbox
from tools.models import OutboxTask


def test_an_outbox_task_lost_by_the_broker_is_sent_again_until_done(
    settings: Any, assistant: Assistant
):
    settings.CELERY_TASK_ALWAYS_EAGER = False  # memory:// broker: sent, never consumed
    from config.celery import app

    app.conf.task_always_eager = False
    settings.GATEWAY_OUTBOX_LEASE_SECONDS = 0.0
    try:
        item = outbox.enqueue("tools.tasks.process_notification", 10**9)
        assert outbox.sweep_outbox() == 1
        assert OutboxTask.objects.get().attempts == 2
        from tools.background.tasks import process_notification

        assert process_notification.run(10**9, outbox_id=item.pk) == "gone"
        assert OutboxTask.objects.get().done_at is not None
        assert outbox.sweep_outbox() == 0
    finally:
        app.conf.task_always_eager = True
