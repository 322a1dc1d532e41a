"""Prometheus metrics: events counted in-process (multiprocess-aware), state read at scrape time.

Events (calls, core and upstream latency, upstream errors) are prometheus-client counters and
histograms. With several worker processes set PROMETHEUS_MULTIPROC_DIR: every process writes
its samples to files there and a scrape of any worker sums them all. State (open
confirmations, ceilings, circuits) is read from the database on each scrape, so it is the
same whichever worker or host answers. Label values come only from bounded sets (catalog
names, journal channels and statuses, stable codes, normalised paths): never from arguments.

Nothing here imports the rest of the project at module level: invoicebox imports this
module, and tools.catalog imports invoicebox.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    values,
)
from prometheus_client import generate_latest as _generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from audit.models import JournalEntry


def _multiprocess_dir() -> str:
    return str(getattr(settings, "METRICS_MULTIPROC_DIR", "") or "")


# prometheus-client picks its value store from the environment when it is first imported; a
# directory given only through settings (.env read later, a test) must switch it before the
# first metric below is built, or this process would count in memory alone.
if _multiprocess_dir() and values.ValueClass is values.MutexValue:
    os.makedirs(_multiprocess_dir(), exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = _multiprocess_dir()
    values.ValueClass = values.MultiProcessValue()

# The *_created series double every sample and no query of ours uses them.
disable_created_metrics()

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

# Our own registry: what a single-process scrape exposes (a multiprocess scrape reads files).
EVENTS = CollectorRegistry(auto_describe=True)

CALLS = Counter(
    "gateway_calls",
    "Tool calls through the core, one per journal entry",
    ["tool", "channel", "status", "code"],
    registry=EVENTS,
)
CALL_SECONDS = Histogram(
    "gateway_call_duration_seconds",
    "Time a call spent in the core (the journaled duration)",
    ["tool", "phase"],
    buckets=LATENCY_BUCKETS,
    registry=EVENTS,
)
UPSTREAM_SECONDS = Histogram(
    "invoicebox_request_duration_seconds",
    "Invoicebox HTTP requests (each attempt): latency by method, endpoint and outcome",
    ["method", "endpoint", "status"],
    buckets=LATENCY_BUCKETS,
    registry=EVENTS,
)
UPSTREAM_ERRORS = Counter(
    "invoicebox_errors",
    "Failed Invoicebox requests by code: the API's error code, http_<status>, timeout, network",
    ["code"],
    registry=EVENTS,
)

ANONYMOUS_REFUSALS = Counter(
    "gateway_anonymous_refusals",
    "Refusals of callers with no verified credential, each one (the journal keeps a sample: "
    "tools/pipeline/anonymous.py)",
    ["channel", "code"],
    registry=EVENTS,
)

OVERLOAD_REFUSALS = Counter(
    "gateway_overload_refusals",
    "Requests answered 503 overloaded: no slot of GATEWAY_MAX_INFLIGHT free within the wait "
    "(adapters/inflight.py)",
    ["door"],
    registry=EVENTS,
)

# An id in a path (order UUID, numeric shipment id, an INN in a query-less lookup) becomes {id}.
_ID_SEGMENT = re.compile(r"\d|^[0-9a-f-]{32,}$", re.IGNORECASE)
# Upstream error codes are snake_case words; anything else is folded so no value can leak.
_UPSTREAM_CODE = re.compile(r"^[a-z][a-z_]{0,62}$")


# The catalog's tool names, handed in by tools/apps.py (the catalog's modules reach this one
# through the pipeline's journal hook, so this module does not import the catalog).
_tool_names: frozenset[str] = frozenset()


def set_tool_names(names: frozenset[str]) -> None:
    global _tool_names
    _tool_names = names


def tool_label(tool: str) -> str:
    if not tool:
        return "none"
    return tool if tool in _tool_names else "unknown"


def endpoint_label(path: str) -> str:
    path = path.split("?", 1)[0]
    return "/".join("{id}" if _ID_SEGMENT.search(part) else part for part in path.split("/"))


def upstream_code_label(code: str) -> str:
    return code if _UPSTREAM_CODE.match(code) else "other"


def observe_call(entry: JournalEntry) -> None:
    """Count one journaled call and its duration in the core."""
    tool = tool_label(entry.tool)
    CALLS.labels(
        tool=tool, channel=entry.channel, status=entry.status, code=entry.code or "none"
    ).inc()
    CALL_SECONDS.labels(tool=tool, phase=entry.phase).observe(entry.duration_ms / 1000)


def observe_upstream(
    method: str, path: str, seconds: float, *, status: int | None, failure: str = "", code: str = ""
) -> None:
    """One upstream attempt: status is the HTTP status (None: no answer, see failure)."""
    outcome = str(status) if status is not None else failure
    UPSTREAM_SECONDS.labels(
        method=method.upper(), endpoint=endpoint_label(path), status=outcome
    ).observe(seconds)
    if status is None:
        UPSTREAM_ERRORS.labels(code=failure).inc()
    elif status >= 300:
        UPSTREAM_ERRORS.labels(code=upstream_code_label(code) if code else f"http_{status}").inc()


class StateCollector(Collector):
    """Gauges computed from the database on every scrape."""

    def collect(self) -> Iterator[Metric]:
        from django.db import DatabaseError
        from django.utils import timezone

        from tools.ops import health

        build = GaugeMetricFamily(
            "gateway_build_info", "Version and catalog fingerprint", labels=["version", "catalog"]
        )
        build.add_metric([health.version(), health.catalog_fingerprint()], 1)
        yield build
        yield from self._spool()
        up = GaugeMetricFamily(
            "gateway_state_up", "1 when the state gauges below could be read from the database"
        )
        now = timezone.now()
        try:
            families = list(self._state(now))
        except DatabaseError:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    @staticmethod
    def _spool() -> Iterator[Metric]:
        """The journal spool's disk, read from the disk: it matters most when the database is
        away (alert on free < GATEWAY_SPOOL_MIN_FREE_MB: docs/production.md)."""
        from audit import spool

        room = spool.room()
        free = GaugeMetricFamily(
            "gateway_journal_spool_free_bytes",
            "Free bytes on the journal spool's disk (-1: unreadable)",
        )
        free.add_metric([], room.free_bytes if room.free_bytes is not None else -1)
        low = GaugeMetricFamily(
            "gateway_journal_spool_low",
            "1 when the journal spool is unwritable or below GATEWAY_SPOOL_MIN_FREE_MB free",
        )
        low.add_metric([], 1 if room.low else 0)
        waiting = GaugeMetricFamily(
            "gateway_journal_spool_pending", "Journal entries waiting in the spool for the database"
        )
        waiting.add_metric([], spool.pending())
        yield from (free, low, waiting)

    @staticmethod
    def _state(now: datetime) -> Iterator[Metric]:
        from tools.ops import state

        pending = GaugeMetricFamily(
            "gateway_pending_confirmations",
            "Open (unexpired) confirmations",
            labels=["contour", "waiting_for"],
        )
        age = GaugeMetricFamily(
            "gateway_pending_confirmation_oldest_age_seconds",
            "Age of the oldest open confirmation (0 when there is none)",
            labels=["contour", "waiting_for"],
        )
        for stat in state.pending_stats(now):
            pending.add_metric([stat.contour, stat.waiting_for], stat.count)
            oldest = (now - stat.oldest).total_seconds() if stat.oldest else 0.0
            age.add_metric([stat.contour, stat.waiting_for], max(oldest, 0.0))
        ratio = GaugeMetricFamily(
            "gateway_ceiling_used_ratio",
            "Share of a ceiling used now (per_day: kopecks today, per_hour: writes in the last "
            "hour); 1 means exhausted",
            labels=["contour", "ceiling", "currency"],
        )
        for usage in state.ceiling_usage(now):
            if usage.ratio is not None:
                ratio.add_metric([usage.contour, usage.kind, usage.currency], usage.ratio)
        circuit = GaugeMetricFamily(
            "invoicebox_circuit_open",
            "1 while the contour's upstream circuit breaker refuses calls (half-open counts 0)",
            labels=["contour"],
        )
        for slug, breaker in state.circuits(now):
            circuit.add_metric([slug], 1 if breaker == "open" else 0)
        yield from (pending, age, ratio, circuit)
        for source in STATE_SOURCES:
            yield from source(now)


# Gauges read at scrape time from state an adapter owns (the MCP sessions): the adapter hands
# its source in from its AppConfig.ready(), as formats are registered, so the core imports no door.
STATE_SOURCES: list[Callable[[datetime], Iterable[Metric]]] = []


def register_state(source: Callable[[datetime], Iterable[Metric]]) -> None:
    if source not in STATE_SOURCES:
        STATE_SOURCES.append(source)


def exposition() -> tuple[bytes, str]:
    """The text a scrape returns, and its content type."""
    registry = CollectorRegistry(auto_describe=False)
    directory = _multiprocess_dir()
    if directory:
        MultiProcessCollector(registry, path=directory)
    else:
        registry.register(EVENTS)
    registry.register(StateCollector())
    return _generate_latest(registry), CONTENT_TYPE_LATEST


def _client_allowed(remote_addr: str) -> bool:
    try:
        address = ipaddress.ip_address(remote_addr)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(
        address in ipaddress.ip_network(allowed, strict=False)
        for allowed in settings.METRICS_ALLOWED_IPS
    )


def authorize(request: HttpRequest) -> int:
    """0 when the scraper may read; else the HTTP status to refuse with.

    A Bearer header is judged alone (a wrong token is refused even from an allowed address);
    without one, the peer address must be in METRICS_ALLOWED_IPS. REMOTE_ADDR only: a
    forwarded-for header is whatever the client wrote, so behind a proxy use the token.
    """
    header = request.headers.get("Authorization", "")
    if header:
        scheme, _, presented = header.partition(" ")
        token = str(settings.METRICS_TOKEN or "")
        valid = (
            bool(token)
            and scheme.lower() == "bearer"
            and hmac.compare_digest(presented.strip().encode(), token.encode())
        )
        return 0 if valid else 401
    return 0 if _client_allowed(request.META.get("REMOTE_ADDR", "")) else 403


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    refusal = authorize(request)
    if refusal:
        response = HttpResponse(
            "metrics: a valid METRICS_TOKEN or an allowed address is required\n",
            status=refusal,
            content_type="text/plain",
        )
        if refusal == 401:
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    body, content_type = exposition()
    return HttpResponse(body, content_type=content_type)
