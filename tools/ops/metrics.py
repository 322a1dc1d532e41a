"""Prometheus metrics, the events: counted in-process (multiprocess-aware) as they happen.

Events (calls, core and upstream latency, upstream errors, refusals) are prometheus-client
counters and histograms. With several worker processes set PROMETHEUS_MULTIPROC_DIR: every
process writes its samples to files there and a scrape of any worker sums them all. Label
values come only from bounded sets (catalog names, journal channels and statuses, stable
codes, normalised paths): never from arguments. The scrape (GET /metrics) and the state it reads
from the database are tools/ops/scrape.py.

This module imports nothing else of ours but its labels (tools/ops/labels.py): the pipeline's
journal hook (tools/ops/hooks.py), the anonymous refusals and the doors count here from below
the catalog.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from django.conf import settings
from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, values

from tools.ops.labels import endpoint_label, tool_label, upstream_code_label

if TYPE_CHECKING:
    from audit.models import JournalEntry


def multiprocess_dir() -> str:
    return str(getattr(settings, "METRICS_MULTIPROC_DIR", "") or "")


# prometheus-client picks its value store from the environment when it is first imported; a
# directory given only through settings (.env read later, a test) must switch it before the
# first metric below is built, or this process would count in memory alone.
if multiprocess_dir() and values.ValueClass is values.MutexValue:
    os.makedirs(multiprocess_dir(), exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = multiprocess_dir()
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
