"""The sweep (Celery beat): executions whose outcome is not proven, resolved by lookup.

An operation left `in_flight` by a worker that died (or by a database that went away under
it), or `unknown` after a lost or lying answer, may exist upstream. The beat task
resolve_operations looks each one up by its own merchantOrderId, a bounded batch per run:
found, it is `done` with the order (tracked, so its payment notification is accepted) and its
confirmation executed; proven absent, it is `failed`; a lookup that fails proves nothing and
leaves it `unknown`, to be tried again after the stale period. Nobody has to present the token
again for that to happen.

The sweep takes an operation by renewing its claim (in flight, started now, by the database's
clock), so a caller presenting the token meanwhile is told it is being executed, and writes its
verdict through execution's finish() only if that claim is still its own. The task's name is a
wire name (the beat schedule, queued messages): it stays "tools.recovery.resolve_operations".
"""

from __future__ import annotations

import logging
from datetime import datetime

from celery import shared_task
from django.conf import settings
from django.db import transaction

from invoicebox.client import InvoiceboxError
from tools import catalog, clock, events
from tools.errors import ToolError
from tools.models import ConfirmationStatus, Operation, OperationState
from tools.pipeline.confirmations import UNRESOLVED_STATES
from tools.pipeline.execution import finish, stale_after
from tools.pipeline.upstream_calls import contour_client
from tools.spec import CallContext
from tools.validation import validate

logger = logging.getLogger(__name__)


@shared_task(name="tools.recovery.resolve_operations")
def resolve_operations() -> dict[str, int]:
    """Beat: look up unresolved operations older than the stale period, oldest first."""
    since = clock.now() - stale_after()
    recoverable = [spec.name for spec in catalog.CATALOG if spec.recover is not None]
    ids = list(
        Operation.objects.filter(
            state__in=UNRESOLVED_STATES, started_at__lte=since, tool__in=recoverable
        )
        .order_by("started_at")
        .values_list("pk", flat=True)[: settings.GATEWAY_RECOVERY_BATCH]
    )
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
        finish(
            operation,
            confirmation,
            previous,
            None,
            "recovery_impossible",
            "",
            claimed_at=claimed_at,
        )
        return "invalid"
    client = contour_client(contour)
    ctx = CallContext(
        contour,
        client,
        merchant_order_id=operation.merchant_order_id,
        operation_key=operation.key,
        operation_started=operation.created_at,
        operator_approved=confirmation.status == ConfirmationStatus.APPROVED,
    )
    try:
        with client:
            found = spec.recover(ctx, params)
    except (InvoiceboxError, ToolError) as error:
        # A lookup that failed, or read rows that only might be ours (NOT_PROVEN): unknown.
        code = error.kind if isinstance(error, InvoiceboxError) else error.code
        finish(
            operation,
            confirmation,
            OperationState.UNKNOWN,
            None,
            code,
            client.last_request_id,
            claimed_at=claimed_at,
        )
        events.operation_resolved(
            operation,
            status="error",
            code="recovery_lookup_failed",
            message=f"проверить операцию не удалось ({error.message}); её результат "
            "по-прежнему неизвестен",
        )
        return "lookup_failed"
    if found is None:
        if finish(
            operation,
            confirmation,
            OperationState.FAILED,
            None,
            "absent_upstream",
            client.last_request_id,
            claimed_at=claimed_at,
        ):
            events.operation_resolved(
                operation,
                status="ok",
                code="operation_absent",
                message=f"операции {operation.merchant_order_id} в Инвойсбокс нет: не выполнена",
            )
        return "absent"
    data = {
        **found,
        "recovered": True,
        "environment": contour.mode,
        "scope_context": f"магазин {contour.merchant_id}",
        "request_id": client.last_request_id,
    }
    if finish(
        operation,
        confirmation,
        OperationState.DONE,
        data,
        "",
        client.last_request_id,
        claimed_at=claimed_at,
    ):
        events.operation_resolved(
            operation,
            status="ok",
            code="operation_recovered",
            message=f"операция {operation.merchant_order_id} найдена в Инвойсбокс и записана",
        )
    return "found"


def _take(operation_id: int) -> tuple[Operation, datetime, str] | None:
    """Renew the claim of a still unresolved, stale operation; None when someone has it."""
    with transaction.atomic():
        now = clock.now()
        operation = (
            Operation.objects.select_for_update(skip_locked=True)
            .select_related("confirmation", "contour")
            .filter(
                pk=operation_id, state__in=UNRESOLVED_STATES, started_at__lte=now - stale_after()
            )
            .first()
        )
        if operation is None:
            return None
        previous = operation.state
        Operation.objects.filter(pk=operation.pk).update(
            state=OperationState.IN_FLIGHT, started_at=now
        )
    return operation, now, previous
