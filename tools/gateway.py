"""The one entry point: every adapter calls call(); checks, confirmations and journal live here."""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pydantic import BaseModel

from adapters.invoicebox.client import InvoiceboxClient, InvoiceboxError, make_client
from audit import journal
from tools import alerts, approvals, catalog, ceilings, confirmations, keys, phrases
from tools.errors import Outcome, Problem, ToolError, invalid_arguments
from tools.json_kinds import json_kind
from tools.models import (
    ApiKey,
    ConfirmationStatus,
    Contour,
    Operation,
    OperationState,
    PendingConfirmation,
)
from tools.ops.hooks import observe_call
from tools.spec import CONTROL_FIELDS, CallContext, ToolSpec
from tools.validation import printable, shape_problem, validate

logger = logging.getLogger(__name__)


# An execution still "in flight" after this long has lost its worker: recover it by lookup.
# settings.GATEWAY_STALE_IN_FLIGHT_SECONDS (60 by default), read per call so tests can shorten it.
def _stale_in_flight() -> timedelta:
    return timedelta(seconds=settings.GATEWAY_STALE_IN_FLIGHT_SECONDS)


UPSTREAM_CODES = {
    "unauthorized": "upstream_rejected",
    "forbidden": "upstream_rejected",
    "rejected": "upstream_rejected",
    "not_found": "not_found",
    "rate_limited": "rate_limited",
    "unavailable": "upstream_unavailable",
    "bad_response": "upstream_unavailable",
    "unknown_outcome": "outcome_unknown",
}


@dataclass
class _Trace:
    """What the journal needs to know about one call, filled in along the pipeline."""

    contour: Contour | None
    channel: str
    actor: str
    tool: str
    arguments: Any
    phase: str = "call"
    confirmation_id: str = ""
    operation_key: str = ""
    upstream_request_id: str = ""
    upstream_status: int | None = None
    started: float = field(default_factory=time.monotonic)
    key: ApiKey | None = None


def call(contour: Contour, name: Any, arguments: Any, *, channel: str, actor: str) -> Outcome:
    """Run one tool call through the whole pipeline and journal its outcome."""
    trace = _Trace(contour=contour, channel=channel, actor=actor,
                   tool=printable(name) if isinstance(name, str) else "", arguments=arguments)
    try:
        trace.key = keys.key_of(contour, actor)
        if trace.key is not None:
            keys.note_use(trace.key, channel)
        _refuse_unreadable(trace, name, arguments)
        outcome = _pipeline(trace, name, arguments)
    except ToolError as error:
        outcome = Outcome.from_error(error)
        trace.upstream_request_id = trace.upstream_request_id or error.upstream_request_id
        trace.upstream_status = trace.upstream_status or error.upstream_status
    except Exception:  # a bug of ours: still journaled, still an envelope, never a stack trace
        logger.exception("unexpected failure in tool %s", trace.tool)
        outcome = Outcome(status="error", code="internal_error",
                          message="внутренняя ошибка шлюза; операция не выполнена или не "
                                  "подтверждена — проверьте журнал", http_status=500)
    return _journal(trace, outcome)


@dataclass(frozen=True)
class BatchItem:
    """One call of a reply: its outcome, or the index of the identical call that answered it."""

    outcome: Outcome
    duplicate_of: int | None = None


def _refuse_unreadable(trace: _Trace, name: Any, arguments: Any) -> None:
    """Refuse what no later step could even walk safely; the journal keeps a placeholder."""
    problem = shape_problem(arguments)
    if not problem:
        return
    trace.arguments = {"_refused": problem}
    raise invalid_arguments([Problem(field="arguments", message=problem)])


