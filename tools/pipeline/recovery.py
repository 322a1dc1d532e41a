"""Executions whose outcome is not proven, resolved in the background by lookup.

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
from pydantic import BaseModel

from invoicebox.client import InvoiceboxClient, InvoiceboxError
from tools import catalog, clock, events
from tools.errors import ToolError
from tools.models import (
    ConfirmationStatus,
    Contour,
    Operation,
    OperationState,
    PendingConfirmation,
)
from tools.pipeline import ceilings
from tools.pipeline.call_trace import Trace
from tools.pipeline.confirmations import UNRESOLVED_STATES
from tools.pipeline.upstream_calls import contour_client, upstream
from tools.spec import NOT_PROVEN, CallContext, ToolSpec
from tools.validation import validate

logger = logging.getLogger(__name__)


def stale_after() -> timedelta:
    """An execution still in flight after this long has lost its worker."""
    return timedelta(seconds=settings.GATEWAY_STALE_IN_FLIGHT_SECONDS)


def finish(
    operation: Operation,
    confirmation: PendingConfirmation,
    state: str,
    result: dict[str, Any] | None,
    error_code: str,
    request_id: str,
    *,
    claimed_at: datetime | None = None,
    started_at: datetime | None = None,
) -> bool:
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
        written = target.update(
            state=state,
            result=result,
            error_code=error_code,
            upstream_request_id=request_id,
            finished_at=now,
            **restart,
        )
        if written and state == OperationState.DONE:
            PendingConfirmation.objects.filter(pk=confirmation.pk).update(
                status=ConfirmationStatus.EXECUTED, executed_at=now, result=result
            )
    return bool(written)


# -- when the token is presented again (tools/pipeline/gateway.py _execute) --------------------------


def recover_by_lookup(
    trace: Trace,
    client: InvoiceboxClient,
    spec: ToolSpec,
    ctx: CallContext,
    params: BaseModel,
    operation: Operation,
    confirmation: PendingConfirmation,
    previous: str,
) -> dict[str, Any] | None:
    """Look the earlier attempt up: its result when found, None when proven absent.

    A lookup that fails proves nothing: an operation that may have happened stays `unknown`
    (and keeps counting against the ceilings), and the answer says so.
    """
    assert spec.recover is not None
    try:
        found = upstream(trace, client, lambda: spec.recover(ctx, params))
    except ToolError as error:
        if previous == OperationState.FAILED and error.data.get("lookup") == NOT_PROVEN:
            # The last attempt was refused outright: a row that only might be ours is not.
            return None
        may_have_happened = previous != OperationState.FAILED
        state = OperationState.UNKNOWN if may_have_happened else OperationState.FAILED
        finish(operation, confirmation, state, None, error.code, trace.upstream_request_id)
        if may_have_happened:
            raise ToolError(
                error.code,
                f"{error.message}; проверить, выполнена ли операция, не удалось — её результат "
                "по-прежнему неизвестен",
                hint=(
                    "не создавайте операцию заново: повторите позже тот же вызов с тем же "
                    "токеном — шлюз снова проверит, выполнена ли она"
                ),
                data={**error.data, "operation_state": OperationState.UNKNOWN.value},
                upstream_request_id=error.upstream_request_id,
                upstream_status=error.upstream_status,
            ) from None
        raise
    if found is None:
        return None
    return {**found, "recovered": True}


def absent_too_early(
    trace: Trace,
    spec: ToolSpec,
    operation: Operation,
    confirmation: PendingConfirmation,
    previous_started: datetime | None,
) -> None:
    """A lookup that finds nothing proves absence only once the earlier request can no longer
    land (it started more than the stale period ago): a slow upstream may still be storing it,
    and sending again would POST one order twice. Until then the outcome stays unknown, under
    the earlier request's start, and nothing is sent."""
    assert previous_started is not None
    wait = stale_after() - (clock.now() - previous_started)
    if wait.total_seconds() <= 0:
        return
    finish(
        operation,
        confirmation,
        OperationState.UNKNOWN,
        None,
        "outcome_unknown",
        trace.upstream_request_id,
        started_at=previous_started,
    )
    seconds = max(1, int(wait.total_seconds() + 0.999))
    raise ToolError(
        "outcome_unknown",
        f"{spec.title}: в Инвойсбокс операции пока нет, но прежний запрос ещё может дойти; "
        "новый не отправлен",
        hint=(
            f"не создавайте операцию заново: повторите тот же вызов с тем же "
            f"confirmation_token через {seconds} с"
        ),
        data={"operation_state": OperationState.UNKNOWN.value, "retry_after_seconds": seconds},
        upstream_request_id=trace.upstream_request_id,
        upstream_status=trace.upstream_status,
    )


def recheck_ceilings(
    contour: Contour, operation: Operation, confirmation: PendingConfirmation
) -> None:
    """After the earlier attempt is proven absent: check the ceilings again, as for a new one.

    Under the contour's row lock, like the gateway's _claim; the operation itself is left out of the count.
    """
    try:
        with transaction.atomic():
            Contour.objects.select_for_update().filter(pk=contour.pk).first()
            ceilings.check(
                contour,
                ceilings.Request(operation.amount, operation.currency or None),
                exclude_operation=operation.pk,
            )
    except ToolError as error:
        finish(operation, confirmation, OperationState.FAILED, None, error.code, "")
        raise


def send_or_find(
    trace: Trace, client: InvoiceboxClient, spec: ToolSpec, ctx: CallContext, params: BaseModel
) -> dict[str, Any]:
    try:
        return upstream(trace, client, lambda: spec.handler(ctx, params))
    except ToolError as error:
        # Our minted id already exists upstream: an earlier attempt did land. Find it.
        if error.data.get("upstream_code") != "merchant_order_id_duplicate" or not spec.recover:
            raise
        found = upstream(trace, client, lambda: spec.recover(ctx, params))
        if found is None:
            raise
        return {**found, "recovered": True}


# -- in the background ----------------------------------------------------------------------


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
