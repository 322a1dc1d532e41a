"""Operators who are told: email and a signed webhook when a write starts waiting for them.

When the core prepares a confirmation that needs a human, each operator of the contour gets
an email (Django's email backend) and, when the contour names one, its webhook gets a JSON
body signed with HMAC-SHA256 (header X-Gateway-Signature: sha256=<hex>). A reminder follows
before the approval deadline. Each message is an OperatorAlert row (unique per confirmation,
kind, transport and recipient, so queuing twice sends once), delivered by a Celery task that
takes its id, retries with backoff what can pass on retry, and journals every attempt
(channel celery, phase notify). Nothing secret and no customer data goes out, neither in the
webhook nor in the email (no name, no INN: mail passes relays and mailboxes we don't control,
and the operator decides on the approval page, signed in, which shows them); the webhook URL
(a Telegram relay URL holds a bot token) never enters the journal.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import smtplib
from datetime import datetime, timedelta
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import httpx
from celery import Task, shared_task
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from tools import catalog, clock, events, secret_box
from tools.models import (
    AlertKind,
    AlertState,
    AlertTransport,
    ConfirmationStatus,
    Contour,
    OperatorAlert,
    PendingConfirmation,
    Role,
)
from tools.params import format_rub
from tools.people import roles
from tools.public_http import NonPublicAddress, PublicOnlyTransport, is_internal_literal

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Gateway-Signature"
# A write waiting for an operator expires at the end of the contour's approval window
# (confirmations.py sets expires_at from approval_window_hours for such writes).
DEADLINE_FIELD = "expires_at"
PERMANENT_HTTP = frozenset(range(400, 500)) - {408, 425, 429}


def webhook_url_problem(url: str) -> str:
    """Why the gateway must not post alerts to this URL ('' when it may).

    An owner chooses the URL and the gateway's own network sends to it: in production only
    https to a public host name or address (no loopback, private or link-local literal), so an
    owner cannot point it at the gateway's neighbours. Outside production loopback http is fine
    (a relay on the same machine, the tests). Host names are not resolved here: the sending
    connection resolves and checks them (tools.public_http).
    """
    parts = urlsplit(url or "")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "нужен адрес http(s)://хост/…"
    if not settings.PRODUCTION:
        return ""
    if parts.scheme != "https":
        return "в рабочем режиме вебхук только по https"
    # Stricter than "not loopback" (invoicebox.hosts): the send-time rule of
    # tools.public_http, so a literal refused there is refused here, before anything is queued.
    if is_internal_literal(parts.hostname):
        return "вебхук на локальный или внутренний адрес запрещён"
    return ""


def approval_deadline(confirmation: PendingConfirmation) -> datetime:
    return getattr(confirmation, DEADLINE_FIELD)


def waiting_started(confirmation: PendingConfirmation) -> None:
    """The core calls this when a confirmation needs a human; the alerts go after commit."""
    confirmation_id = str(confirmation.id)
    transaction.on_commit(lambda: _queue_safely(confirmation_id, AlertKind.WAITING.value))


def _queue_safely(confirmation_id: str, kind: str) -> None:
    # Telling operators must never fail the assistant's call (a broker down, a bug here):
    # logged, and the sweep queues what was missed.
    try:
        queue_alerts.delay(confirmation_id, kind)
    except Exception:
        logger.exception("alerts of confirmation %s not queued; the sweep will", confirmation_id)


def unreachable_operators(contour: Contour) -> list[str]:
    """Operators of the contour an alert cannot reach (no email address): the owner is told
    on the contour's page, before the first alert fails in the dashboard."""
    return list(
        roles.holders(contour, Role.OPERATOR)
        .filter(email="")
        .order_by("username")
        .values_list("username", flat=True)
    )


