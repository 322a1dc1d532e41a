"""GET /health: version, catalog fingerprint, database, broker and upstream circuits; public.

Above the catalog and the pipeline (it names the catalog's fingerprint); nothing below imports it.

HTTP 200 only when the database answers. The body names no contour and no secret: circuits
are counted, the broker URL (it may hold a password) and error texts are never echoed.
"""

from __future__ import annotations

import hashlib
import time
from functools import lru_cache
from importlib import metadata
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from audit import spool
from tools import catalog
from tools.models import Contour
from tools.ops import state
from tools.pipeline.confirmations import canonical_json
from tools.spec import ToolSpec

DISTRIBUTION = "invoicebox-gateway"
FALLBACK_VERSION = "0.1.0"


@lru_cache(maxsize=1)
def version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # a checkout that was never pip-installed
        return FALLBACK_VERSION


def catalog_definitions(specs: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """What an assistant is shown of each tool, in catalog order (the order matters too)."""
    return [
        {
            "name": spec.name,
            "title": spec.title,
            "kind": spec.kind,
            "toolset": spec.toolset,
            "description": spec.description_ru,
            "summary": spec.summary_ru,
            "input_schema": spec.params.model_json_schema(),
        }
        for spec in specs
    ]


def fingerprint_of(specs: tuple[ToolSpec, ...]) -> str:
    return hashlib.sha256(canonical_json(catalog_definitions(specs)).encode()).hexdigest()


# (catalog tuple, its fingerprint): the catalog is built once per process, so is its hash.
_cached: tuple[tuple[ToolSpec, ...], str] | None = None


def catalog_fingerprint() -> str:
    """sha256 of the canonical JSON of the definitions: equal exactly when the catalog is."""
    global _cached
    if _cached is None or _cached[0] is not catalog.CATALOG:
        _cached = (catalog.CATALOG, fingerprint_of(catalog.CATALOG))
    return _cached[1]


def _tool_count() -> int:
    return len(catalog.CATALOG)


def _timeout() -> float:
    return float(settings.HEALTH_CHECK_TIMEOUT_SECONDS)


def check_database() -> dict[str, Any]:
    """SELECT 1 on the request's own connection: the query a call would make, nothing more.

    (A copy of the connection made /health pay a second connect and close on every probe.)
    """
    started = time.perf_counter()
    connection = connections[DEFAULT_DB_ALIAS]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as error:
        return {"status": "unavailable", "error": type(error).__name__}
    return {
        "status": "ok",
        "vendor": connection.vendor,
        "latency_ms": round((time.perf_counter() - started) * 1000, 1),
    }


# The broker's answer, kept this many seconds per process: a probe is a new TCP connection
# (and AUTH) each time, which a load balancer polling every second should not pay. A kept
# answer says how old it is.
BROKER_CHECK_TTL_SECONDS = 5.0
_broker_seen: tuple[str, float, dict[str, Any]] | None = None


def check_broker() -> dict[str, Any]:
    global _broker_seen
    url = str(settings.CELERY_BROKER_URL or "")
    now = time.monotonic()
    if (
        _broker_seen is not None
        and _broker_seen[0] == url
        and now - _broker_seen[1] < BROKER_CHECK_TTL_SECONDS
    ):
        return {**_broker_seen[2], "age_s": round(now - _broker_seen[1], 1)}
    result = _probe_broker(url)
    _broker_seen = (url, now, result)
    return result


def _probe_broker(url: str) -> dict[str, Any]:
    if not url or url.startswith("memory://"):
        return {"status": "not_configured"}
    from kombu import Connection  # heavy; loaded only by a probe of a configured broker

    timeout = _timeout()
    started = time.perf_counter()
    try:
        with Connection(
            url,
            connect_timeout=timeout,
            transport_options={
                "socket_connect_timeout": timeout,
                "socket_timeout": timeout,
                "max_retries": 0,
            },
        ) as connection:
            # kombu takes a float of seconds; celery-types say int.
            connection.ensure_connection(
                max_retries=1,
                interval_start=0,
                interval_step=0,
                timeout=timeout,  # type: ignore[arg-type]
            )
    except Exception as error:  # any transport's failure; only its class is shown
        return {"status": "unavailable", "error": type(error).__name__}
    return {"status": "ok", "latency_ms": round((time.perf_counter() - started) * 1000, 1)}


def check_contours() -> tuple[dict[str, Any], dict[str, Any]]:
    """From one read of the contours: their circuit breakers counted by state (names stay out
    of a public page), and how many hold a token GATEWAY_SECRETS_KEY can't decrypt (no names,
    no secrets): those contours' calls are refused (contour_token_unreadable) until the owner
    enters the token again."""
    try:
        contours = list(Contour.objects.order_by("slug").only("slug", "api_token"))
        counts = state.circuit_counts(timezone.now(), contours)
    except DatabaseError as error:
        unknown = {"status": "unknown", "error": type(error).__name__}
        return unknown, unknown
    unreadable = sum(contour.token_unreadable for contour in contours)
    return (
        {
            "status": "degraded" if counts["open"] else "ok",
            "contours": sum(counts.values()),
            "circuits": counts,
        },
        {"status": "degraded" if unreadable else "ok", "unreadable_tokens": unreadable},
    )


def check_journal_spool() -> dict[str, Any]:
    """The journal spool's disk (audit/spool.py): degraded below GATEWAY_SPOOL_MIN_FREE_MB free
    or unwritable, because then a call the database cannot journal is refused
    (journal_unavailable). The path is not shown."""
    room = spool.room()
    body: dict[str, Any] = {
        "status": "degraded" if room.low else "ok",
        "writable": room.writable,
        "free_mb": room.free_bytes // (1024 * 1024) if room.free_bytes is not None else None,
        "min_free_mb": int(settings.GATEWAY_SPOOL_MIN_FREE_MB),
        "pending": spool.pending(),
    }
    return body


def report() -> tuple[int, dict[str, Any]]:
    database = check_database()
    upstream, secrets = check_contours()
    checks = {
        "database": database,
        "broker": check_broker(),
        "upstream": upstream,
        "secrets": secrets,
        "journal_spool": check_journal_spool(),
    }
    if database["status"] != "ok":
        overall, http_status = "unavailable", 503
    elif any(check["status"] not in ("ok", "not_configured") for check in checks.values()):
        overall, http_status = "degraded", 200
    else:
        overall, http_status = "ok", 200
    body = {
        "status": overall,
        "version": version(),
        "catalog": {"fingerprint": catalog_fingerprint(), "tools": _tool_count()},
        "checks": checks,
    }
    return http_status, body


@never_cache
@require_GET
def health_view(request: HttpRequest) -> JsonResponse:
    status, body = report()
    return JsonResponse(body, status=status, json_dumps_params={"ensure_ascii": False})
