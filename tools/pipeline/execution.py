"""Execution: a confirmed write sent upstream once, its outcome recorded; read top-down.

execute() claims the right to execute under a row lock (claim: a first attempt has its ceilings
checked, a finished one is replayed, one in flight is refused). An attempt after an earlier one
whose outcome is not proven looks that one up first (recover_by_lookup: a landed order is
answered, never sent again), waits while the earlier request may still land
(absent_too_early), then checks the ceilings again (recheck_ceilings). Then it sends
(send_or_find: our minted id already upstream means an earlier attempt landed) and records the
outcome (finish, the one writer of an operation's outcome, also for the background sweep,
tools/pipeline/sweep.py).

The gateway (tools/pipeline/gateway.py) decides whether a confirmed call may execute (its token,
the operator's approval, the facts its summary showed); this module executes it.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from pydantic import BaseModel

from invoicebox.client import InvoiceboxClient
from tools import clock, phrases
from tools.errors import Outcome, ToolError
from tools.models import (
    ConfirmationStatus,
    Contour,
    Operation,
    OperationState,
    PendingConfirmation,
)
from tools.pipeline import ceilings, confirmations
from tools.pipeline.call_trace import Trace, journal_started
from tools.pipeline.upstream_calls import client_for, upstream, with_context
from tools.spec import NOT_PROVEN, CallContext, ToolSpec

logger = logging.getLogger(__name__)


def execute(
    trace: Trace, spec: ToolSpec, params: BaseModel, confirmation: PendingConfirmation
) -> Outcome:
    """Execute a confirmation the gateway let through: once, whatever happened before."""
    contour = trace.contour
    assert contour is not None  # the gateway refused a call without one
    operation, replay, previous, previous_started = claim(trace, spec, confirmation)
    trace.operation_key = operation.key
    if replay is not None:
        return done(spec, replay, replayed=True)
    with client_for(contour) as client:
        ctx = CallContext(
            contour,
            client,
            merchant_order_id=operation.merchant_order_id,
            operation_key=operation.key,
            operation_started=operation.created_at,
            operator_approved=confirmation.status == ConfirmationStatus.APPROVED,
        )
        data = None
        if previous is not None and spec.recover is not None:
            # Recovery first, before any re-check: a landed order is answered, never refused.
            data = recover_by_lookup(
                trace, client, spec, ctx, params, operation, confirmation, previous
            )
            if data is None and previous != OperationState.FAILED:
                absent_too_early(trace, spec, operation, confirmation, previous_started)
        if data is None:
            if previous is not None and (
                spec.recover is not None or previous == OperationState.FAILED
            ):
                recheck_ceilings(contour, operation, confirmation)
            try:
                data = send_or_find(trace, client, spec, ctx, params)
            except ToolError as error:
                state = (
                    OperationState.UNKNOWN
                    if error.code == "outcome_unknown"
                    else OperationState.FAILED
                )
                finish(operation, confirmation, state, None, error.code, trace.upstream_request_id)
                raise
    data = with_context(trace, data)
    try:
        finish(operation, confirmation, OperationState.DONE, data, "", trace.upstream_request_id)
    except DatabaseError:
        # The order exists upstream and the assistant gets it; only our record is late. The
        # operation stays in flight until the sweep (tools/pipeline/sweep.py) finds it by
        # lookup and records it.
        logger.exception("operation %s done upstream, not recorded", operation.key)
    return done(spec, data, replayed=False)


def claim(
    trace: Trace, spec: ToolSpec, confirmation: PendingConfirmation
) -> tuple[Operation, dict[str, Any] | None, str | None, datetime | None]:
    """Take the right to execute under a row lock; a finished operation is replayed instead.

    Returns the operation, the stored result of a finished one, and the state an earlier
    attempt left and when it started (None for the first attempt). Only a first attempt has
    its ceilings checked here: a later one is looked up first (recover_by_lookup), then
    re-checked (recheck_ceilings).

    The transaction is short on purpose: it commits before the upstream call, so the
    in-flight record survives a crash and no lock is held across the network. It also writes
    the journal entry saying the attempt started, so a killed worker still leaves one.
    """
    contour = trace.contour
    assert contour is not None
    with transaction.atomic():
        # Lock order: contour, then confirmation. The contour row serialises every execution
        # of the contour, so two concurrent writes can never pass a ceiling together.
        Contour.objects.select_for_update().filter(pk=contour.pk).first()
        locked = PendingConfirmation.objects.select_for_update().get(pk=confirmation.pk)
        key = hashlib.sha256(f"operation:{locked.id}".encode()).hexdigest()[:32]
        existing = Operation.objects.select_for_update().filter(confirmation=locked).first()
        now = clock.now()  # the database's: workers' clocks may disagree (tools/clock.py)
        if confirmations.expired_unbegun(locked, existing, now):
            raise confirmations.expired(locked)
        previous: str | None = None
        previous_started = None
        if existing is None:
            ceilings.check(contour, ceilings.Request(locked.amount, locked.currency or None))
            # Born in flight: the locked confirmation row keeps any other creator out (and
            # the unique confirmation would refuse one).
            operation = Operation.objects.create(
                confirmation=locked,
                key=key,
                contour=contour,
                tool=spec.name,
                merchant_order_id=f"gw-{now:%Y%m%d}-{key[:12]}",
                amount=locked.amount,
                currency=locked.currency,
                state=OperationState.IN_FLIGHT,
                attempts=1,
                created_at=now,
                started_at=now,
            )
        else:
            operation = existing
            if operation.state == OperationState.DONE:
                return operation, operation.result or locked.result or {}, None, None
            stale = now - operation.started_at > stale_after()
            if operation.state == OperationState.IN_FLIGHT and not stale:
                raise ToolError(
                    "duplicate_call",
                    "такая же операция уже выполняется",
                    hint="подождите несколько секунд и повторите тот же вызов",
                )
            previous, previous_started = operation.state, operation.started_at
            operation.state = OperationState.IN_FLIGHT
            operation.attempts += 1
            operation.started_at = now
            operation.save(update_fields=["state", "attempts", "started_at"])
        # The attempt's entry, in this transaction: no entry, no claim, no upstream request.
        journal_started(trace, operation)
        return operation, None, previous, previous_started


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

    Under the contour's row lock, like claim(); the operation itself is left out of the count.
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
        # The lock order of claim() (confirmation before operation): updating the
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


def stale_after() -> timedelta:
    """An execution still in flight after this long has lost its worker."""
    return timedelta(seconds=settings.GATEWAY_STALE_IN_FLIGHT_SECONDS)


def done(spec: ToolSpec, data: dict[str, Any], *, replayed: bool) -> Outcome:
    message = phrases.done_message(spec, replayed=replayed)
    return Outcome(status="ok", code="ok", message=message, data=data, replayed=replayed)