def is_waiting(confirmation: PendingConfirmation, now: datetime | None = None) -> bool:
    return (
        confirmation.status == ConfirmationStatus.PENDING
        and confirmation.requires_approval
        and approval_deadline(confirmation) > (now or clock.now())
    )


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def backoff(attempts: int) -> int:
    """Seconds before the next attempt: 30 s, 1, 2, 4 ... minutes, at most an hour."""
    return min(3600, 30 * 2 ** max(0, attempts - 1))


@shared_task(name="tools.alerts.queue_alerts")
def queue_alerts(confirmation_id: str, kind: str) -> int:
    """Create the alerts of one waiting confirmation (idempotent); returns how many are new."""
    confirmation = (
        PendingConfirmation.objects.select_related("contour").filter(pk=confirmation_id).first()
    )
    if confirmation is None or not is_waiting(confirmation):
        return 0
    contour = confirmation.contour
    recipients = [
        (AlertTransport.EMAIL, str(user.pk))
        for user in roles.holders(contour, Role.OPERATOR).order_by("pk")
    ]
    if contour.alert_webhook_url:
        recipients.append((AlertTransport.WEBHOOK, ""))
    created_ids = []
    with transaction.atomic():
        for transport, recipient in recipients:
            alert, created = OperatorAlert.objects.get_or_create(
                confirmation=confirmation,
                kind=kind,
                transport=transport,
                recipient=recipient,
                defaults={"contour": contour},
            )
            if created:
                created_ids.append(alert.pk)
        for alert_id in created_ids:
            transaction.on_commit(partial(deliver_alert.delay, alert_id))
    return len(created_ids)


@shared_task(name="tools.alerts.sweep_alerts")
def sweep_alerts() -> int:
    """Beat: queue reminders for items close to their deadline and re-queue due retries."""
    now = clock.now()
    soon = now + timedelta(seconds=settings.GATEWAY_ALERT_REMINDER_SECONDS)
    reminded = OperatorAlert.objects.filter(confirmation=OuterRef("pk"), kind=AlertKind.REMINDER)
    due_reminders = list(
        PendingConfirmation.objects.filter(
            status=ConfirmationStatus.PENDING,
            requires_approval=True,
            **{f"{DEADLINE_FIELD}__gt": now, f"{DEADLINE_FIELD}__lte": soon},
        )
        .filter(~Exists(reminded))
        .values_list("pk", flat=True)
    )
    for confirmation_id in due_reminders:
        queue_alerts.delay(str(confirmation_id), AlertKind.REMINDER.value)
    # Waiting items whose first alerts were never queued (the broker was down at the time).
    told = OperatorAlert.objects.filter(confirmation=OuterRef("pk"), kind=AlertKind.WAITING)
    someone = Q(contour__alert_webhook_url__gt="") | Q(contour__roles__role=Role.OPERATOR)
    missed = list(
        PendingConfirmation.objects.filter(
            someone,
            status=ConfirmationStatus.PENDING,
            requires_approval=True,
            created_at__lte=now - timedelta(minutes=2),
            **{f"{DEADLINE_FIELD}__gt": now},
        )
        .filter(~Exists(told))
        .values_list("pk", flat=True)
        .distinct()
    )
    for confirmation_id in missed:
        queue_alerts.delay(str(confirmation_id), AlertKind.WAITING.value)
    # Due retries, and first attempts whose queued message was lost (never picked up).
    lost = Q(attempts=0, created_at__lte=now - timedelta(minutes=2))
    retries = list(
        OperatorAlert.objects.filter(
            Q(attempts__gt=0) | lost, state=AlertState.PENDING, next_attempt_at__lte=now
        ).values_list("pk", flat=True)
    )
    for alert_id in retries:
        deliver_alert.delay(alert_id)
    return len(due_reminders) + len(missed) + len(retries)


