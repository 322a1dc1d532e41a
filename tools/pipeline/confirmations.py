"""Two-phase writes: one-time confirmation tokens bound to contour, tool and arguments."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from tools import clock
from tools.errors import ToolError
from tools.keys import scope as keys
from tools.models import (
    UNRESOLVED_OPERATION_STATES,
    ConfirmationStatus,
    Contour,
    Operation,
    OperationState,
    PendingConfirmation,
    sha256_hex,
)
from tools.spec import FACTS_KEY, Summary, ToolSpec

OPEN_STATUSES = (ConfirmationStatus.PENDING, ConfirmationStatus.APPROVED)
# Operations that may have happened upstream: their confirmation never expires, and the same
# write prepared again answers with them instead of a new token.
UNRESOLVED_STATES = UNRESOLVED_OPERATION_STATES  # the partial index's condition, the same list
# What may expire: a confirmation with no execution, or one whose execution proved it failed.
# The resolve path and the periodic task (tools.background.tasks.expire_confirmations) share this rule.
EXPIRABLE = Q(operation__isnull=True) | Q(operation__state=OperationState.FAILED)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def arguments_hash(tool: str, canonical: dict[str, Any]) -> str:
    return sha256_hex(canonical_json({"tool": tool, "arguments": canonical}))


def token_for(confirmation: PendingConfirmation) -> str:
    """Derived from the id with the server secret, so only its hash needs storing and an
    identical repeat of the first call can be handed the same token again."""
    mac = hmac.new(
        settings.SECRET_KEY.encode(), f"confirmation:{confirmation.id}".encode(), hashlib.sha256
    ).digest()
    return "ibc_" + base64.urlsafe_b64encode(mac).decode().rstrip("=")


def recent_execution(
    contour: Contour, spec: ToolSpec, canonical: dict[str, Any]
) -> PendingConfirmation | None:
    """The same write already executed inside the contour's dedup window, if any."""
    since = clock.now() - timedelta(seconds=contour.dedup_window_seconds)
    return (
        PendingConfirmation.objects.filter(
            contour=contour,
            tool=spec.name,
            args_hash=arguments_hash(spec.name, canonical),
            status=ConfirmationStatus.EXECUTED,
            executed_at__gte=since,
        )
        .order_by("-executed_at")
        .first()
    )


def unresolved_operation(
    contour: Contour, spec: ToolSpec, canonical: dict[str, Any]
) -> Operation | None:
    """An execution of this very write whose outcome is not proven yet (in flight, unknown)."""
    return (
        Operation.objects.select_related("confirmation")
        .filter(
            contour=contour,
            tool=spec.name,
            state__in=UNRESOLVED_STATES,
            confirmation__args_hash=arguments_hash(spec.name, canonical),
        )
        .order_by("created_at")
        .first()
    )


def _may_expire(confirmation: PendingConfirmation) -> bool:
    return PendingConfirmation.objects.filter(EXPIRABLE, pk=confirmation.pk).exists()


def prepare(
    contour: Contour,
    spec: ToolSpec,
    canonical: dict[str, Any],
    summary: Summary,
    actor: str,
    *,
    approval_reason: str = "",
    reuse_open: bool = True,
) -> tuple[PendingConfirmation, str]:
    """Find the open confirmation of this very write (inside the dedup window), or create one.

    Find-or-create runs under the contour's row lock (the lock execution.claim takes first,
    too), so concurrent identical first calls in any number of processes get one confirmation:
    the second waits for the first to commit and then finds its row. A unique constraint can't
    say this, because allow_duplicate and an open row older than the dedup window both rightly
    allow a second open confirmation of the same arguments.
    """
    with transaction.atomic():
        if reuse_open:
            Contour.objects.select_for_update().filter(pk=contour.pk).first()
        return _find_or_create(
            contour,
            spec,
            canonical,
            summary,
            actor,
            approval_reason=approval_reason,
            reuse_open=reuse_open,
        )


def _find_or_create(
    contour: Contour,
    spec: ToolSpec,
    canonical: dict[str, Any],
    summary: Summary,
    actor: str,
    *,
    approval_reason: str,
    reuse_open: bool,
) -> tuple[PendingConfirmation, str]:
    digest = arguments_hash(spec.name, canonical)
    now = clock.now()  # the database's: workers' clocks may disagree
    existing = None
    if reuse_open:
        # Under the lock, again: what the caller checked before its (slow) summary may have
        # changed since. The same write executed or begun meanwhile is answered with that one,
        # never with a second confirmation (the gateway replays or recovers it).
        since = now - timedelta(seconds=contour.dedup_window_seconds)
        fresh = Q(status__in=OPEN_STATUSES, expires_at__gt=now, created_at__gte=since)
        executed = Q(status=ConfirmationStatus.EXECUTED, executed_at__gte=since)
        begun = Q(operation__state__in=UNRESOLVED_STATES)
        existing = (
            PendingConfirmation.objects.filter(contour=contour, tool=spec.name, args_hash=digest)
            .filter(fresh | executed | begun)
            .order_by("created_at")
            .first()
        )
    if existing is not None and existing.status not in OPEN_STATUSES:
        return existing, token_for(existing)
    if existing is not None:
        if approval_reason and not existing.requires_approval:
            # The write became one for an operator since (an order moved to hold): escalate,
            # never the other way.
            existing.requires_approval = True
            existing.approval_reason = approval_reason
            # Now it waits for a person: it gets the operator's window, never less time.
            existing.expires_at = max(
                existing.expires_at, existing.created_at + contour.approval_window
            )
            existing.save(update_fields=["requires_approval", "approval_reason", "expires_at"])
        bar_key_people(existing, contour, actor)
        return existing, token_for(existing)
    confirmation = PendingConfirmation(
        contour=contour,
        tool=spec.name,
        arguments=canonical,
        args_hash=digest,
        summary=summary.text,
        summary_data={
            **summary.data,
            "warnings": summary.warnings,
            **({FACTS_KEY: summary.facts} if summary.facts else {}),
        },
        created_by=actor,
        created_at=now,
        # An operator decides in hours; a chat confirmation is a matter of minutes.
        expires_at=now + (contour.approval_window if approval_reason else contour.confirmation_ttl),
        requires_approval=bool(approval_reason),
        approval_reason=approval_reason[:200],
        amount=summary.amount,
        currency=summary.currency or "",
    )
    token = token_for(confirmation)
    confirmation.token_hash = sha256_hex(token)
    confirmation.save()
    bar_key_people(confirmation, contour, actor)
    return confirmation, token