def call_batch(contour: Contour, calls: list[tuple[Any, Any]], *, channel: str, actor: str
               ) -> list[BatchItem]:
    """Calls of one model reply. Identical ones (same name, same arguments as canonical JSON)
    run once: two equal blocks must never become two invoices. Every call gets an answer."""
    first_seen: dict[str, int] = {}
    items: list[BatchItem] = []
    for index, (name, arguments) in enumerate(calls):
        if shape_problem({"name": name, "arguments": arguments}):
            # Not comparable safely: answered (and refused) on its own, never collapsed.
            items.append(BatchItem(outcome=call(contour, name, arguments, channel=channel,
                                                actor=actor)))
            continue
        key = confirmations.canonical_json({"name": name, "arguments": arguments})
        if key in first_seen:
            original = first_seen[key]
            # Journaled too: every call lands in the journal, also the one not executed.
            reject(contour, "duplicate_call",
                   f"такой же вызов №{original + 1} в этом ответе уже обработан; повтор пропущен",
                   channel=channel, actor=actor, tool=name if isinstance(name, str) else "",
                   arguments=arguments)
            items.append(BatchItem(outcome=items[original].outcome, duplicate_of=original))
            continue
        first_seen[key] = index
        items.append(BatchItem(outcome=call(contour, name, arguments, channel=channel,
                                            actor=actor)))
    return items


def reject(contour: Contour | None, code: str, message: str, *, channel: str, actor: str,
           tool: str = "", arguments: Any = None, hint: str = "") -> Outcome:
    """Journal a call an adapter could not even parse (bad JSON, no key) and answer it."""
    if shape_problem(arguments):
        arguments = {"_refused": shape_problem(arguments)}
    trace = _Trace(contour=contour, channel=channel, actor=actor, tool=printable(tool),
                   arguments=arguments)
    return _journal(trace, Outcome.from_error(ToolError(code, message, hint=hint)))


def visible_tools(contour: Contour, actor: str = "") -> list[ToolSpec]:
    """The contour's tools, narrowed to the calling key's scope when actor names a key."""
    return keys.visible([spec for spec in catalog.CATALOG
                         if contour.has_toolset(spec.toolset) and contour.tool_enabled(spec.name)],
                        keys.key_of(contour, actor))


# -- the pipeline ----------------------------------------------------------------------------

def _pipeline(trace: _Trace, name: Any, arguments: Any) -> Outcome:
    contour = trace.contour
    assert contour is not None
    spec = catalog.get(name) if isinstance(name, str) else None
    if spec is None:
        # Only what this contour may call: naming the rest would only invite `forbidden`.
        visible = [tool.name for tool in visible_tools(contour)]
        raise ToolError("unknown_tool", f"инструмента {str(name)[:64]!r} нет; этому контуру "
                        "доступны: " + (", ".join(visible) or "ни одного"),
                        data={"known_tools": visible})
    if not isinstance(arguments, dict):
        raise ToolError("arguments_not_object",
                        f"arguments должен быть JSON-объектом, а пришёл {json_kind(arguments)}",
                        hint='передайте аргументы объектом: {"order_id": "..."}')
    token = arguments.get("confirmation_token") if spec.writes else None
    trace.phase = "read" if not spec.writes else ("execute" if token else "prepare")
    if not contour.has_toolset(spec.toolset):
        raise ToolError("forbidden", _forbidden_message(spec, contour),
                        hint="включить набор может только владелец контура в админке")
    if not contour.tool_enabled(spec.name):
        raise ToolError("forbidden", f"инструмент {spec.name} выключен владельцем контура "
                        f"«{contour.slug}»", hint="включить его может только владелец контура")
    keys.check_scope(trace.key, spec)
    params = validate(spec.params, arguments)
    problems = spec.check(params, contour) if spec.check else []
    if problems:
        raise invalid_arguments(problems)
    if not spec.writes:
        return _read(trace, spec, params)
    canonical = spec.canonical_arguments(params)
    if not token:
        return _prepare(trace, spec, params, canonical)
    return _execute(trace, spec, params, canonical, token)


def _read(trace: _Trace, spec: ToolSpec, params: BaseModel) -> Outcome:
    with _client(trace.contour) as client:
        data = _upstream(trace, client, lambda: spec.handler(CallContext(trace.contour, client),
                                                            params))
        return Outcome(status="ok", code="ok", message=phrases.read_message(spec, data),
                       data=_with_context(trace, data))


