"""Optional Sentry: upstream failures and unknown outcomes are reported, argument values never."""

from __future__ import annotations

import logging
import warnings
from importlib import metadata
from typing import TYPE_CHECKING, Any

from tools.ops.labels import tool_label
from tools.ops.logs import CALL_LOGGER

if TYPE_CHECKING:
    from sentry_sdk._types import Event, LogLevelStr

    from audit.models import JournalEntry

# Outcome codes worth a human's attention, with their Sentry level.
REPORTED: dict[str, LogLevelStr] = {"outcome_unknown": "error", "upstream_unavailable": "warning"}
# The upstream refusing our credentials is an operations problem too, not an assistant's.
CREDENTIAL_STATUSES = frozenset({401, 403})
_KEPT_REQUEST_KEYS = ("method", "url")


def init(dsn: str, *, environment: str, transport: Any = None) -> None:
    """Called from settings when SENTRY_DSN is set (before Django is set up, as Sentry asks);
    tests pass a transport that keeps the events instead of sending them."""
    import sentry_sdk
    from sentry_sdk.integrations.django import DjangoIntegration
    from sentry_sdk.integrations.logging import LoggingIntegration, ignore_logger

    with warnings.catch_warnings():
        # Newer SDKs call send_default_pii deprecated in favour of data_collection, which they
        # derive from it; the explicit False means the same on every 2.x release.
        warnings.filterwarnings("ignore", "The send_default_pii option", DeprecationWarning)
        sentry_sdk.init(
            dsn=dsn,
            environment=environment,
            release=f"invoicebox-gateway@{_version()}",
            send_default_pii=False,
            include_local_variables=False,
            max_request_body_size="never",
            # Breadcrumbs are log lines and outgoing URLs: exactly where argument values go.
            max_breadcrumbs=0,
            # httpx, Celery, Redis integrations would attach URLs and task arguments: off.
            auto_enabling_integrations=False,
            integrations=[
                DjangoIntegration(),
                LoggingIntegration(level=None, event_level=logging.ERROR),
            ],
            before_send=before_send,
            traces_sample_rate=0.0,
            transport=transport,
        )
    # The per-call line is reported by report_call(), with tags instead of the line's fields.
    ignore_logger(CALL_LOGGER)


def _version() -> str:
    try:
        return str(metadata.version("invoicebox-gateway"))
    except metadata.PackageNotFoundError:
        return "unknown"


def before_send(event: Event, hint: dict[str, Any]) -> Event:
    """Strip everything that could carry a value an assistant sent: request bodies, query
    strings, headers, cookies, extra data, local variables, exception messages, log params."""
    request = event.get("request")
    if isinstance(request, dict):
        kept = {key: request[key] for key in _KEPT_REQUEST_KEYS if key in request}
        if "url" in kept:
            kept["url"] = str(kept["url"]).split("?", 1)[0]
        event["request"] = kept
    event.pop("extra", None)
    event.pop("user", None)
    event["breadcrumbs"] = {"values": []}
    for exception in (event.get("exception") or {}).get("values") or []:
        # A validation error's text quotes the input; the type and the stack locate the bug.
        exception["value"] = ""
        for frame in (exception.get("stacktrace") or {}).get("frames") or []:
            frame.pop("vars", None)
    for thread in (event.get("threads") or {}).get("values") or []:
        for frame in (thread.get("stacktrace") or {}).get("frames") or []:
            frame.pop("vars", None)
    logentry = event.get("logentry")
    if isinstance(logentry, dict):
        event["logentry"] = {"message": logentry.get("message", "")}
    return event


def report_call(entry: JournalEntry) -> None:
    """Send one event for a call that failed upstream or ended with an unknown outcome."""
    level = REPORTED.get(entry.code)
    if (
        level is None
        and entry.code == "upstream_rejected"
        and entry.upstream_status in CREDENTIAL_STATUSES
    ):
        level = "warning"
    if level is None:
        return
    import sentry_sdk

    if not sentry_sdk.get_client().is_active():
        return
    tool = tool_label(entry.tool)
    with sentry_sdk.new_scope() as scope:
        for key, value in (
            ("tool", tool),
            ("channel", entry.channel),
            ("code", entry.code),
            ("phase", entry.phase),
            ("contour", entry.contour),
            ("journal_id", entry.id),
            ("upstream_status", entry.upstream_status or "none"),
            ("upstream_request_id", entry.upstream_request_id or "none"),
        ):
            scope.set_tag(key, str(value))
        scope.fingerprint = ["gateway-call", entry.code, tool]
        sentry_sdk.capture_message(f"{entry.code} in {tool} (journal #{entry.id})", level=level)
