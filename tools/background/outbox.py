"""The outbox: tasks that must run even when the broker loses them.

enqueue() records the task in the caller's transaction, so it exists iff its cause committed,
and sends it after commit. The task reports done() when it finished (whatever its verdict);
until then the beat sweep (sweep_outbox) sends it again each time its lease runs out, with a
growing lease, at most MAX_ATTEMPTS times. So a Redis that is down at commit, a message lost
with a killed worker or a broker restarted empty delay the work, never lose it. Every task
sent through here is idempotent (tools/background/tasks.py): running twice changes nothing more.
The pattern is the operator alerts' (tools/background/alerts.py sweep_alerts), for tasks with no row of
their own to sweep.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from celery import current_app, shared_task
from django.conf import settings
from django.db import transaction
from django.db.models.functions import Now

from tools import clock
from tools.models import OutboxTask

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 12
SWEEP_BATCH = 200


def lease(attempts: int) -> timedelta:
    """How long a sent task may take before it is sent again: the base, doubled per attempt,
    at most an hour."""
    base: float = settings.GATEWAY_OUTBOX_LEASE_SECONDS
    return timedelta(seconds=min(3600.0, base * 2 ** max(0, attempts - 1)))


def enqueue(task: str, *args: Any) -> OutboxTask:
    """Record the task with its cause (call inside the cause's transaction); send on commit."""
    now = clock.now()
    item = OutboxTask.objects.create(
        task=task, args=list(args), created_at=now, attempts=1, next_attempt_at=now + lease(1)
    )
    # robust: a broker that is down at commit is logged; the sweep sends it later.
    transaction.on_commit(lambda: _send(item), robust=True)
    return item


def done(outbox_id: int | None) -> None:
    """Called by the task when it finished: the sweep leaves it alone from now on."""
    if outbox_id is not None:
        OutboxTask.objects.filter(pk=outbox_id, done_at__isnull=True).update(done_at=Now())


@shared_task(name="tools.outbox.sweep_outbox")
def sweep_outbox() -> int:
    """Beat: send again what was never reported done once its lease ran out; returns how many.

    Bounded (SWEEP_BATCH per run); each item is taken by a conditional update, so two sweeps
    never send one item twice in one round.
    """
    due = list(
        OutboxTask.objects.filter(
            done_at__isnull=True, attempts__lt=MAX_ATTEMPTS, next_attempt_at__lte=Now()
        ).order_by("next_attempt_at")[:SWEEP_BATCH]
    )
    now = clock.now()
    sent = 0
    for item in due:
        taken = OutboxTask.objects.filter(
            pk=item.pk,
            attempts=item.attempts,
            done_at__isnull=True,
        ).update(attempts=item.attempts + 1, next_attempt_at=now + lease(item.attempts + 1))
        if taken:
            item.attempts += 1
            if item.attempts == MAX_ATTEMPTS:
                logger.error("outbox task %s %s: last attempt", item.task, item.args)
            _send(item)
            sent += 1
    return sent


def _send(item: OutboxTask) -> None:
    task = current_app.tasks[item.task]
    try:
        task.apply_async(args=item.args, kwargs={"outbox_id": item.pk})
    except Exception:
        if current_app.conf.task_always_eager:
            raise  # eager: the task itself failed; the caller (on_commit, robust) logs it
        logger.exception(
            "outbox task %s %s not sent; the sweep sends it again", item.task, item.args
        )
