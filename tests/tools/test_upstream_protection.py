"""The shared rate budget and the circuit breaker keep failures away from Invoicebox."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from invoicebox.limits import account_key
from invoicebox.models import CircuitState
from sandbox.api import clear_faults, set_faults
from tests.conftest import Assistant
from tools.contours.services import DEMO_TOKEN, create_contour
from tools.pipeline import gateway


def upstream_requests() -> int:
    """Calls that reached the sandbox: each carries the request id the sandbox minted."""
    return JournalEntry.objects.exclude(upstream_request_id="").count()


@pytest.mark.django_db
def test_burst_beyond_the_budget_is_answered_locally_with_a_retry_time(
    assistant: Assistant, settings
):
    settings.INVOICEBOX_RATE_LIMIT = "10/30"

    replies = [assistant.call("find_orders", {}) for _ in range(15)]

    codes = Counter(body["code"] for _, body in replies)
    assert codes == {"ok": 10, "rate_limited": 5}
    limited = next(body for status, body in replies if body["code"] == "rate_limited")
    assert 0 < limited["data"]["retry_after_seconds"] <= 30
    assert upstream_requests() == 10


@pytest.mark.django_db
def test_circuit_opens_after_consecutive_faults_and_fails_fast(assistant: Assistant):
    set_faults(DEMO_TOKEN, error_rate=1.0)
    assistant.call("find_orders", {})  # 3 attempts
    assistant.call("find_orders", {})  # 2 more faults open the circuit

    before = upstream_requests()
    status, body = assistant.call("find_orders", {})

    assert (status, body["code"]) == (502, "upstream_unavailable")
    assert "приостановлены" in body["message"]
    assert upstream_requests() == before  # nothing was sent


@pytest.mark.django_db
def test_circuit_closes_after_a_successful_probe(assistant: Assistant):
    set_faults(DEMO_TOKEN, error_rate=1.0)
    assistant.call("find_orders", {})
    assistant.call("find_orders", {})
    clear_faults(DEMO_TOKEN)
    CircuitState.objects.update(opened_until=timezone.now() - timedelta(seconds=1))

    status, body = assistant.call("find_orders", {})

    assert status == 200, body
    state = CircuitState.objects.get(account=account_key(DEMO_TOKEN))
    assert (state.failures, state.opened_until) == (0, None)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_burst_never_exceeds_the_budget(settings):
    settings.INVOICEBOX_RATE_LIMIT = "8/30"
    contour = create_contour("burst", mode="sandbox", actor=SCAFFOLDING)
    codes: list[str] = []
    barrier = threading.Barrier(12)

    def read() -> None:
        try:
            barrier.wait()
            codes.append(
                gateway.call(contour, "find_orders", {}, channel="rest", actor="test").code
            )
        finally:
            connections.close_all()

    threads = [threading.Thread(target=read) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert Counter(codes) == {"ok": 8, "rate_limited": 4}
    assert upstream_requests() == 8
