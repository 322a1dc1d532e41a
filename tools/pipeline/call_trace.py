"""One call's trace and its journal entries: what the gateway records about every call.

The trace is filled in along the pipeline (tools/pipeline/gateway.py); journal_started() writes the
entry of an execution attempt inside its claim, journal_outcome() the entry of the answer,
through the spool when the database is away (audit/spool.py).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from audit import journal
from audit.spool import record_or_spool
from tools.errors import JOURNAL_UNAVAILABLE_MESSAGE, JournalState, Outcome
from tools.models import ApiKey, Contour, Operation
from tools.ops.hooks import observe_call
from tools.validation import printable

logger = logging.getLogger("tools.pipeline.gateway")


@dataclass
class Trace:
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
    # What the upstream answered during the call: the journal masks the personal values in it.
    replies: list[Any] = field(default_factory=list)


def journal_started(trace: Trace, operation: Operation) -> None:
    """The entry of an attempt, written before its upstream request (the outcome follows)."""
    journal.record(
        contour=trace.contour.slug if trace.contour is not None else "",
        channel=trace.channel,
        actor=trace.actor,
        tool=trace.tool[:64],
        phase="execute",
        arguments=journal_arguments(trace),
        status="started",
        code="execution_started",
        message=f"исполнение начато: попытка {operation.attempts}",
        confirmation_id=trace.confirmation_id,
        operation_key=operation.key,
        duration_ms=int((time.monotonic() - trace.started) * 1000),
        secrets=trace.contour.secrets() if trace.contour is not None else [],
        savepoint=False,  # inside execution.claim's transaction: no entry, no claim
    )


def journal_arguments(trace: Trace) -> dict[str, Any]:
    if isinstance(trace.arguments, dict):
        return trace.arguments
    return {"_raw": printable(str(trace.arguments)[:200])}


def journal_outcome(trace: Trace, outcome: Outcome, *, note: str = "") -> Outcome:
    """Journal the answer (`note` is added to the journaled message only) and say in it where
    the entry is: journal_id, journal_pending, or journal_unavailable (kept nowhere)."""
    arguments = journal_arguments(trace)
    contour = trace.contour
    fields: dict[str, Any] = {
        "contour": contour.slug if contour is not None else "",
        "channel": trace.channel,
        "actor": trace.actor,
        "tool": trace.tool[:64],
        "phase": trace.phase,
        "status": outcome.status,
        "code": outcome.code,
        "confirmation_id": trace.confirmation_id,
        "operation_key": trace.operation_key,
        "upstream_request_id": trace.upstream_request_id,
        "upstream_status": trace.upstream_status,
        "duration_ms": int((time.monotonic() - trace.started) * 1000),
        "secrets": contour.secrets() if contour is not None else [],
        "read_back": trace.replies,
    }
    try:
        entry = record_or_spool(arguments=arguments, message=outcome.message + note, **fields)
    except Exception:
        # Journaling must never fail the call: keep what can be recorded, say what could not.
        logger.exception("journal entry of tool %s failed; writing a fallback", trace.tool)
        try:
            entry = record_or_spool(
                arguments={"_unrecordable": "аргументы не удалось записать в журнал"},
                message=printable(outcome.message)[:500],
                **fields,
            )
        except Exception:
            logger.exception("fallback journal entry of tool %s failed", trace.tool)
            return unjournaled(outcome)
    if entry.lost:
        return unjournaled(outcome)
    if entry.spool_id:
        # Written to the local spool while the database was away; it reaches the journal
        # when the database is back (audit/spool.py), under this id.
        outcome.journal_pending = entry.spool_id
        outcome.journal_state = JournalState.PENDING
        return outcome
    outcome.journal_id = entry.id
    outcome.journal_state = JournalState.RECORDED
    assert entry.entry is not None  # neither lost nor spooled
    observe_call(entry.entry)  # tools/ops: metrics, the JSON log line, Sentry; never raises
    return outcome


def unjournaled(outcome: Outcome) -> Outcome:
    """An answer whose entry neither the database nor the spool took says so.

    A call that did nothing upstream (a refusal, or the database away before any claim) is
    refused as `journal_unavailable`, its own code kept in data.refused_code: "every call is
    journaled" cannot hold, so nothing runs. An answer that carries a result or an unknown
    outcome (the upstream was reached) keeps its code and says journal_state `unavailable`,
    with journal_error beside it. An execution never reaches the upstream in this state: its
    `execution_started` entry is written in the claim's transaction
    (tools/pipeline/execution.py), so a claim whose entry the database refused is no claim.
    """
    outcome.journal_state = JournalState.UNAVAILABLE
    if outcome.status in ("rejected", "error") and outcome.code != "outcome_unknown":
        outcome.data = {**outcome.data, "refused_code": outcome.code}
        outcome.status, outcome.code = "error", "journal_unavailable"
        outcome.message = (
            f"{JOURNAL_UNAVAILABLE_MESSAGE}; вызов не выполнен (причина отказа: {outcome.message})"
        )
        outcome.http_status = 503
    return outcome
