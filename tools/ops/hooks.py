"""The two calls the core makes into operations: after each journal entry, around each request.

Observing must never change an outcome: a failure in here is logged and swallowed, and the
upstream request's own exceptions pass through untouched.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from tools.ops import logs, metrics, sentry

if TYPE_CHECKING:
    from audit.models import JournalEntry

logger = logging.getLogger(__name__)

# An error envelope is small; a huge error body is not worth parsing twice.
MAX_ERROR_BODY = 64 * 1024


def observe_call(entry: JournalEntry) -> None:
    """Called by tools.pipeline.call_trace.journal_outcome() once the entry is written: metrics,
    log, Sentry."""
    for step in (metrics.observe_call, logs.log_call, sentry.report_call):
        try:
            step(entry)
        except Exception:  # observability is never a reason to fail a call
            logger.exception("ops hook %s failed for journal entry %s", step.__name__, entry.id)


def observe_upstream(
    send: Callable[..., httpx.Response], method: str, path: str, **kwargs: Any
) -> httpx.Response:
    """Send one upstream request through `send` and record its latency, status, error code."""
    started = time.perf_counter()
    try:
        response = send(method, path, **kwargs)
    except httpx.TimeoutException:
        _record(method, path, started, status=None, failure="timeout")
        raise
    except httpx.HTTPError:
        _record(method, path, started, status=None, failure="network")
        raise
    _record(
        method,
        path,
        started,
        status=response.status_code,
        code=_error_code(response) if response.status_code >= 400 else "",
    )
    return response


def _record(method: str, path: str, started: float, **outcome: Any) -> None:
    try:
        metrics.observe_upstream(method, path, time.perf_counter() - started, **outcome)
    except Exception:
        logger.exception("ops hook failed to observe an upstream request")


def _error_code(response: httpx.Response) -> str:
    """The API's error.code ({"error": {"code": ...}}), or '' when the body has none."""
    if len(response.content) > MAX_ERROR_BODY:
        return ""
    try:
        payload = json.loads(response.content)
    except ValueError:
        return ""
    error = payload.get("error") if isinstance(payload, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else ""
