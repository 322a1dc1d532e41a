"""GET /metrics: the scrape. It exposes the events counted as they happen (tools/ops/metrics.py)
and the state read from the database on each scrape (open confirmations, ceilings, circuits, the
journal spool, the build), so a gauge is the same whichever worker or host answers.

Above the catalog and the pipeline (the build gauge names the catalog's fingerprint), below the
doors: a door hands in its own gauges through register_state().
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry
from prometheus_client import generate_latest as _generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from audit import spool
from tools.ops import health, metrics, state


class StateCollector(Collector):
    """Gauges computed from the database on every scrape."""

    def collect(self) -> Iterator[Metric]:
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
    directory = metrics.multiprocess_dir()
    if directory:
        MultiProcessCollector(registry, path=directory)
    else:
        registry.register(metrics.EVENTS)
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