def _prepare(trace: _Trace, spec: ToolSpec, params: BaseModel, canonical: dict[str, Any]
             ) -> Outcome:
    contour = trace.contour
    allow_duplicate = bool(getattr(params, "allow_duplicate", False))
    if not allow_duplicate:
        earlier = confirmations.recent_execution(contour, spec, canonical)
        if earlier is not None:
            trace.confirmation_id = str(earlier.id)
            when = timezone.localtime(earlier.executed_at)
            return Outcome(
                status="ok", code="ok", replayed=True, data=earlier.result or {},
                message=(f"{spec.title}: такая же операция уже выполнена {when:%d.%m.%Y %H:%M}; "
                         "повторная не создана, вот её результат"),
                hint="если нужна ещё одна такая же, вызовите с allow_duplicate: true",
            )
    pending = confirmations.unresolved_operation(contour, spec, canonical)
    if pending is not None:
        return _unresolved(trace, spec, pending)
    assert spec.summarize is not None  # every write tool declares its summary
    with _client(contour) as client:
        summary = _upstream(trace, client,
                            lambda: spec.summarize(CallContext(contour, client), params))
    ceilings.check(contour, ceilings.Request(summary.amount, summary.currency))
    reason = approvals.requirement(spec, contour, summary.amount, summary.currency,
                                   operator_reason=summary.operator_reason)
    confirmation, token = confirmations.prepare(
        contour, spec, canonical, summary, trace.actor, approval_reason=reason,
        reuse_open=not allow_duplicate,
    )
    trace.confirmation_id = str(confirmation.id)
    url = approvals.approval_url(confirmation) if approvals.needs_human(spec, confirmation) else ""
    if url:
        alerts.waiting_started(confirmation)  # idempotent: a reused item alerts no one twice
    hint = ("перескажите сводку человеку; если он согласен, повторите вызов с теми же "
            "параметрами и confirmation_token")
    if url:
        hint = (f"{confirmation.approval_reason or 'нужно одобрение оператора'}; операцию "
                f"одобряют по ссылке {url}, затем повторите вызов с теми же параметрами и "
                "confirmation_token")
    return Outcome(
        status="confirmation_required", code="confirmation_required",
        message=f"нужно подтверждение: {summary.text}", hint=hint,
        data={"summary": summary.data, "warnings": summary.warnings,
              "requires_approval": bool(url)},
        confirmation=confirmations.envelope(confirmation, token, url),
    )


def _unresolved(trace: _Trace, spec: ToolSpec, operation: Operation) -> Outcome:
    """The same write already began and its outcome is not proven: its state and its token,
    never a new token (a new one would become a second operation)."""
    confirmation = operation.confirmation
    trace.confirmation_id = str(confirmation.id)
    trace.operation_key = operation.key
    hint = ("не создавайте операцию заново: повторите вызов с теми же параметрами и этим "
            "confirmation_token — шлюз сначала проверит, выполнена ли она")
    if operation.state == OperationState.IN_FLIGHT:
        message = f"{spec.title}: такая же операция уже выполняется"
    else:
        message = (f"{spec.title}: такая же операция уже начата, и её результат неизвестен; "
                   "новая не создана")
    raise ToolError(
        "outcome_unknown" if operation.state == OperationState.UNKNOWN else "duplicate_call",
        message, hint=hint,
        data={"operation_state": operation.state,
              "confirmation": confirmations.envelope(confirmation,
                                                     confirmations.token_for(confirmation))},
    )


