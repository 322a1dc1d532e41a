"""Celery tasks: expire stale confirmations, refresh open orders, confirm processed notifications.

Every task takes ids, is idempotent (running it twice changes nothing more than once) and is
queued after commit by its caller. Only upstream failures that can pass are retried: an
unavailable or rate-limited Invoicebox; a refused token or a vanished order is logged, not
retried. Reads only: no task ever writes to Invoicebox.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from celery import Task, shared_task
from django.conf import settings
from django.db import transaction
from django.db.models.functions import Now
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from invoicebox import statuses
from invoicebox.client import RETRYABLE_KINDS, InvoiceboxError, Order
from tools import events
from tools.background import outbox
from tools.models import (
    ConfirmationStatus,
    Contour,
    PendingConfirmation,
    ProcessedNotification,
    TrackedOrder,
)
from tools.pipeline.confirmations import EXPIRABLE
from tools.pipeline.upstream_calls import contour_client

logger = logging.getLogger(__name__)

OPEN_CONFIRMATIONS = (ConfirmationStatus.PENDING, ConfirmationStatus.APPROVED)
# Orders whose status can still change by the payer's hand ("": not read back yet).
OPEN_ORDER_STATUSES = (*sorted(statuses.OPEN), "")
MAX_RETRIES = 5


@shared_task(name="tools.tasks.expire_confirmations")
def expire_confirmations() -> int:
    """Open confirmations past their expiry become `expired`; returns how many did.

    One conditional UPDATE, so concurrent runs never double-count. A confirmation whose
    execution may have happened (in flight, unknown, done) is left alone: its outcome is what
    counts. The rule is confirmations.EXPIRABLE, which the resolve path applies too.
    """
    return PendingConfirmation.objects.filter(
        EXPIRABLE,
        status__in=OPEN_CONFIRMATIONS,
        expires_at__lte=Now(),
    ).update(status=ConfirmationStatus.EXPIRED)


@shared_task(name="tools.tasks.refresh_open_orders")
def refresh_open_orders() -> int:
    """Queue a status refresh for every open order issued recently; returns how many."""
    since = timezone.now() - timedelta(days=settings.GATEWAY_REFRESH_MAX_AGE_DAYS)
    ids = list(
        TrackedOrder.objects.filter(status__in=OPEN_ORDER_STATUSES, created_at__gte=since)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for pk in ids:
        refresh_order.delay(pk)
    return len(ids)


@shared_task(bind=True, name="tools.tasks.refresh_order", max_retries=MAX_RETRIES)
def refresh_order(self: Task, tracked_order_id: int) -> str:
    """Read one tracked order upstream and store its status; returns the status seen."""
    tracked = TrackedOrder.objects.select_related("contour").filter(pk=tracked_order_id).first()
    if tracked is None:
        return "gone"
    try:
        order = _read_upstream(self, tracked)
    except _Skip as skip:
        return f"skipped: {skip}"
    if order is None:
        return "not_found"
    changed = _store(tracked.pk, order)
    if changed:
        _note(
            tracked.contour,
            "read",
            "ok",
            "status_refreshed",
            f"счёт {tracked.merchant_order_id}: статус {changed} → {order.status}",
            {"order_id": tracked.order_id, "status": order.status},
        )
    return order.status


@shared_task(bind=True, name="tools.tasks.process_notification", max_retries=MAX_RETRIES)
def process_notification(
    self: Task, processed_notification_id: int, outbox_id: int | None = None
) -> str:
    """After a notification was accepted: confirm it by reading the order upstream.

    Agreement is journaled as notification_confirmed; a notification the API contradicts
    (a paid claim for an order Invoicebox shows unpaid) as notification_unconfirmed, for a
    human to look at: its key may have leaked. The stored status follows the API. Queued
    through the outbox (tools/background/outbox.py): any verdict reports it done; a retry does not.
    """
    verdict = _confirm_notification(self, processed_notification_id)
    outbox.done(outbox_id)
    return verdict


def _confirm_notification(self: Task, processed_notification_id: int) -> str:
    processed = (
        ProcessedNotification.objects.select_related("contour")
        .filter(pk=processed_notification_id)
        .first()
    )
    if processed is None:
        return "gone"
    tracked = TrackedOrder.objects.filter(
        contour=processed.contour, order_id=processed.order_id
    ).first()
    if tracked is None:
        return "gone"
    try:
        order = _read_upstream(self, tracked)
    except _Skip as skip:
        return f"skipped: {skip}"
    facts = {
        "notification_id": processed.notification_id,
        "order_id": processed.order_id,
        "notified_status": processed.status,
        "upstream_status": order.status if order else None,
    }
    if order is not None and order.status == processed.status:
        _store(tracked.pk, order)
        _note(
            processed.contour,
            "notify",
            "ok",
            "notification_confirmed",
            f"Инвойсбокс подтвердил статус {order.status} счёта {tracked.merchant_order_id}",
            facts,
        )
        return "confirmed"
    if order is not None:
        _store(tracked.pk, order)
    _note(
        processed.contour,
        "notify",
        "error",
        "notification_unconfirmed",
        f"уведомление о статусе {processed.status} счёта {tracked.merchant_order_id} API не "
        f"подтвердил (там {order.status if order else 'счёта нет'}); проверьте ключ подписи",
        facts,
    )
    return "unconfirmed"


def _read_upstream(task: Task, tracked: TrackedOrder) -> Order | None:
    contour = tracked.contour
    client = contour_client(contour)
    try:
        with client:
            return client.get_order(tracked.order_id)
    except InvoiceboxError as error:
        if error.kind in RETRYABLE_KINDS and not task.request.is_eager:
            # Below the broker's visibility timeout: a message held longer is delivered twice.
            countdown = min(
                error.retry_after or 5 * 2**task.request.retries,
                settings.CELERY_VISIBILITY_TIMEOUT_SECONDS / 2,
            )
            raise task.retry(exc=error, countdown=countdown) from None
        logger.warning(
            "task %s: order %s of contour %s not read (%s): %s",
            task.name,
            tracked.order_id,
            contour.slug,
            error.kind,
            error.message,
        )
        raise _Skip(error.kind) from None


class _Skip(Exception):
    """A failure retrying can't fix (or an eager run): the task ends, logged, unretried."""


def _store(tracked_pk: int, order: Order) -> str:
    """Write the upstream status; returns the previous one when it changed, else ''."""
    with transaction.atomic():
        tracked = TrackedOrder.objects.select_for_update().get(pk=tracked_pk)
        if tracked.status == order.status and (tracked.paid_at or not order.paid_at):
            return ""
        previous = tracked.status
        tracked.status = order.status
        if order.paid_at and not tracked.paid_at:
            tracked.paid_at = _moment(order.paid_at)
        tracked.save(update_fields=["status", "paid_at", "updated_at"])
        return previous or "—"


def _moment(value: str) -> datetime | None:
    return parse_datetime(value)


def _note(
    contour: Contour, phase: str, status: str, code: str, message: str, facts: dict[str, Any]
) -> None:
    events.order_sync(contour, phase=phase, status=status, code=code, message=message, facts=facts)
