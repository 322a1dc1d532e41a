"""Invoicebox payment notifications, tools side: the webhook view, once-only processing, journal.

POST /invoicebox/notifications/<contour slug>. invoicebox/notify.py checks the
signature (with the contour's method and algorithm) and reads the body; here the notification
meets what this gateway issued (TrackedOrder), is processed once per (contour, id, status)
(ProcessedNotification: a notification's id is its order's, so "hold" then "completed" are
two), and every notification, refused ones included, lands in the journal (channel webhook,
phase notify). The answer is always HTTP 200 with JSON, as Invoicebox requires; the decisions
behind each answer are in docs/invoicebox-api.md (payment notifications).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, IntegrityError, transaction
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.csrf import csrf_exempt

from invoicebox import notify, statuses
from invoicebox.notify import (
    SUCCESS,
    Answer,
    NotificationError,
    OrderNotification,
    answer_from,
)
from tools import events
from tools.background import outbox
from tools.models import Contour, InvoiceboxMode, Operation, ProcessedNotification, TrackedOrder
from tools.pipeline.confirmations import UNRESOLVED_STATES

logger = logging.getLogger(__name__)

CHANNEL = "webhook"
PHASE = "notify"
PAID = statuses.PAID
HOLD = "hold"
# Terminal statuses a notification may move an unpaid order to; anything else is recorded only.
CLOSED = frozenset({"canceled", "cancelled", "expired"})
# Statuses nothing has been paid or held in yet: a "hold" notification may move them on.
UNPAID = frozenset({"created", "draft", ""})


@dataclass
class _Record:
    """What the journal gets for one notification."""

    slug: str
    actor: str
    facts: dict[str, Any] = field(default_factory=dict)
    secrets: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)


@csrf_exempt
def receive(request: HttpRequest, slug: str) -> JsonResponse:
    """The webhook. Never anything but 200 + JSON for a POST; other methods get 405."""
    if request.method != "POST":
        return JsonResponse(
            {"status": "error", "code": "method_not_allowed", "message": "только POST"}, status=405
        )
    actor = f"invoicebox@{request.META.get('REMOTE_ADDR', '')}"
    try:
        body = request.body
    except RequestDataTooBig:
        body = b"x" * (notify.MAX_BODY_BYTES + 1)  # refused by the checks below, journaled
    try:
        answer = process(slug, body, request.headers.get(notify.SIGNATURE_HEADER), actor=actor)
    except DatabaseError:
        # Our database is away: nothing was applied, so Invoicebox is asked to retry.
        logger.exception("notification for contour %s: database unavailable", slug[:64])
        answer = _journal(
            _Record(slug=slug[:64], actor=actor),
            notify.error(
                "out_of_service", "база данных шлюза временно недоступна; повторите уведомление"
            ),
        )
    return JsonResponse(answer.as_dict(), status=200)


def process(slug: str, body: bytes, signature: str | None, *, actor: str = "invoicebox") -> Answer:
    """Check, process once and journal one notification; returns what Invoicebox is told."""
    record = _Record(slug=slug[:64], actor=actor)
    contour = Contour.objects.filter(slug=slug).first()
    if contour is None:
        # No contour, no key: nothing can be verified, nothing is changed.
        record.slug, record.facts = "", {"contour_slug": slug[:64]}
        return _refuse(
            record, notify.error("signature_error", "подпись нечем проверить: такого контура нет")
        )
    record.secrets = [s for s in (contour.notification_key, contour.api_token) if s]
    if not contour.notification_key:
        return _refuse(
            record, notify.error("signature_error", "у контура не задан ключ подписи уведомлений")
        )
    if (
        contour.notification_key == settings.INVOICEBOX_SANDBOX_NOTIFICATION_KEY
        and contour.mode != InvoiceboxMode.SANDBOX
    ):
        # Published with the sandbox: anyone could sign "paid" with it.
        return _refuse(
            record,
            notify.error(
                "signature_error",
                "ключ подписи контура — опубликованный ключ песочницы; вне "
                "песочницы он ничего не доказывает: задайте ключ магазина",
            ),
        )
    try:
        valid = notify.signature_valid(
            body,
            signature,
            contour.notification_key,
            method=contour.notification_signature_method,
            algorithm=contour.notification_signature_algorithm,
        )
    except ValueError as error:  # a setting written past the admin's choices
        return _refuse(record, notify.error("signature_error", str(error)))
    if not valid:
        reason = (
            "нет подписи X-Signature"
            if not signature
            else (
                "подпись X-Signature не сошлась (метод "
                f"{contour.notification_signature_method}, алгоритм "
                f"{contour.notification_signature_algorithm})"
            )
        )
        return _refuse(record, notify.error("signature_error", reason))
    try:
        note = notify.parse(body)
    except NotificationError as error:
        # Signed by Invoicebox yet unreadable: out_of_service makes it retry after our fix.
        return _refuse(record, notify.error("out_of_service", str(error)))
    record.facts = note.facts()
    if note.merchant_id.lower() != contour.merchant_id.lower():
        return _refuse(
            record, notify.error("order_not_found", "уведомление о счёте другого магазина")
        )
    if note.is_probe:
        return _journal(record, SUCCESS, code="probe", message="проверка связи Инвойсбокс")
    return _apply(contour, note, record)


def _apply(contour: Contour, note: OrderNotification, record: _Record) -> Answer:
    """The state change, its once-only record and its journal entry commit together."""
    with transaction.atomic():
        tracked = _tracked_order(contour, note)
        # Checked under the order's row lock: a concurrent copy of this notification waits
        # here and then sees the first one's record.
        seen = _processed(contour, note)
        if seen is not None:
            return _journal(
                record,
                answer_from(seen.answer),
                code="duplicate",
                message="это уведомление уже обработано; ответ прежний",
            )
        if tracked is None and _create_in_flight(contour, note):
            # Our create of this order has not come back yet (or its outcome is being
            # recovered): Invoicebox retries out_of_service, and by then the order is tracked.
            return _journal(
                record,
                notify.error(
                    "out_of_service",
                    f"счёт {note.merchant_order_id} ещё создаётся: ответ "
                    "Инвойсбокс на его создание не получен; повторите позже",
                ),
            )
        if tracked is None:
            return _journal(
                record,
                notify.error(
                    "order_not_found",
                    f"счёт {note.merchant_order_id or note.id} этот шлюз не выставлял",
                ),
            )
        problem = _mismatch(tracked, note)
        if problem is not None:
            return _journal(record, problem)
        if note.id != tracked.order_id and not (note.is_paid and tracked.status == PAID):
            # Found by our merchantOrderId alone: another Invoicebox order carries our number.
            # Its payment is not this order's; a person looks at it (the journal names both).
            return _journal(
                record,
                notify.error(
                    "order_not_found",
                    f"уведомление о другом счёте Инвойсбокс ({note.id}) с "
                    f"номером нашего счёта {tracked.merchant_order_id} "
                    f"({tracked.order_id}): не учтено, проверьте вручную",
                ),
            )
        if note.is_paid and tracked.status == PAID:
            if _paid_by_another(contour, tracked, note):
                return _journal(
                    record,
                    notify.error(
                        "order_already_paid",
                        f"счёт {tracked.merchant_order_id} уже оплачен другим платежом",
                    ),
                )
            # The same payment, already known (the status poll saw it first): a retry of it
            # is answered success, as the docs ask for a notification processed before.
            answer, code = SUCCESS, "already_applied"
            message = f"счёт {tracked.merchant_order_id}: эта оплата уже учтена"
        elif note.is_paid and tracked.status in CLOSED:
            # Money taken for an order already closed: the shop won't deliver. The payment is
            # still a fact, so the order is marked paid for refunds and the status poll.
            answer, code = _unavailable(tracked), "shipping_unavailable"
            message = answer.message
            _update(tracked, note)
        else:
            answer, code, message = SUCCESS, "", _update(tracked, note)
        try:
            with transaction.atomic():
                processed = ProcessedNotification.objects.create(
                    contour=contour,
                    notification_id=note.id,
                    order_id=tracked.order_id,
                    status=note.status,
                    answer=answer.as_dict(),
                )
        except IntegrityError:  # a concurrent copy that found no tracked row to lock
            return _journal(
                record,
                answer,
                code="duplicate",
                message="это уведомление уже обработано; ответ прежний",
            )
        # Confirmed by a read of the order upstream (a notification is a claim, the API is the
        # record). Through the outbox, in this transaction: a broker that is down when it
        # commits delays the read, never loses it (tools/background/outbox.py).
        outbox.enqueue("tools.tasks.process_notification", processed.pk)
        return _journal(record, answer, code=code, message=message)


def _create_in_flight(contour: Contour, note: OrderNotification) -> bool:
    """Whether an execution of ours that may have created this order is still unresolved."""
    return (
        bool(note.merchant_order_id)
        and Operation.objects.filter(
            contour=contour, merchant_order_id=note.merchant_order_id, state__in=UNRESOLVED_STATES
        ).exists()
    )


def _processed(contour: Contour, note: OrderNotification) -> ProcessedNotification | None:
    return ProcessedNotification.objects.filter(
        contour=contour, notification_id=note.id, status=note.status
    ).first()


def _paid_by_another(contour: Contour, tracked: TrackedOrder, note: OrderNotification) -> bool:
    """True when the tracked order's payment came from another Invoicebox order (same
    merchantOrderId, another id) than the one this notification is about."""
    if note.id != tracked.order_id:
        return True
    return (
        ProcessedNotification.objects.filter(
            contour=contour,
            order_id=tracked.order_id,
            status=PAID,
        )
        .exclude(notification_id=note.id)
        .exists()
    )


def _unavailable(tracked: TrackedOrder) -> Answer:
    """A payment for an order already closed: the goods or service won't be provided. The
    answer returns no money by itself (docs: notification/shipping-unavailable.md)."""
    return notify.error(
        "shipping_unavailable",
        f"счёт {tracked.merchant_order_id} уже закрыт ({tracked.status}), а пришла оплата: "
        "товар или услуга не будут предоставлены; деньги сами не вернутся, нужен возврат",
    )


def _tracked_order(contour: Contour, note: OrderNotification) -> TrackedOrder | None:
    orders = TrackedOrder.objects.select_for_update().filter(contour=contour)
    found = orders.filter(order_id=note.id).first()
    if found is None and note.merchant_order_id:
        found = orders.filter(merchant_order_id=note.merchant_order_id).first()
    return found


def _mismatch(tracked: TrackedOrder, note: OrderNotification) -> Answer | None:
    # Another currency is another sum: order_wrong_amount is the documented code for it. A
    # notification that names no currency proves no sum either.
    if not note.currency_id:
        return notify.error(
            "order_wrong_amount",
            f"в уведомлении нет currencyId, а счёт выставлен в {tracked.currency}",
        )
    if note.currency_id != tracked.currency:
        return notify.error(
            "order_wrong_amount",
            f"валюта {note.currency_id}, а счёт выставлен в {tracked.currency}",
        )
    if note.amount_kopecks != tracked.amount:
        return notify.error(
            "order_wrong_amount",
            f"сумма {note.amount} не равна сумме счёта {tracked.amount / 100:.2f}",
        )
    return None


def _update(tracked: TrackedOrder, note: OrderNotification) -> str:
    """Move the tracked order on: a payment always (it is a fact), a hold only from unpaid,
    a closing status never over a payment."""
    if note.is_paid:
        paid_at = note.model_extra.get("paidAt") if note.model_extra else None
        tracked.status = PAID
        tracked.paid_at = (
            parse_datetime(paid_at) if isinstance(paid_at, str) else None
        ) or timezone.now()
        tracked.save(update_fields=["status", "paid_at", "updated_at"])
        return f"счёт {tracked.merchant_order_id} оплачен"
    if note.status == HOLD and tracked.status in UNPAID:
        tracked.status = HOLD
        tracked.save(update_fields=["status", "updated_at"])
        return f"счёт {tracked.merchant_order_id}: деньги заблокированы (hold)"
    if note.status in CLOSED and tracked.status != PAID:
        tracked.status = note.status
        tracked.save(update_fields=["status", "updated_at"])
        return f"счёт {tracked.merchant_order_id}: статус {note.status}"
    return f"счёт {tracked.merchant_order_id}: статус {note.status} принят к сведению"


def _refuse(record: _Record, answer: Answer) -> Answer:
    return _journal(record, answer)


def _journal(record: _Record, answer: Answer, *, code: str = "", message: str = "") -> Answer:
    if answer.status == "success":
        status = "ok"
    else:
        status = "error" if answer.code == "out_of_service" else "rejected"
    events.payment_notification(
        record.slug,
        channel=CHANNEL,
        actor=record.actor,
        phase=PHASE,
        facts=record.facts,
        status=status,
        code=code or answer.code or "ok",
        message=message or answer.message,
        duration_ms=int((time.monotonic() - record.started) * 1000),
        secrets=record.secrets,
    )
    if answer.status != "success":
        logger.info("notification for contour %s refused: %s", record.slug, answer.code)
    return answer
