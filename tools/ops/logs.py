"""Structured logs: a JSON formatter for every record and the one line written per tool call."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django.http import HttpRequest, HttpResponse

from audit.redaction import redact

if TYPE_CHECKING:
    from audit.models import JournalEntry

CALL_LOGGER = "gateway.calls"

# What every LogRecord carries; anything else on a record came in through `extra=`.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}
# A record whose extra fields were redacted by their writer says so (redacting twice would
# mask a masked INN again, and the log would no longer read like the journal).
REDACTED_FLAG = "fields_redacted"

_LEVELS = {
    "ok": logging.INFO,
    "confirmation_required": logging.INFO,
    "awaiting_approval": logging.INFO,
    "rejected": logging.INFO,
    "error": logging.WARNING,
}
_SEVERE_CODES = frozenset({"outcome_unknown", "internal_error"})


# Celery's trace logger repeats its message's context as the extra `data`; of it the task's id,
# name and runtime are code, not personal data ("name" would otherwise be masked like a
# customer's name: "to***"), while args and return values stay redacted.
_CELERY_TASK_FIELDS = ("id", "name", "runtime")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, extra fields (redacted), error."""

    def format(self, record: logging.LogRecord) -> str:
        fields = {
            key: value
            for key, value in vars(record).items()
            if key not in _STANDARD and key != REDACTED_FLAG
        }
        if not getattr(record, REDACTED_FLAG, False):
            fields = _redact(record, fields)
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            **fields,
        }
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["error"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str, separators=(",", ":"))


def _redact(record: logging.LogRecord, fields: dict[str, Any]) -> dict[str, Any]:
    redacted = redact(fields)
    task = fields.get("data")
    if (
        record.name.startswith("celery.")
        and isinstance(task, dict)
        and isinstance(redacted.get("data"), dict)
    ):
        redacted["data"].update({key: task[key] for key in _CELERY_TASK_FIELDS if key in task})
    return redacted


def journaled_refusals_logged_once(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware: a 4xx carrying an envelope the journal recorded (its `journal_id`) already
    has its `gateway.calls` line; Django's own `django.request` warning ("Bad Request:
    /api/v1/call") would repeat every refused tool call as a warning. Other 4xx stay logged."""

    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        body = getattr(response, "data", None)  # a DRF Response's envelope, before rendering
        if (
            400 <= response.status_code < 500
            and isinstance(body, dict)
            and body.get("journal_id") is not None
        ):
            # django.utils.log.log_response's own flag (private: django-stubs leave it out)
            response._has_been_logged = True  # type: ignore[attr-defined]
        return response

    return middleware


def call_fields(entry: JournalEntry) -> dict[str, Any]:
    """A journal entry as a log line: its arguments are the journal's redacted copy, and its
    free-text message (a summary may name the customer) is left out."""
    return {
        "event": "tool_call",
        "journal_id": entry.id,
        "contour": entry.contour,
        "channel": entry.channel,
        "actor": entry.actor,
        "tool": entry.tool,
        "phase": entry.phase,
        "status": entry.status,
        "code": entry.code,
        "duration_ms": entry.duration_ms,
        "upstream_request_id": entry.upstream_request_id,
        "upstream_status": entry.upstream_status,
        "confirmation_id": entry.confirmation_id,
        "operation_key": entry.operation_key,
        "arguments": entry.arguments,
    }


def log_call(entry: JournalEntry) -> None:
    level = (
        logging.ERROR if entry.code in _SEVERE_CODES else _LEVELS.get(entry.status, logging.INFO)
    )
    logging.getLogger(CALL_LOGGER).log(
        level,
        "%s %s %s",
        entry.tool or "-",
        entry.status,
        entry.code,
        extra={**call_fields(entry), REDACTED_FLAG: True},
    )