def _execute(trace: _Trace, spec: ToolSpec, params: BaseModel, canonical: dict[str, Any],
             token: str) -> Outcome:
    contour = trace.contour
    confirmation = confirmations.resolve(contour, spec, canonical, token)
    trace.confirmation_id = str(confirmation.id)
    if (confirmation.status != ConfirmationStatus.EXECUTED
            and approvals.needs_human(spec, confirmation)
            and confirmation.status != ConfirmationStatus.APPROVED):
        url = approvals.approval_url(confirmation)
        return Outcome(
            status="awaiting_approval", code="awaiting_approval",
            message=f"ждёт решения оператора: {confirmation.approval_reason or spec.title}",
            hint=f"операцию одобряют по ссылке {url}; затем повторите этот же вызов",
            confirmation={"id": str(confirmation.id), "approval_url": url,
                          "expires_at": confirmation.expires_at.isoformat(),
                          "summary": confirmation.summary},
        )
    operation, replay, previous = _claim(trace, spec, confirmation)
    trace.operation_key = operation.key
    if replay is not None:
        return _done(trace, spec, replay, replayed=True)
    with _client(contour) as client:
        ctx = CallContext(contour, client, merchant_order_id=operation.merchant_order_id,
                          operation_key=operation.key, operation_started=operation.created_at,
                          operator_approved=confirmation.status == ConfirmationStatus.APPROVED)
        data = None
        if previous is not None and spec.recover is not None:
            # Recovery first, before any re-check: a landed order is answered, never refused.
            data = _recover(trace, client, spec, ctx, params, operation, confirmation, previous)
        if data is None:
            if previous is not None and (spec.recover is not None
                                         or previous == OperationState.FAILED):
                _recheck_ceilings(contour, operation, confirmation)
            try:
                data = _send(trace, client, spec, ctx, params)
            except ToolError as error:
                state = (OperationState.UNKNOWN if error.code == "outcome_unknown"
                         else OperationState.FAILED)
                _finish(operation, confirmation, state, None, error.code,
                        trace.upstream_request_id)
                raise
    data = _with_context(trace, data)
    _finish(operation, confirmation, OperationState.DONE, data, "", trace.upstream_request_id)
    return _done(trace, spec, data, replayed=False)


def _recover(trace: _Trace, client: InvoiceboxClient, spec: ToolSpec, ctx: CallContext,
             params: BaseModel, operation: Operation, confirmation: PendingConfirmation,
             previous: str) -> dict[str, Any] | None:
    """Look the earlier attempt up: its result when found, None when proven absent.

    A lookup that fails proves nothing: an operation that may have happened stays `unknown`
    (and keeps counting against the ceilings), and the answer says so.
    """
    assert spec.recover is not None
    try:
        found = _upstream(trace, client, lambda: spec.recover(ctx, params))
    except ToolError as error:
        may_have_happened = previous != OperationState.FAILED
        state = OperationState.UNKNOWN if may_have_happened else OperationState.FAILED
        _finish(operation, confirmation, state, None, error.code, trace.upstream_request_id)
        if may_have_happened:
            raise ToolError(
                error.code,
                f"{error.message}; проверить, выполнена ли операция, не удалось — её результат "
                "по-прежнему неизвестен",
                hint=("не создавайте операцию заново: повторите позже тот же вызов с тем же "
                      "токеном — шлюз снова проверит, выполнена ли она"),
                data={**error.data, "operation_state": OperationState.UNKNOWN.value},
                upstream_request_id=error.upstream_request_id,
                upstream_status=error.upstream_status,
            ) from None
        raise
    if found is None:
        return None
    return {**found, "recovered": True}


def _recheck_ceilings(contour: Contour, operation: Operation,
                      confirmation: PendingConfirmation) -> None:
    """After the earlier attempt is proven absent: check the ceilings again, as for a new one.

    Under the contour's row lock, like _claim; the operation itself is left out of the count.
    """
    try:
        with transaction.atomic():
            Contour.objects.select_for_update().filter(pk=contour.pk).first()
            ceilings.check(contour, ceilings.Request(operation.amount, operation.currency or None),
                           exclude_operation=operation.pk)
    except ToolError as error:
        _finish(operation, confirmation, OperationState.FAILED, None, error.code, "")
        raise