class DeliveryError(Exception):
    """A failed attempt; `permanent` when retrying cannot help (a 4xx, no email address)."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent


@shared_task(
    bind=True, name="tools.alerts.deliver_alert", max_retries=None
)  # the row counts attempts (GATEWAY_ALERT_MAX_ATTEMPTS)
def deliver_alert(self: Task, alert_id: int) -> str:
    """Send one alert once; a failure that can pass is retried with backoff."""
    alert = (
        OperatorAlert.objects.select_related("confirmation", "contour").filter(pk=alert_id).first()
    )
    if alert is None or alert.state != AlertState.PENDING:
        return alert.state if alert is not None else "gone"
    if not is_waiting(alert.confirmation):
        OperatorAlert.objects.filter(pk=alert.pk).update(state=AlertState.SKIPPED)
        return "obsolete"
    # Claimed by a conditional update that also leases it: a Celery retry and the sweep never
    # both send it; a worker that dies mid-send leaves it due again when the lease ends.
    now = timezone.now()
    lease = timedelta(seconds=2 * settings.GATEWAY_ALERT_TIMEOUT_SECONDS + 60)
    claimed = OperatorAlert.objects.filter(
        pk=alert.pk,
        state=AlertState.PENDING,
        attempts=alert.attempts,
        next_attempt_at__lte=now,
    ).update(attempts=F("attempts") + 1, next_attempt_at=now + lease)
    if not claimed:
        return "busy"
    attempt = alert.attempts + 1
    try:
        _send(alert)
    except DeliveryError as error:
        final = error.permanent or attempt >= settings.GATEWAY_ALERT_MAX_ATTEMPTS
        delay = backoff(attempt)
        OperatorAlert.objects.filter(pk=alert.pk).update(
            state=AlertState.FAILED if final else AlertState.PENDING,
            last_error=error.message[:300],
            next_attempt_at=timezone.now() + timedelta(seconds=delay),
        )
        _journal(
            alert,
            attempt,
            "error",
            "alert_failed" if final else "alert_retry",
            f"оповещение не доставлено (попытка {attempt}): {error.message}"
            + ("" if final else f"; повтор через {delay} с"),
        )
        if not final and not self.request.is_eager:
            raise self.retry(countdown=delay) from None
        return "failed" if final else "retry"
    OperatorAlert.objects.filter(pk=alert.pk).update(
        state=AlertState.SENT, sent_at=timezone.now(), last_error=""
    )
    _journal(alert, attempt, "ok", "alert_sent", f"оповещение доставлено (попытка {attempt})")
    return "sent"


def _send(alert: OperatorAlert) -> None:
    if alert.transport == AlertTransport.EMAIL:
        _send_email(alert)
    else:
        _send_webhook(alert)


def facts(confirmation: PendingConfirmation) -> dict[str, Any]:
    """What every alert may say: no customer, no arguments, no secret."""
    spec = catalog.get(confirmation.tool)
    return {
        "confirmation_id": str(confirmation.id),
        "contour": confirmation.contour.slug,
        "tool": confirmation.tool,
        "title": spec.title if spec else confirmation.tool,
        "amount": str(confirmation.amount) if confirmation.amount is not None else None,
        "currency": confirmation.currency or None,
        "amount_human": (
            format_rub(confirmation.amount, confirmation.currency or "RUB")
            if confirmation.amount is not None
            else ""
        ),
        "deadline": approval_deadline(confirmation).isoformat(),
        "approval_url": f"{settings.GATEWAY_SITE_URL}/approvals/{confirmation.id}/",
        "reason": confirmation.approval_reason,
    }


def _send_email(alert: OperatorAlert) -> None:
    user = get_user_model().objects.filter(pk=alert.recipient, is_active=True).first()
    if user is None or not user.email:
        raise DeliveryError("у оператора не указан адрес почты", permanent=True)
    data = facts(alert.confirmation)
    deadline = timezone.localtime(approval_deadline(alert.confirmation))
    reminder = alert.kind == AlertKind.REMINDER
    subject = (
        ("Напоминание: " if reminder else "Ждёт одобрения: ")
        + f"{data['title']}"
        + (f" на {data['amount_human']}" if data["amount_human"] else "")
        + f" ({alert.contour.name})"
    )
    body = "\n".join(
        [
            "Операция ждёт решения оператора."
            if not reminder
            else "Операция всё ещё ждёт решения оператора, срок скоро истечёт.",
            "",
            f"Контур: {alert.contour.name} ({alert.contour.slug})",
            f"Операция: {data['title']}",
            f"Сумма: {data['amount_human'] or '—'}",
            f"Решить до: {deadline:%d.%m.%Y %H:%M}",
            f"Почему нужен оператор: {data['reason'] or '—'}",
            "",
            f"Одобрить или отклонить: {data['approval_url']}",
        ]
    )
    try:
        send_mail(subject, body, None, [user.email], fail_silently=False)
    except (smtplib.SMTPException, OSError) as error:
        raise DeliveryError(f"почтовый сервер не принял письмо ({type(error).__name__})") from None


def _send_webhook(alert: OperatorAlert) -> None:
    contour = alert.contour
    if not contour.alert_webhook_url:
        raise DeliveryError("у контура больше нет адреса вебхука", permanent=True)
    problem = webhook_url_problem(contour.alert_webhook_url)
    if problem:
        raise DeliveryError(problem, permanent=True)
    payload = {
        "event": f"confirmation.{alert.kind}",
        "sent_at": timezone.now().isoformat(),
        **facts(alert.confirmation),
    }
    body = json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json; charset=utf-8",
        "User-Agent": "invoicebox-gateway-alerts",
    }
    if secret_box.is_unreadable(contour.alert_webhook_secret):
        # Never sent unsigned in its place: the relay would take it for one of ours.
        raise DeliveryError(
            "секрет подписи вебхука не читается (другой GATEWAY_SECRETS_KEY): "
            "введите его заново на странице контура",
            permanent=True,
        )
    if contour.alert_webhook_secret:
        headers[SIGNATURE_HEADER] = sign(contour.alert_webhook_secret, body)
    # In production the connection itself goes to public addresses only (tools.public_http):
    # the URL check above cannot see where a host name resolves at send time.
    transport = PublicOnlyTransport() if settings.PRODUCTION else None
    try:
        with httpx.Client(
            transport=transport, timeout=settings.GATEWAY_ALERT_TIMEOUT_SECONDS
        ) as client:
            response = client.post(contour.alert_webhook_url, content=body, headers=headers)
    except httpx.ConnectError as error:
        if isinstance(error.__cause__, NonPublicAddress):
            raise DeliveryError(
                "адрес вебхука ведёт на внутренний адрес: отправка запрещена", permanent=True
            ) from None
        raise DeliveryError(f"вебхук недоступен ({type(error).__name__})") from None
    except httpx.HTTPError as error:
        # The exception text may carry the URL (and a relay's token in it): the type only.
        raise DeliveryError(f"вебхук недоступен ({type(error).__name__})") from None
    if not response.is_success:
        raise DeliveryError(
            f"вебхук ответил HTTP {response.status_code}",
            permanent=response.status_code in PERMANENT_HTTP,
        )


def _journal(alert: OperatorAlert, attempt: int, status: str, code: str, message: str) -> None:
    recipient = "webhook"
    if alert.transport == AlertTransport.EMAIL:
        user = get_user_model().objects.filter(pk=alert.recipient).first()
        recipient = user.get_username() if user else alert.recipient
    events.operator_alert(
        alert, recipient=recipient, attempt=attempt, status=status, code=code, message=message
    )


def undelivered(contour_ids: Any) -> list[OperatorAlert]:
    """For the owner's dashboard: alerts that failed or are still being retried."""
    return list(
        OperatorAlert.objects.select_related("confirmation", "contour")
        .filter(
            Q(state=AlertState.FAILED)
            | (Q(state=AlertState.PENDING, attempts__gt=0) & ~Q(last_error="")),
            contour_id__in=contour_ids,
        )
        .order_by("-created_at")[:50]
    )