def bar_key_people(confirmation: PendingConfirmation, contour: Contour, actor: str) -> None:
    """Snapshot who stands behind the key preparing this write: its issuer (who saw the raw
    key) and its holder now, the issuer when it names none. Each preparation adds its own; a
    later change of the key's holder takes no one off. A key a command issued bars every
    superuser (prepared_by_command_key)."""
    key = keys.key_of(contour, actor)
    if key is None:
        return
    if key.issued_by_command and not confirmation.prepared_by_command_key:
        confirmation.prepared_by_command_key = True
        confirmation.save(update_fields=["prepared_by_command_key"])
    people = {pk for pk in (key.issued_by_id, key.user_id or key.issued_by_id) if pk is not None}
    if people:
        confirmation.barred_approvers.add(*people)


def resolve(
    contour: Contour, spec: ToolSpec, canonical: dict[str, Any], token: str
) -> PendingConfirmation:
    """The confirmation a token names, checked in order: owner, arguments, freshness.

    A used token with the same arguments is returned as is (the caller replays its result).
    """
    confirmation = PendingConfirmation.objects.filter(
        token_hash=sha256_hex(token), contour=contour
    ).first()
    if confirmation is None:
        raise ToolError(
            "confirmation_invalid",
            "токен подтверждения не найден для этого контура",
            hint="вызовите инструмент без confirmation_token, чтобы получить новый",
        )
    same = confirmation.tool == spec.name and confirmation.args_hash == arguments_hash(
        spec.name, canonical
    )
    if confirmation.status == ConfirmationStatus.EXECUTED:
        if same:
            return confirmation
        raise ToolError(
            "confirmation_used",
            "этот токен уже использован для другой операции",
            hint="для новой операции вызовите инструмент без токена",
        )
    if not same:
        raise ToolError(
            "confirmation_mismatch",
            "параметры изменились после подтверждения: токен выдан на другую операцию",
            hint="вызовите инструмент без токена с новыми параметрами и подтвердите заново",
        )
    if confirmation.status == ConfirmationStatus.REJECTED:
        reason = f": {confirmation.decision_reason}" if confirmation.decision_reason else ""
        raise ToolError(
            "approval_rejected",
            f"оператор отклонил операцию{reason}",
            hint="не повторяйте этот токен: расскажите человеку причину отказа; "
            "если он исправит условия, вызовите инструмент заново без токена "
            "с новыми параметрами",
        )
    if confirmation.status == ConfirmationStatus.EXPIRED or confirmation.is_expired(clock.now()):
        if not _may_expire(confirmation):
            # Its execution began and may have happened: the token keeps naming it, so the
            # caller recovers it instead of inviting a second operation.
            return confirmation
        if confirmation.status != ConfirmationStatus.EXPIRED:
            PendingConfirmation.objects.filter(
                EXPIRABLE, pk=confirmation.pk, status__in=OPEN_STATUSES
            ).update(status=ConfirmationStatus.EXPIRED)
        raise expired(confirmation)
    return confirmation


def expired(confirmation: PendingConfirmation) -> ToolError:
    return ToolError(
        "confirmation_expired",
        f"срок подтверждения истёк {timezone.localtime(confirmation.expires_at):%d.%m.%Y %H:%M}",
        hint="вызовите инструмент без токена, чтобы получить новую сводку и токен",
    )


def expired_unbegun(
    confirmation: PendingConfirmation, operation: Operation | None, now: datetime
) -> bool:
    """Expired, and nothing of it may have happened: what resolve() answers as expired.

    execution.claim asks again under the confirmation's lock: an attempt in flight when
    resolve() ran may have failed since, and someone else may already have been told
    "expired, call again".
    """
    unbegun = operation is None or operation.state == OperationState.FAILED
    return (
        unbegun
        and confirmation.status != ConfirmationStatus.EXECUTED
        and (confirmation.status == ConfirmationStatus.EXPIRED or confirmation.is_expired(now))
    )


def envelope(
    confirmation: PendingConfirmation, token: str, approval_url: str = ""
) -> dict[str, Any]:
    body = {
        "id": str(confirmation.id),
        "token": token,
        "expires_at": confirmation.expires_at.isoformat(),
        "summary": confirmation.summary,
    }
    if approval_url:
        body["approval_url"] = approval_url
    return body
