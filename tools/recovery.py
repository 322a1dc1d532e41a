"""Executions whose outcome is not proven, resolved in the background by lookup (issue 27).

An operation left `in_flight` by a worker that died (or by a database that went away under
it), or `unknown` after a lost or lying answer, may exist upstream. The beat task
resolve_operations looks each one up by its own merchantOrderId, a bounded batch per run:
found, it is `done` with the order (tracked, so its payment notification is accepted) and its
confirmation executed; proven absent, it is `failed`; a lookup that fails proves nothing and
leaves it `unknown`, to be tried again after the stale period. Nobody has to present the token
again for that to happen.

finish() is the one writer of an operation's outcome, for the gateway and for this sweep. The
sweep takes an operation by renewing its claim (in flight, started now, by the database's
clock), so a caller presenting the token meanwhile is told it is being executed, and writes
its verdict only if that claim is still its own.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import transaction

from adapters.invoicebox.client import InvoiceboxError, make_client
from audit import journal
from tools import catalog, clock
from tools.confirmations import UNRESOLVED_STATES
from tools.errors import ToolError
from tools.models import (
    ConfirmationStatus,
    Operation,
    OperationState,
    PendingConfirmation,
)
from tools.spec import CallContext
from tools.validation import validate

logger = logging.getLogger(__name__)


def stale_after() -> timedelta:
    """An execution still in flight after this long has lost its worker."""
    return timedelta(seconds=settings.GATEWAY_STALE_IN_FLIGHT_SECONDS)


def finish(operation: Operation, confirmation: PendingConfirmation, state: str,
           result: dict[str, Any] | None, error_code: str, request_id: str, *,
           claimed_at: datetime | None = None, started_at: datetime | None = None) -> bool:
    """Write an operation's outcome (and execute its confirmation when done).

    With claimed_at, only while the operation is still in flight under that claim; returns
    whether it was written. started_at puts back the start of the request that may still land
    (an attempt that only looked it up sent nothing).
    """
    with transaction.atomic():
        # The lock order of the gateway's _claim (confirmation before operation): updating the
        # operation first deadlocks against a concurrent claim of the same token.
        PendingConfirmation.objects.select_for_update().filter(pk=confirmation.pk).first()
        now = clock.now()
        target = Operation.objects.filter(pk=operation.pk)
        if claimed_at is not None:
            target = target.filter(state=OperationState.IN_FLIGHT, started_at=claimed_at)
        restart = {"started_at": started_at} if started_at is not None else {}
        written = target.update(state=state, result=result, error_code=error_code,
                                upstream_request_id=request_id, finished_at=now, **restart)
        if written and state == OperationState.DONE:
            PendingConfirmation.objects.filter(pk=confirmation.pk).update(
                status=ConfirmationStatus.EXECUTED, executed_at=now, result=result)
    return bool(written)


@shared_task(name="tools.recovery.resolve_operations")
def resolve_operations() -> dict[str, int]:
    """Beat: look up unresolved operations older than the stale period, oldest first."""
    since = clock.now() - stale_after()
    recoverable = [spec.name for spec in catalog.CATALOG if spec.recover is not None]
    ids = list(Operation.objects.filter(state__in=UNRESOLVED_STATES, started_at__lte=since,
                                        tool__in=recoverable)
               .order_by("started_at").values_list("pk", flat=True)
               [:settings.GATEWAY_RECOVERY_BATCH])
    verdicts: dict[str, int] = {}
    for pk in ids:
        verdict = resolve(pk)
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
    return verdicts


def resolve(operation_id: int) -> str:
    """Look one operation up and record what the lookup proves; returns the verdict."""
    claimed = _take(operation_id)
    if claimed is None:
        return "taken"
    operation, claimed_at, previous = claimed
    spec = catalog.get(operation.tool)
    assert spec is not None and spec.recover is not None
    confirmation = operation.confirmation
    contour = operation.contour
    try:
        params = validate(spec.params, confirmation.arguments)
    except ToolError:
        logger.error("operation %s: stored arguments no longer valid", operation.key)
        finish(operation, confirmation, previous, None, "recovery_impossible", "",
               claimed_at=claimed_at)
        return "invalid"
    client = make_client(base_url=contour.base_url, token=contour.api_token,
                         merchant_id=contour.merchant_id)
    ctx = CallContext(contour, client, merchant_order_id=operation.merchant_order_id,
                      operation_key=operation.key, operation_started=operation.created_at,
                      operator_approved=confirmation.status == ConfirmationStatus.APPROVED)
    try:
        with client:
            found = spec.recover(ctx, params)
    except InvoiceboxError as error:
        finish(operation, confirmation, OperationState.UNKNOWN, None, error.kind,
               client.last_request_id, claimed_at=claimed_at)
        _journal(operation, "error", "recovery_lookup_failed",
                 f"проверить операцию не удалось ({error.message}); её результат по-прежнему "
                 "неизвестен")
        return "lookup_failed"
    if found is None:
        if finish(operation, confirmation, OperationState.FAILED, None, "absent_upstream",
                  client.last_request_id, claimed_at=claimed_at):
            _journal(operation, "ok", "operation_absent",
                     f"операции {operation.merchant_order_id} в Инвойсбокс нет: не выполнена")
        return "absent"
    data = {**found, "recovered": True, "environment": contour.mode,
            "scope_context": f"магазин {contour.merchant_id}",
            "request_id": client.last_request_id}
    if finish(operation, confirmation, OperationState.DONE, data, "", client.last_request_id,
              claimed_at=claimed_at):
        _journal(operation, "ok", "operation_recovered",
                 f"операция {operation.merchant_order_id} найдена в Инвойсбокс и записана")
    return "found"


def _take(operation_id: int) -> tuple[Operation, datetime, str] | None:
    """Renew the claim of a still unresolved, stale operation; None when someone has it."""
    with transaction.atomic():
        now = clock.now()
        operation = (Operation.objects.select_for_update(skip_locked=True)
                     .select_related("confirmation", "contour")
                     .filter(pk=operation_id, state__in=UNRESOLVED_STATES,
                             started_at__lte=now - stale_after()).first())
        if operation is None:
            return None
        previous = operation.state
        Operation.objects.filter(pk=operation.pk).update(state=OperationState.IN_FLIGHT,
                                                         started_at=now)
    return operation, now, previous


def _journal(operation: Operation, status: str, code: str, message: str) -> None:
    contour = operation.contour
    journal.record(contour=contour.slug, channel="celery", actor="celery", tool=operation.tool,
                   phase="execute", arguments={"merchant_order_id": operation.merchant_order_id},
                   status=status, code=code, message=message,
                   confirmation_id=str(operation.confirmation_id), operation_key=operation.key,
                   secrets=[s for s in (contour.api_token, contour.notification_key) if s])
