"""One error family for every refusal: a stable code, a Russian message, a hint, field problems."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One failing field: its path (``basket_items[0].total_amount``) and what is wrong."""

    field: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


# status of the envelope and the REST HTTP status for each stable code (the wire contract).
CODE_STATUS: dict[str, tuple[str, int]] = {
    "unauthenticated": ("rejected", 401),
    "unknown_tool": ("rejected", 404),
    # A path under /api/ or /mcp that no route takes (adapters/rest/not_found.py).
    "no_such_path": ("rejected", 404),
    "forbidden": ("rejected", 403),
    # People only (tools/factors): a decision or a widening needs a fresh second factor.
    "second_factor_required": ("rejected", 403),
    "second_factor_invalid": ("rejected", 403),
    "second_factor_throttled": ("rejected", 429),
    "second_factor_bootstrap_required": ("rejected", 403),
    "prepared_device_expired": ("rejected", 403),
    # An OAuth grant's call beyond the toolsets its owner chose (a key's is `forbidden`).
    "insufficient_scope": ("rejected", 403),
    "invalid_arguments": ("rejected", 400),
    "invalid_json": ("rejected", 400),
    "arguments_not_object": ("rejected", 400),
    "confirmation_invalid": ("rejected", 409),
    "confirmation_expired": ("rejected", 409),
    "confirmation_used": ("rejected", 409),
    "confirmation_mismatch": ("rejected", 409),
    "approval_rejected": ("rejected", 409),
    "duplicate_call": ("rejected", 409),
    "not_found": ("rejected", 422),
    "precondition_failed": ("rejected", 422),
    "upstream_rejected": ("rejected", 422),
    "currency_not_allowed": ("rejected", 422),
    # 429 for a period ceiling (data.retry_after_seconds says when room frees up); one that no
    # wait can pass (the per-operation cap, a sum over the whole daily one) is answered 422 by
    # the ceiling itself (tools/pipeline/ceilings.py): a client that retries 429 must not loop.
    "ceiling_exceeded": ("rejected", 429),
    "rate_limited": ("rejected", 429),
    # MCP: a new session over the key's, its contour's or the deployment's cap (adapters/mcp).
    "too_many_sessions": ("rejected", 429),
    "upstream_unavailable": ("error", 502),
    "outcome_unknown": ("error", 504),
    # The gateway's own database is away: nothing was done, the call may be repeated.
    "database_unavailable": ("error", 503),
    # The request's body, before anything reads it (adapters/bounded_body.py): too large, or
    # not whole within the read deadline. Never journaled: no caller is known yet.
    "request_too_large": ("rejected", 413),
    "request_timeout": ("rejected", 408),
    # The worker has GATEWAY_MAX_INFLIGHT requests in flight and no slot freed within the short
    # wait (adapters/inflight.py): nothing was done, repeat after Retry-After. Not journaled.
    "overloaded": ("error", 503),
    # Neither the database nor the local spool could keep the call's journal entry: a call
    # that did nothing is refused with this code (audit/spool.py, tools/pipeline/call_trace.py).
    "journal_unavailable": ("error", 503),
    # The contour's stored Invoicebox token can't be read with GATEWAY_SECRETS_KEY (another
    # key, or a malformed stored value): nothing is sent until the owner enters it again.
    "contour_token_unreadable": ("error", 503),
}


class ToolError(Exception):
    """A refusal an assistant can relay: never a 500, always a stable ``code``."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        hint: str = "",
        problems: list[Problem] | None = None,
        data: dict[str, Any] | None = None,
        upstream_request_id: str = "",
        upstream_status: int | None = None,
        http_status: int | None = None,
    ) -> None:
        if code not in CODE_STATUS:
            raise ValueError(f"unregistered error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.problems = problems or []
        self.data = data or {}
        self.upstream_request_id = upstream_request_id
        self.upstream_status = upstream_status
        # A code's HTTP status, unless this refusal of it needs another (ceiling_exceeded).
        self._http_status = http_status

    @property
    def status(self) -> str:
        return CODE_STATUS[self.code][0]

    @property
    def http_status(self) -> int:
        return self._http_status or CODE_STATUS[self.code][1]


class JournalState:
    """What every answer says of its journal entry (`journal_state`)."""

    RECORDED = "recorded"  # in the journal: journal_id
    PENDING = "pending"  # in the local spool, drained when the database is back: journal_pending
    # An anonymous refusal counted but not written one by one (audit/sampling.py): one entry
    # per door, reason and period says how many there were.
    SAMPLED = "sampled"
    UNAVAILABLE = "unavailable"  # kept nowhere: journal_error says so


JOURNAL_UNAVAILABLE_MESSAGE = (
    "запись журнала не сохранена: база данных и локальная очередь журнала недоступны"
)


@dataclass
class Outcome:
    """The envelope of the wire contract: what the core returns and every adapter renders."""

    status: str
    code: str
    message: str
    hint: str = ""
    problems: list[Problem] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    confirmation: dict[str, Any] | None = None
    replayed: bool = False
    journal_id: int | None = None
    # The spool id of a journal entry written while the database was away (audit/spool.py).
    journal_pending: str = ""
    # Where the call's journal entry is (JournalState); set by tools/pipeline/call_trace.py.
    journal_state: str = ""
    http_status: int = 200

    @classmethod
    def from_error(cls, error: ToolError) -> Outcome:
        return cls(
            status=error.status,
            code=error.code,
            message=error.message,
            hint=error.hint,
            problems=list(error.problems),
            data=dict(error.data),
            http_status=error.http_status,
        )

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"status": self.status, "code": self.code, "message": self.message}
        if self.hint:
            body["hint"] = self.hint
        body["problems"] = [p.as_dict() for p in self.problems]
        body["data"] = dict(self.data)
        if self.confirmation is not None:
            body["confirmation"] = self.confirmation
        body["replayed"] = self.replayed
        body["journal_id"] = self.journal_id
        if self.journal_pending:
            body["journal_pending"] = self.journal_pending
        if self.journal_state:
            body["journal_state"] = self.journal_state
        if self.journal_state == JournalState.UNAVAILABLE:
            body["journal_error"] = {
                "code": "journal_unavailable",
                "message": JOURNAL_UNAVAILABLE_MESSAGE,
            }
        return body


def invalid_arguments(problems: list[Problem]) -> ToolError:
    """The one refusal for arguments that don't hold: every failing field, nothing guessed."""
    return ToolError(
        "invalid_arguments",
        "параметры не приняты: " + "; ".join(f"{p.field} — {p.message}" for p in problems[:3]),
        hint="исправьте перечисленные поля и повторите вызов; значения не угадываются",
        problems=problems,
    )


class ContourSetupError(ValueError):
    """A contour can't be created or changed as asked (tools/contours/services.py); the message
    says why."""
