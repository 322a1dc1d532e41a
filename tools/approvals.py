"""Human approval: which writes need an operator, and the operator's decision."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from audit import journal
from tools.errors import ToolError
from tools.models import ConfirmationStatus, Contour, PendingConfirmation
from tools.params import format_rub
from tools.spec import ToolSpec

OPERATORS_GROUP = "operators"


def requirement(spec: ToolSpec, contour: Contour, amount: int | None, currency: str | None
                ) -> str:
    """Why this write needs a human ('' when the chat confirmation is enough)."""
    if spec.kind == "money":
        return "возврат денег всегда одобряет оператор"
    if contour.approval_for_all_writes:
        return "в этом контуре все записи одобряет оператор"
    if amount is None:
        return ""
    threshold = contour.approval_threshold(currency or "")
    if threshold is None:
        return f"для валюты {currency} порог не задан: одобряет оператор"
    if amount > threshold:
        return (f"сумма {format_rub(amount, currency or '')} выше порога "
                f"{format_rub(threshold, currency or '')}: одобряет оператор")
    return ""


def needs_human(spec: ToolSpec, confirmation: PendingConfirmation) -> bool:
    # Re-derived from the tool's kind, not only the stored flag: nothing stored can make a
    # money operation skip the human.
    return spec.kind == "money" or confirmation.requires_approval


def approval_url(confirmation: PendingConfirmation) -> str:
    return f"{settings.GATEWAY_SITE_URL}/approvals/{confirmation.id}/"


def can_decide(user: AbstractBaseUser) -> bool:
    return bool(user.is_active and (
        user.is_superuser or user.groups.filter(name=OPERATORS_GROUP).exists()))


def decide(confirmation_id: str, user: AbstractBaseUser, *, approve: bool, reason: str = ""
           ) -> PendingConfirmation:
    """Record an operator's decision once; a decided, expired or executed item stays as it is."""
    if not can_decide(user):
        raise ToolError("forbidden", "решать может только оператор (группа operators)")
    if not approve and not reason.strip():
        raise ToolError("invalid_arguments", "при отклонении нужна причина")
    with transaction.atomic():
        confirmation = (PendingConfirmation.objects.select_for_update()
                        .select_related("contour").filter(pk=confirmation_id).first())
        if confirmation is None:
            raise ToolError("confirmation_invalid", "такого подтверждения нет")
        if confirmation.status != ConfirmationStatus.PENDING:
            raise ToolError("confirmation_used",
                            f"решение уже принято: {confirmation.get_status_display()}")
        if confirmation.is_expired():
            confirmation.status = ConfirmationStatus.EXPIRED
            confirmation.save(update_fields=["status"])
            raise ToolError("confirmation_expired", "срок подтверждения истёк; решать поздно")
        confirmation.status = (ConfirmationStatus.APPROVED if approve
                               else ConfirmationStatus.REJECTED)
        confirmation.decided_at = timezone.now()
        confirmation.decided_by = user.get_username()
        confirmation.decision_reason = reason.strip()
        confirmation.save(update_fields=["status", "decided_at", "decided_by", "decision_reason"])
        journal.record(
            contour=confirmation.contour.slug, channel="ui", actor=f"user:{user.get_username()}",
            tool=confirmation.tool, phase="approve" if approve else "reject",
            arguments={"confirmation_id": str(confirmation.id)},
            status="ok", code="approved" if approve else "approval_rejected",
            message=("одобрено" if approve else f"отклонено: {reason.strip()}"),
            confirmation_id=str(confirmation.id),
            secrets=[confirmation.contour.api_token],
        )
    return confirmation
