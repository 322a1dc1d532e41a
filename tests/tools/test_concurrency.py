"""Concurrent second calls with one token create one order (real PostgreSQL, real threads)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection, connections

from adapters.invoicebox.sandbox import set_faults
from tests.conftest import order_args, sandbox_orders
from tools import gateway
from tools.contours import DEMO_TOKEN, create_contour

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("row locks are only meaningful on PostgreSQL: set DATABASE_URL")


def test_parallel_executions_of_one_token_create_one_order(client):
    contour = create_contour("race", mode="sandbox", toolsets=["read", "write"])
    args = order_args()
    first = gateway.call(contour, "create_order", args, channel="rest", actor="test")
    confirmed = {**args, "confirmation_token": first.confirmation["token"]}
    set_faults(DEMO_TOKEN, latency_ms=150)
    codes: list[tuple[str, bool]] = []
    barrier = threading.Barrier(6)

    def execute() -> None:
        try:
            barrier.wait()
            outcome = gateway.call(contour, "create_order", confirmed, channel="rest",
                                   actor="test")
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