def _send(trace: _Trace, client: InvoiceboxClient, spec: ToolSpec, ctx: CallContext,
          params: BaseModel) -> dict[str, Any]:
    try:
        return _upstream(trace, client, lambda: spec.handler(ctx, params))
    except ToolError as error:
        # Our minted id already exists upstream: an earlier attempt did land. Find it.
        if error.data.get("upstream_code") != "merchant_order_id_duplicate" or not spec.recover:
            raise
        found = _upstream(trace, client, lambda: spec.recover(ctx, params))
        if found is None:
            raise
        return {**found, "recovered": True}


def _claim(trace: _Trace, spec: ToolSpec, confirmation: PendingConfirmation
           ) -> tuple[Operation, dict[str, Any] | None, str | None]:
    """Take the right to execute under a row lock; a finished operation is replayed instead.

    Returns the operation, the stored result of a finished one, and the state an earlier
    attempt left (None for the first attempt). Only a first attempt has its ceilings checked
    here: a later one is looked up first (_recover), then re-checked (_recheck_ceilings).

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
        if confirmations.expired_unbegun(locked, existing):
            raise confirmations.expired(locked)
        previous: str | None = None
        if existing is None:
            ceilings.check(contour, ceilings.Request(locked.amount, locked.currency or None))
            # Born in flight: the locked confirmation row keeps any other creator out (and
            # the unique confirmation would refuse one).
            operation = Operation.objects.create(
                confirmation=locked, key=key, contour=contour, tool=spec.name,
                merchant_order_id=f"gw-{timezone.now():%Y%m%d}-{key[:12]}",
                amount=locked.amount, currency=locked.currency,
                state=OperationState.IN_FLIGHT, attempts=1, started_at=timezone.now(),
            )
        else:
            operation = existing
            if operation.state == OperationState.DONE:
                return operation, operation.result or locked.result or {}, None
            stale = timezone.now() - operation.started_at > _stale_in_flight()
            if operation.state == OperationState.IN_FLIGHT and not stale:
                raise ToolError("duplicate_call", "такая же операция уже выполняется",
                                hint="подождите несколько секунд и повторите тот же вызов")
            previous = operation.state
            operation.state = OperationState.IN_FLIGHT
            operation.attempts += 1
            operation.started_at = timezone.now()
            operation.save(update_fields=["state", "attempts", "started_at"])
        trace.operation_key = operation.key
        _journal_started(trace, operation)
        return operation, None, previous


def _finish(operation: Operation, confirmation: PendingConfirmation, state: str,
            result: dict[str, Any] | None, error_code: str, request_id: str) -> None:
    with transaction.atomic():
        # The lock order of _claim (confirmation before operation): updating the operation
        # first deadlocks against a concurrent _claim of the same token on PostgreSQL.
        PendingConfirmation.objects.select_for_update().filter(pk=confirmation.pk).first()
        now = timezone.now()
        Operation.objects.filter(pk=operation.pk).update(
            state=state, result=result, error_code=error_code, upstream_request_id=request_id,
            finished_at=now,
        )
        if state == OperationState.DONE:
            PendingConfirmation.objects.filter(pk=confirmation.pk).update(
                status=ConfirmationStatus.EXECUTED, executed_at=now, result=result
            )


def _done(trace: _Trace, spec: ToolSpec, data: dict[str, Any], *, replayed: bool) -> Outcome:
    message = phrases.done_message(spec, replayed=replayed)
    return Outcome(status="ok", code="ok", message=message, data=data, replayed=replayed)


# -- helpers ---------------------------------------------------------------------------------

def _client(contour: Contour) -> InvoiceboxClient:
    return make_client(base_url=contour.base_url, token=contour.api_token,
                       merchant_id=contour.merchant_id)


def _upstream(trace: _Trace, client: InvoiceboxClient, action: Any) -> Any:
    try:
        return action()
    except InvoiceboxError as error:
        data: dict[str, Any] = {"upstream_code": error.code} if error.code else {}
        if error.retry_after is not None:
            data["retry_after_seconds"] = error.retry_after
        raise ToolError(
            UPSTREAM_CODES[error.kind], error.message,
            hint=_upstream_hint(error),
            data=data,
            upstream_request_id=error.request_id,
            upstream_status=error.http_status,
        ) from None
    finally:
        trace.upstream_request_id = client.last_request_id
        trace.upstream_status = client.last_status


def _upstream_hint(error: InvoiceboxError) -> str:
    if error.kind == "unknown_outcome":
        return ("не создавайте операцию заново: повторите тот же вызов с тем же токеном — шлюз "
                "сначала проверит, не выполнена ли она")
    if error.kind in ("unavailable", "rate_limited", "bad_response"):
        return "повторите позже"
    if error.kind == "unauthorized":
        return "владельцу контура нужно проверить токен Инвойсбокс"
    return ""


def _with_context(trace: _Trace, data: dict[str, Any]) -> dict[str, Any]:
    contour = trace.contour
    return {**data, "environment": contour.mode, "scope_context": f"магазин {contour.merchant_id}",
            "request_id": trace.upstream_request_id}


def _forbidden_message(spec: ToolSpec, contour: Contour) -> str:
    if spec.toolset == "write":
        return (f"инструмент {spec.name} изменяет данные, а контур «{contour.slug}» только "
                "читает: запись не включена владельцем")
    return f"набор «{spec.toolset}» не включён для контура «{contour.slug}»"


def _journal_started(trace: _Trace, operation: Operation) -> None:
    """The entry of an attempt, written before its upstream request (the outcome follows)."""
    journal.record(
        contour=trace.contour.slug if trace.contour is not None else "",
        channel=trace.channel, actor=trace.actor, tool=trace.tool[:64], phase="execute",
        arguments=_journal_arguments(trace), status="started", code="execution_started",
        message=f"исполнение начато: попытка {operation.attempts}",
        confirmation_id=trace.confirmation_id, operation_key=operation.key,
        duration_ms=int((time.monotonic() - trace.started) * 1000),
        secrets=trace.contour.secrets() if trace.contour is not None else [],
        savepoint=False,  # inside _claim's transaction: no entry, no claim
    )


def _journal_arguments(trace: _Trace) -> dict[str, Any]:
    if isinstance(trace.arguments, dict):
        return trace.arguments
    return {"_raw": printable(str(trace.arguments)[:200])}


def _journal(trace: _Trace, outcome: Outcome) -> Outcome:
    arguments = _journal_arguments(trace)
    contour = trace.contour
    fields: dict[str, Any] = {
        "contour": contour.slug if contour is not None else "",
        "channel": trace.channel, "actor": trace.actor, "tool": trace.tool[:64],
        "phase": trace.phase, "status": outcome.status, "code": outcome.code,
        "confirmation_id": trace.confirmation_id, "operation_key": trace.operation_key,
        "upstream_request_id": trace.upstream_request_id,
        "upstream_status": trace.upstream_status,
        "duration_ms": int((time.monotonic() - trace.started) * 1000),
        "secrets": contour.secrets() if contour is not None else [],
    }
    try:
        entry = journal.record(arguments=arguments, message=outcome.message, **fields)
    except Exception:
        # Journaling must never fail the call: keep what can be recorded, say what could not.
        logger.exception("journal entry of tool %s failed; writing a fallback", trace.tool)
        try:
            entry = journal.record(
                arguments={"_unrecordable": "аргументы не удалось записать в журнал"},
                message=printable(outcome.message)[:500], **fields)
        except Exception:
            logger.exception("fallback journal entry of tool %s failed", trace.tool)
            return outcome
    outcome.journal_id = entry.id
    observe_call(entry)  # tools/ops: metrics, the JSON log line, Sentry; never raises
    return outcome


__all__ = ["CONTROL_FIELDS", "BatchItem", "call", "call_batch", "reject", "visible_tools"]
