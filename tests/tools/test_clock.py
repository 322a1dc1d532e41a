"""One clock: a worker whose own clock is off by 90 s decides stale claims,
confirmation expiry and key expiry exactly as the database's clock says. The worker's clock is
Django's timezone.now() (what every process read before); the database's is PostgreSQL's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.test import Client
from django.utils import timezone

from sandbox.api import DEMO_TOKEN, clear_faults, set_faults
from tests.conftest import Assistant, order_args, sandbox_orders
from tools import clock
from tools.models import ApiKey, Operation, PendingConfirmation

# SQLite's processes share one host clock: the rule is PostgreSQL's.
pytestmark = [pytest.mark.postgres]

SKEW = timedelta(seconds=90)


@contextmanager
def worker_clock(offset: timedelta) -> Iterator[None]:
    real = timezone.now
    with mock.patch("django.utils.timezone.now", side_effect=lambda: real() + offset):
        yield


def _prepare(assistant: Assistant, **changes: Any) -> dict[str, Any]:
    args = order_args(**changes)
    _, first = assistant.call("create_order", args)
    return {**args, "confirmation_token": first["confirmation"]["token"]}


def test_a_worker_ahead_by_90_s_does_not_take_a_fresh_claim_for_stale(
    assistant: Assistant, client: Client
):
    confirmed = _prepare(assistant, description="Часы впереди")
    set_faults(DEMO_TOKEN, drop_response_after_create=True)
    assistant.call("create_order", confirmed)
    clear_faults(DEMO_TOKEN)
    # Another worker holds the claim right now (by the database's clock).
    Operation.objects.update(state="in_flight", started_at=clock.now())

    with worker_clock(SKEW):  # stale after 60 s: by this worker's clock, 90 s have passed
        _, again = assistant.call("create_order", confirmed)

    assert again["code"] == "duplicate_call", again
    assert Operation.objects.get().attempts == 1
    assert len(sandbox_orders(client)) == 1


def test_a_worker_behind_by_90_s_sees_an_expired_confirmation_expired(assistant: Assistant):
    confirmed = _prepare(assistant, description="Часы позади")
    PendingConfirmation.objects.update(expires_at=clock.now() - timedelta(seconds=5))

    with worker_clock(-SKEW):
        _, late = assistant.call("create_order", confirmed)

    assert late["code"] == "confirmation_expired", late
    assert not Operation.objects.exists()


def test_key_expiry_follows_the_database_clock(assistant: Assistant):
    key = ApiKey.objects.get(contour=assistant.contour)
    ApiKey.objects.filter(pk=key.pk).update(expires_at=clock.now() + timedelta(seconds=30))
    with worker_clock(SKEW):
        status, fresh = assistant.call("find_orders", {"page_size": 1})
    assert status == 200, fresh

    ApiKey.objects.filter(pk=key.pk).update(expires_at=clock.now() - timedelta(seconds=30))
    with worker_clock(-SKEW):
        status, expired = assistant.call("find_orders", {"page_size": 1})
    assert (status, expired["code"]) == (401, "unauthenticated"), expired
