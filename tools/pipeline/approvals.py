"""Human approval: which writes need an operator, and the operator's decision."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.db.models.functions import Now

from audit.actors import user_actor
from tools import clock, events
from tools.errors import ToolError
from tools.models import (
    ApiKey,
    ConfirmationStatus,
    Contour,
    ContourRole,
    PendingConfirmation,
    Role,
)
from tools.params import format_rub
from tools.people import roles
from tools.people.factors import stepup
from tools.spec import ChangedOrder, ToolSpec


def requirement(
    spec: ToolSpec,
    contour: Contour,
    amount: int | None,
    currency: str | None,
    *,
    operator_reason: str = "",
    changes: ChangedOrder | None = None,
) -> str:
    """Why this write needs a human ('' when the chat confirmation is enough).

    A write that changes an existing order (`changes`) needs an operator when that order is
    above the threshold, or when its creation needed one: re-targeting an approved order (new
    payer, purpose, due date) must not pass on the chat confirmation alone.
    """
    if spec.always_needs_operator:
        return "возврат денег всегда одобряет оператор"
    if operator_reason:
        return operator_reason
    if contour.approval_for_all_writes:
        return "в этом контуре все записи одобряет оператор"
    if changes is not None:
        reason = _over_threshold(
            contour, changes.amount, changes.currency, "сумма счёта"
        ) or _approved_at_creation(contour, changes)
        if reason:
            return reason
    if amount is None:
        return ""
    return _over_threshold(contour, amount, currency or "", "сумма")


def _over_threshold(contour: Contour, amount: int, currency: str, what: str) -> str:
    threshold = contour.approval_threshold(currency)
    if threshold is None:
        return f"для валюты {currency} порог не задан: одобряет оператор"
    if amount > threshold:
        return (
            f"{what} {format_rub(amount, currency)} выше порога "
            f"{format_rub(threshold, currency)}: одобряет оператор"
        )
    return ""


def _approved_at_creation(contour: Contour, changes: ChangedOrder) -> str:
    created = PendingConfirmation.objects.filter(
        contour=contour,
        requires_approval=True,
        operation__merchant_order_id=changes.merchant_order_id,
    )
    if created.exists():
        return (
            f"счёт {changes.merchant_order_id} при выставлении одобрял оператор: его "
            "изменение тоже одобряет оператор"
        )
    return ""


def needs_human(spec: ToolSpec, confirmation: PendingConfirmation) -> bool:
    # Re-derived from the spec, not only the stored flag: nothing stored can make a money
    # operation skip the human.
    return spec.always_needs_operator or confirmation.requires_approval


def approval_url(confirmation: PendingConfirmation) -> str:
    return f"{settings.GATEWAY_SITE_URL}/approvals/{confirmation.id}/"


def can_decide(user: Any) -> bool:
    """The role: an active superuser or an operator of at least one contour."""
    return user.has_perm("tools.decide_confirmation")


def visible_contours(user: Any) -> QuerySet[Contour]:
    """Contours whose confirmations this operator sees: those where they hold the operator
    role (tools/people/roles.py); every one for superusers."""
    return roles.contours_for(user, Role.OPERATOR)


def may_see(user: Any, contour: Contour) -> bool:
    return visible_contours(user).filter(pk=contour.pk).exists()


def waiting(user: Any) -> QuerySet[PendingConfirmation]:
    """The operator's queue: open confirmations that wait for a human, oldest first."""
    return (
        PendingConfirmation.objects.select_related("contour")
        .filter(
            status=ConfirmationStatus.PENDING,
            requires_approval=True,
            expires_at__gt=Now(),
            contour__in=visible_contours(user),
        )
        .order_by("created_at")
    )


def prepared_by(user: Any, confirmation: PendingConfirmation) -> bool:
    """Whether user stands behind a key that prepared this confirmation: four eyes by record.

    Barred: everyone the confirmation snapshotted when a key prepared it (that key's issuer,
    who saw the raw secret, and its holder then, the issuer when it had none), and, for the
    key named in `created_by`, its issuer and its holder now. The editable holder can only add
    to who is barred, never take anyone off an open confirmation. A key no person issued (a
    manage.py command made it: ApiKey.issued_by_command) bars every superuser: whoever ran the
    command may be one, and the record cannot say who.
    """
    if not user.pk:
        return False
    if user.is_superuser and confirmation.prepared_by_command_key:
        return True
    if confirmation.barred_approvers.filter(pk=user.pk).exists():
        return True
    actor = confirmation.created_by or ""
    if not actor.startswith("key:"):
        return False
    people = Q(user=user) | Q(issued_by=user)
    if user.is_superuser:
        people |= Q(issued_by_command=True)
    return ApiKey.objects.filter(
        people, contour_id=confirmation.contour_id, prefix=actor.removeprefix("key:")
    ).exists()


