"""Concurrent second calls with one token create one order (real PostgreSQL, real threads)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connections

from audit.actors import SCAFFOLDING
from sandbox.api import set_faults
from tests.conftest import order_args, sandbox_orders
from tools.contours.services import DEMO_TOKEN, create_contour
from tools.pipeline import gateway

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_parallel_executions_of_one_token_create_one_order(client):
    contour = create_contour("race", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)
    args = order_args()
    first = gateway.call(contour, "create_order", args, channel="rest", actor="test")
    confirmed = {**args, "confirmation_token": first.confirmation["token"]}
    set_faults(DEMO_TOKEN, latency_ms=150)
    codes: list[tuple[str, bool]] = []
    barrier = threading.Barrier(6)

    def execute() -> None:
        try:
            barrier.wait()
            outcome = gateway.call(contour, "create_order", confirmed, channel="rest", actor="test")
            codes.append((outcome.code, outcome.replayed))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=execute) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    set_faults(DEMO_TOKEN)
    assert len(sandbox_orders(client)) == 1
    counts = Counter(code for code, _ in codes)
    assert counts["ok"] >= 1
    assert set(counts) <= {"ok", "duplicate_call"}
    assert sum(1 for code, replayed in codes if code == "ok" and not replayed) == 1


def test_concurrent_writes_never_pass_a_ceiling_together(client):
    from tools.models import Ceiling

    contour = create_contour(
        "ceiling", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING
    )
    Ceiling.objects.create(contour=contour, kind="per_day", currency="RUB", limit=36600)
    confirmed = []
    for n in range(4):
        args = order_args(description=f"Счёт {n}")
        first = gateway.call(contour, "create_order", args, channel="rest", actor="test")
        assert first.code == "confirmation_required"  # nothing used yet: all pass the early check
        confirmed.append({**args, "confirmation_token": first.confirmation["token"]})
    set_faults(DEMO_TOKEN, latency_ms=100)
    codes: list[str] = []
    barrier = threading.Barrier(len(confirmed))

    def execute(arguments: dict) -> None:
        try:
            barrier.wait()
            codes.append(
                gateway.call(contour, "create_order", arguments, channel="rest", actor="test").code
            )
        finally:
            connections.close_all()

    threads = [threading.Thread(target=execute, args=(a,)) for a in confirmed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    set_faults(DEMO_TOKEN)
    assert Counter(codes) == {"ok": 1, "ceiling_exceeded": 3}
    assert len(sandbox_orders(client)) == 1
