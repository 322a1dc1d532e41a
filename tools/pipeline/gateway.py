"""The one entry point: every adapter calls call(). The checks, the first phase of a write
(summary, confirmation) and whether a presented token may execute live here; the execution
itself is tools/pipeline/execution.py, the journal entry tools/pipeline/call_trace.py."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError
from django.utils import timezone
from pydantic import BaseModel

from tools import catalog, phrases
from tools.background import alerts
from tools.errors import JournalState, Outcome, Problem, ToolError, invalid_arguments
from tools.json_kinds import json_kind
from tools.keys import scope as keys
from tools.models import (
    ConfirmationStatus,
    Contour,
    Operation,
    OperationState,
    PendingConfirmation,
)
from tools.pipeline import anonymous, approvals, ceilings, confirmations, execution, facts
from tools.pipeline.call_trace import Trace as _Trace
from tools.pipeline.call_trace import journal_outcome as _journal
from tools.pipeline.database_faults import database_outcome
from tools.pipeline.upstream_calls import client_for, refuse_unusable_token, upstream, with_context
from tools.spec import CallContext, ToolSpec
from tools.validation import printable, shape_problem, validate

logger = logging.getLogger(__name__)


def call(contour: Contour, name: Any, arguments: Any, *, channel: str, actor: str) -> Outcome:
    """Run one tool call through the whole pipeline and journal its outcome."""
    trace = _Trace(
        contour=contour,
        channel=channel,
        actor=actor,
        tool=printable(name) if isinstance(name, str) else "",
        arguments=arguments,
    )
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
    except DatabaseError:
        # The database is a fault like any other: an envelope with a stable code, never a 500.
        logger.exception("database failure in tool %s", trace.tool)
        outcome = database_outcome(claimed=bool(trace.operation_key) and trace.phase == "execute")
    except Exception:  # a bug of ours: still journaled, still an envelope, never a stack trace
        logger.exception("unexpected failure in tool %s", trace.tool)
        outcome = Outcome(
            status="error",
            code="internal_error",
            message="внутренняя ошибка шлюза; операция не выполнена или не "
            "подтверждена — проверьте журнал",
            http_status=500,
        )
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


def call_batch(
    contour: Contour, calls: list[tuple[Any, Any]], *, channel: str, actor: str
) -> list[BatchItem]:
    """Calls of one model reply. Identical ones (same name, same arguments as canonical JSON)
    run once: two equal blocks must never become two invoices. Every call gets an answer."""
    first_seen: dict[str, int] = {}
    items: list[BatchItem] = []
    for index, (name, arguments) in enumerate(calls):
        if shape_problem({"name": name, "arguments": arguments}):
            # Not comparable safely: answered (and refused) on its own, never collapsed.
            items.append(
                BatchItem(outcome=call(contour, name, arguments, channel=channel, actor=actor))
            )
            continue
        key = confirmations.canonical_json({"name": name, "arguments": arguments})
        if key in first_seen:
            original = first_seen[key]
            # Journaled too: every call lands in the journal, also the one not executed.
            reject(
                contour,
                "duplicate_call",
                f"такой же вызов №{original + 1} в этом ответе уже обработан; повтор пропущен",
                channel=channel,
                actor=actor,
                tool=name if isinstance(name, str) else "",
                arguments=arguments,
            )
            items.append(BatchItem(outcome=items[original].outcome, duplicate_of=original))
            continue
        first_seen[key] = index
        items.append(
            BatchItem(outcome=call(contour, name, arguments, channel=channel, actor=actor))
        )
    return items


def reject(
    contour: Contour | None,
    code: str,
    message: str,
    *,
    channel: str,
    actor: str,
    tool: str = "",
    arguments: Any = None,
    hint: str = "",
) -> Outcome:
    """Journal a call an adapter could not even parse (bad JSON, no key) and answer it."""
    if shape_problem(arguments):
        arguments = {"_refused": shape_problem(arguments)}
    trace = _Trace(
        contour=contour, channel=channel, actor=actor, tool=printable(tool), arguments=arguments
    )
    outcome = Outcome.from_error(ToolError(code, message, hint=hint))
    if contour is None and anonymous.is_anonymous(actor):
        # No verified credential: counted always, journaled as a sample (tools/pipeline/anonymous.py).
        skipped = anonymous.admit(channel, trace.tool[:64], code)
        if skipped is None:
            outcome.journal_state = JournalState.SAMPLED
            return outcome
        note = f" (и ещё {skipped} таких же отказов после предыдущей записи)" if skipped else ""
        outcome = _journal(trace, outcome, note=note)
        # Only a sample kept somewhere lets later refusals answer `sampled` for it.
        kept = outcome.journal_state != JournalState.UNAVAILABLE
        anonymous.settle(channel, trace.tool[:64], code, kept=kept, skipped=skipped)
        return outcome
    return _journal(trace, outcome)


def visible_tools(contour: Contour, *, actor: str) -> list[ToolSpec]:
    """The contour's tools, narrowed to the calling key's scope when actor names a key (a
    required keyword: a caller that forgets it would list more than the key may call)."""
    return keys.visible(
        [
            spec
            for spec in catalog.CATALOG
            if contour.has_toolset(spec.toolset) and contour.tool_enabled(spec.name)
        ],
        keys.key_of(contour, actor),
    )


# -- the pipeline ----------------------------------------------------------------------------


def _pipeline(trace: _Trace, name: Any, arguments: Any) -> Outcome:
    contour = trace.contour
    assert contour is not None
    refuse_unusable_token(contour)
    spec = catalog.get(name) if isinstance(name, str) else None
    if spec is None:
        # Only what this contour may call: naming the rest would only invite `forbidden`.
        visible = [tool.name for tool in visible_tools(contour, actor=trace.actor)]
        raise ToolError(
            "unknown_tool",
            f"инструмента {str(name)[:64]!r} нет; этому контуру "
            "доступны: " + (", ".join(visible) or "ни одного"),
            data={"known_tools": visible},
        )
    if not isinstance(arguments, dict):
        raise ToolError(
            "arguments_not_object",
            f"arguments должен быть JSON-объектом, а пришёл {json_kind(arguments)}",
            hint='передайте аргументы объектом: {"order_id": "..."}',
        )
    token = arguments.get("confirmation_token") if spec.writes else None
    trace.phase = "read" if not spec.writes else ("execute" if token else "prepare")
    if not contour.has_toolset(spec.toolset):
        raise ToolError(
            "forbidden",
            _forbidden_message(spec, contour),
            hint="включить набор может только владелец контура в админке",
        )
    if not contour.tool_enabled(spec.name):
        raise ToolError(
            "forbidden",
            f"инструмент {spec.name} выключен владельцем контура «{contour.slug}»",
            hint="включить его может только владелец контура",
        )
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
    contour = trace.contour
    assert contour is not None  # _pipeline refused a call without one
    with client_for(contour) as client:
        data = upstream(trace, client, lambda: spec.handler(CallContext(contour, client), params))
        return Outcome(
            status="ok",
            code="ok",
            message=phrases.read_message(spec, data),
            data=with_context(trace, data),
        )


def _prepare(
    trace: _Trace, spec: ToolSpec, params: BaseModel, canonical: dict[str, Any]
) -> Outcome:
    contour = trace.contour
    assert contour is not None  # _pipeline refused a call without one
    allow_duplicate = bool(getattr(params, "allow_duplicate", False))
    if not allow_duplicate:
        earlier = confirmations.recent_execution(contour, spec, canonical)
        if earlier is not None:
            return _already_executed(trace, spec, earlier)
    pending = confirmations.unresolved_operation(contour, spec, canonical)
    if pending is not None:
        return _unresolved(trace, spec, pending)
    assert spec.summarize is not None  # every write tool declares its summary
    with client_for(contour) as client:
        summary = upstream(
            trace, client, lambda: spec.summarize(CallContext(contour, client), params)
        )
    ceilings.check(contour, ceilings.Request(summary.amount, summary.currency))
    reason = approvals.requirement(
        spec,
        contour,
        summary.amount,
        summary.currency,
        operator_reason=summary.operator_reason,
        changes=summary.changes,
    )
    confirmation, token = confirmations.prepare(
        contour,
        spec,
        canonical,
        summary,
        trace.actor,
        approval_reason=reason,
        reuse_open=not allow_duplicate,
    )
    trace.confirmation_id = str(confirmation.id)
    if confirmation.status == ConfirmationStatus.EXECUTED:
        return _already_executed(trace, spec, confirmation)
    begun = Operation.objects.filter(
        confirmation=confirmation, state__in=confirmations.UNRESOLVED_STATES
    ).first()
    if begun is not None:
        return _unresolved(trace, spec, begun)
    url = approvals.approval_url(confirmation) if approvals.needs_human(spec, confirmation) else ""
    if url:
        alerts.waiting_started(confirmation)  # idempotent: a reused item alerts no one twice
    hint = (
        "перескажите сводку человеку; если он согласен, повторите вызов с теми же "
        "параметрами и confirmation_token"
    )
    if url:
        hint = (
            f"{confirmation.approval_reason or 'нужно одобрение оператора'}; операцию "
            f"одобряют по ссылке {url}, затем повторите вызов с теми же параметрами и "
            "confirmation_token"
        )
    return Outcome(
        status="confirmation_required",
        code="confirmation_required",
        message=f"нужно подтверждение: {summary.text}",
        hint=hint,
        data={
            "summary": summary.data,
            "warnings": summary.warnings,
            "requires_approval": bool(url),
        },
        confirmation=confirmations.envelope(confirmation, token, url),
    )


def _already_executed(trace: _Trace, spec: ToolSpec, earlier: PendingConfirmation) -> Outcome:
    trace.confirmation_id = str(earlier.id)
    when = timezone.localtime(earlier.executed_at)
    return Outcome(
        status="ok",
        code="ok",
        replayed=True,
        data=earlier.result or {},
        message=(
            f"{spec.title}: такая же операция уже выполнена {when:%d.%m.%Y %H:%M}; "
            "повторная не создана, вот её результат"
        ),
        hint="если нужна ещё одна такая же, вызовите с allow_duplicate: true",
    )


def _unresolved(trace: _Trace, spec: ToolSpec, operation: Operation) -> Outcome:
    """The same write already began and its outcome is not proven: its state and its token,
    never a new token (a new one would become a second operation)."""
    confirmation = operation.confirmation
    trace.confirmation_id = str(confirmation.id)
    trace.operation_key = operation.key
    hint = (
        "не создавайте операцию заново: повторите вызов с теми же параметрами и этим "
        "confirmation_token — шлюз сначала проверит, выполнена ли она"
    )
    if operation.state == OperationState.IN_FLIGHT:
        message = f"{spec.title}: такая же операция уже выполняется"
    else:
        message = (
            f"{spec.title}: такая же операция уже начата, и её результат неизвестен; "
            "новая не создана"
        )
    raise ToolError(
        "outcome_unknown" if operation.state == OperationState.UNKNOWN else "duplicate_call",
        message,
        hint=hint,
        data={
            "operation_state": operation.state,
            "confirmation": confirmations.envelope(
                confirmation, confirmations.token_for(confirmation)
            ),
        },
    )


def _execute(
    trace: _Trace, spec: ToolSpec, params: BaseModel, canonical: dict[str, Any], token: str
) -> Outcome:
    """The token presented: whether the confirmed call may execute now (its confirmation, the
    operator's approval, the facts its summary showed); the execution is tools/pipeline/execution.py."""
    contour = trace.contour
    assert contour is not None  # _pipeline refused a call without one
    confirmation = confirmations.resolve(contour, spec, canonical, token)
    trace.confirmation_id = str(confirmation.id)
    if (
        confirmation.status != ConfirmationStatus.EXECUTED
        and approvals.needs_human(spec, confirmation)
        and confirmation.status != ConfirmationStatus.APPROVED
    ):
        url = approvals.approval_url(confirmation)
        return Outcome(
            status="awaiting_approval",
            code="awaiting_approval",
            message=f"ждёт решения оператора: {confirmation.approval_reason or spec.title}",
            hint=f"операцию одобряют по ссылке {url}; затем повторите этот же вызов",
            confirmation={
                "id": str(confirmation.id),
                "approval_url": url,
                "expires_at": confirmation.expires_at.isoformat(),
                "summary": confirmation.summary,
            },
        )
    changed = facts.changed_since_summary(trace, spec, params, confirmation)
    if changed:
        # What the person confirmed no longer holds: ask again, with the facts as they are.
        facts.close(confirmation, changed)
        outcome = _prepare(trace, spec, params, canonical)
        outcome.message = (
            "данные в Инвойсбокс изменились после сводки ("
            + "; ".join(changed)
            + "), операция не выполнена; "
            + outcome.message
        )
        outcome.data = {**outcome.data, "facts_changed": changed}
        return outcome
    return execution.execute(trace, spec, params, confirmation)


# -- helpers ---------------------------------------------------------------------------------


def _forbidden_message(spec: ToolSpec, contour: Contour) -> str:
    if spec.toolset == "write":
        return (
            f"инструмент {spec.name} изменяет данные, а контур «{contour.slug}» только "
            "читает: запись не включена владельцем"
        )
    return f"набор «{spec.toolset}» не включён для контура «{contour.slug}»"


__all__ = ["BatchItem", "call", "call_batch", "reject", "visible_tools"]