def _refusal(user: Any, confirmation: PendingConfirmation | None) -> ToolError | None:
    """Why this operator may not decide this item now (None: they may). Marks a stale item
    expired, which the caller's transaction commits."""
    if confirmation is None or not may_see(user, confirmation.contour):
        return ToolError("confirmation_invalid", "такого подтверждения нет")
    if confirmation.status != ConfirmationStatus.PENDING:
        return ToolError(
            "confirmation_used", f"решение уже принято: {confirmation.get_status_display()}"
        )
    if confirmation.is_expired(clock.now()):
        confirmation.status = ConfirmationStatus.EXPIRED
        confirmation.save(update_fields=["status"])
        return ToolError("confirmation_expired", "срок подтверждения истёк; решать поздно")
    if prepared_by(user, confirmation):
        return ToolError(
            "forbidden",
            "эту операцию подготовил ваш собственный ключ API (вы его "
            "выдали или держите) или ключ, выданный командой manage.py (его "
            "операции суперпользователь не одобряет): решение должен принять "
            "другой оператор",
        )
    if owns_contour(user, confirmation.contour):
        return ToolError(
            "forbidden",
            "вы владелец этого контура: его операции одобряет "
            "оператор, который контуром не владеет (принцип четырёх глаз)",
        )
    return None


def owns_contour(user: Any, contour: Contour) -> bool:
    """Maker-checker (docs/production.md): an owner sets the policy and issues the keys of a
    contour, so an operator role of the same person there approves nothing. Superusers hold
    every role (break-glass) and stay bound by the key records above."""
    return (
        not user.is_superuser
        and ContourRole.objects.filter(user=user, contour=contour, role=Role.OWNER).exists()
    )


def decide(
    confirmation_id: str,
    user: Any,
    *,
    approve: bool,
    reason: str = "",
    factor: stepup.FactorProof | None = None,
) -> PendingConfirmation:
    """Record an operator's decision once; a decided, expired or executed item stays as it is.

    Checks, in order: the role, the reason of a rejection, that the item exists and its contour
    is visible to this operator, that it is still pending and fresh, and that the operator's
    own API key did not prepare it (nobody approves their own request); then the second
    factor (tools/people/factors/stepup.py), whose proof the caller hands in as `factor`.
    """
    if not can_decide(user):
        raise ToolError("forbidden", "решать может только оператор контура")
    reason = reason.strip()
    if not approve and not reason:
        raise ToolError("invalid_arguments", "при отклонении нужна причина")
    with transaction.atomic():
        confirmation = (
            PendingConfirmation.objects.select_for_update()
            .select_related("contour")
            .filter(pk=confirmation_id)
            .first()
        )
        refusal = _refusal(user, confirmation)
        if refusal is None:
            assert confirmation is not None
            refusal = stepup.refusal(
                user, factor, contour=confirmation.contour, action="решение по операции"
            )
        if refusal is None:
            assert confirmation is not None
            _record_decision(confirmation, user, approve=approve, reason=reason, factor=factor)
    # Raised after the block, so marking an item expired is not rolled back with it.
    if refusal is not None:
        raise refusal
    assert confirmation is not None  # no refusal: it was found
    return confirmation


def _record_decision(
    confirmation: PendingConfirmation,
    user: Any,
    *,
    approve: bool,
    reason: str,
    factor: stepup.FactorProof | None,
) -> None:
    confirmation.status = ConfirmationStatus.APPROVED if approve else ConfirmationStatus.REJECTED
    confirmation.decided_at = clock.now()
    confirmation.decided_by = user.get_username()
    confirmation.decision_reason = reason
    factor_record = stepup.record_of(factor)
    confirmation.factor_kind = factor_record["kind"]
    confirmation.factor_device = factor_record["device"]
    confirmation.factor_checked_at = factor.checked_at if factor is not None else None
    confirmation.save(
        update_fields=[
            "status",
            "decided_at",
            "decided_by",
            "decision_reason",
            "factor_kind",
            "factor_device",
            "factor_checked_at",
        ]
    )
    events.confirmation_decided(
        confirmation,
        approve=approve,
        reason=reason,
        actor=user_actor(user),
        second_factor=factor_record,
    )
