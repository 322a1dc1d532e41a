"""The gateway's policy defaults (a contour may override its own) and how operators are told
of writes waiting for them."""

import os

from django.core.exceptions import ImproperlyConfigured

from config.settings.environment import PRODUCTION, env

# Open orders older than this are no longer refreshed (their payment page expired long ago).
GATEWAY_REFRESH_MAX_AGE_DAYS = env.int("GATEWAY_REFRESH_MAX_AGE_DAYS", default=30)
# An execution still in flight after this long has lost its worker: the next call with the
# same token recovers it by lookup (tools/pipeline/gateway.py).
GATEWAY_STALE_IN_FLIGHT_SECONDS = env.float("GATEWAY_STALE_IN_FLIGHT_SECONDS", default=60.0)

# Gateway policy defaults (a contour may override its own).
GATEWAY_CONFIRMATION_TTL_SECONDS = env.int("GATEWAY_CONFIRMATION_TTL_SECONDS", default=15 * 60)
GATEWAY_DEDUP_WINDOW_SECONDS = env.int("GATEWAY_DEDUP_WINDOW_SECONDS", default=10 * 60)
# How long a write waiting for an operator stays open: people need hours, not the minutes a
# chat confirmation gets.
GATEWAY_APPROVAL_WINDOW_HOURS = env.int("GATEWAY_APPROVAL_WINDOW_HOURS", default=24)
# Threads per process for all sync work: Django's requests and the MCP core calls; each may
# wait on Invoicebox, and each keeps its own database connection.
GATEWAY_SYNC_THREADS = env.int("GATEWAY_SYNC_THREADS", default=32)
# Requests in flight per process (adapters/inflight.py): past it a request waits at most
# GATEWAY_INFLIGHT_WAIT_SECONDS for a slot, behind at most GATEWAY_INFLIGHT_QUEUE others, then
# gets a fast 503 `overloaded` with Retry-After instead of queueing into a client's timeout.
# 0 switches the limit off. /health, /metrics and MCP's GET stream are not counted.
GATEWAY_MAX_INFLIGHT = env.int("GATEWAY_MAX_INFLIGHT", default=GATEWAY_SYNC_THREADS)
GATEWAY_INFLIGHT_QUEUE = env.int(
    "GATEWAY_INFLIGHT_QUEUE", default=max(1, GATEWAY_MAX_INFLIGHT // 4)
)
GATEWAY_INFLIGHT_WAIT_SECONDS = env.float("GATEWAY_INFLIGHT_WAIT_SECONDS", default=0.25)
GATEWAY_OVERLOAD_RETRY_AFTER = env.int("GATEWAY_OVERLOAD_RETRY_AFTER", default=1)
if (
    GATEWAY_MAX_INFLIGHT < 0
    or GATEWAY_INFLIGHT_QUEUE < 0
    or GATEWAY_INFLIGHT_WAIT_SECONDS < 0
    or GATEWAY_OVERLOAD_RETRY_AFTER < 1
):
    raise ImproperlyConfigured(
        "GATEWAY_MAX_INFLIGHT, GATEWAY_INFLIGHT_QUEUE and "
        "GATEWAY_INFLIGHT_WAIT_SECONDS must not be negative, "
        "GATEWAY_OVERLOAD_RETRY_AFTER at least 1"
    )
# Every request's body is read whole on the event loop before any route or thread sees it
# (adapters/bounded_body.py): larger than this is 413, not whole within the deadline is 408.
# The largest legitimate request is tens of kB (an order with a long basket); Invoicebox's
# notifications are refused past 256 KB anyway; the admin takes no file uploads.
GATEWAY_MAX_BODY_BYTES = env.int("GATEWAY_MAX_BODY_BYTES", default=1024 * 1024)
GATEWAY_BODY_READ_SECONDS = env.float("GATEWAY_BODY_READ_SECONDS", default=10.0)
if GATEWAY_MAX_BODY_BYTES <= 0 or GATEWAY_BODY_READ_SECONDS <= 0:
    raise ImproperlyConfigured(
        "GATEWAY_MAX_BODY_BYTES и GATEWAY_BODY_READ_SECONDS должны быть больше нуля"
    )
# Writes above this many kopecks (100 000,00 ₽) wait for an operator; refunds always do.
# GATEWAY_APPROVAL_THRESHOLD_RUB was the old, misleading name (it was kopecks all along): still
# read, with a warning from `manage.py check` (tools.apps), when the new name is not set.
GATEWAY_DEPRECATED_SETTINGS = [
    name
    for name in ("GATEWAY_APPROVAL_THRESHOLD_RUB",)
    if name in os.environ and "GATEWAY_APPROVAL_THRESHOLD_KOPECKS" not in os.environ
]
GATEWAY_APPROVAL_THRESHOLD_KOPECKS = env.int(
    "GATEWAY_APPROVAL_THRESHOLD_KOPECKS",
    default=env.int("GATEWAY_APPROVAL_THRESHOLD_RUB", default=10_000_000),
)

# Operators are told of writes waiting for them (tools/background/alerts.py): email through Django's
# backends (console in the demo, SMTP in production), an optional signed webhook per contour.
EMAIL_BACKEND = env.str(
    "EMAIL_BACKEND",
    default=(
        "django.core.mail.backends.smtp.EmailBackend"
        if PRODUCTION
        else "django.core.mail.backends.console.EmailBackend"
    ),
)
# The console backend prints every alert to the process log, the file backend to disk: a
# production process refuses both rather than keep mail outside the mail system.
LOG_EMAIL_BACKENDS = (
    "django.core.mail.backends.console.EmailBackend",
    "django.core.mail.backends.filebased.EmailBackend",
)
if PRODUCTION and EMAIL_BACKEND in LOG_EMAIL_BACKENDS:
    raise ImproperlyConfigured(
        f"EMAIL_BACKEND={EMAIL_BACKEND} пишет письма операторам в журнал или файлы: при "
        "GATEWAY_ENV=production это запрещено (нужен django.core.mail.backends.smtp.EmailBackend)"
    )
EMAIL_HOST = env.str("EMAIL_HOST", default="localhost")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=10)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="gateway@localhost")
# A reminder goes out this long before the approval deadline; attempts per alert, and the
# webhook's timeout.
GATEWAY_ALERT_REMINDER_SECONDS = env.int("GATEWAY_ALERT_REMINDER_SECONDS", default=5 * 60)
GATEWAY_ALERT_MAX_ATTEMPTS = env.int("GATEWAY_ALERT_MAX_ATTEMPTS", default=6)
GATEWAY_ALERT_TIMEOUT_SECONDS = env.float("GATEWAY_ALERT_TIMEOUT_SECONDS", default=5.0)
