"""Session caps under concurrent openings on PostgreSQL (issue 41): many keys open sessions at
the same instant, each thread on its own database connection as each worker process of each
host is; the contour's cap and the deployment's ceiling hold exactly, never one more."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connections
from django.test import override_settings

from adapters.mcp import sessions
from adapters.mcp.models import McpSession
from audit.actors import SCAFFOLDING
from tools.contours.services import create_contour
from tools.models import ApiKey

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CLIENT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
OPENERS = 40


def race(keys: list[ApiKey], tag: str) -> Counter[str]:
    """Every key opens one session at once; "opened" or the scope of the refusal, counted."""
    outcomes: list[str] = []
    barrier = threading.Barrier(len(keys))

    def open_one(n: int, key: ApiKey) -> None:
        try:
            barrier.wait()
            sessions.record(f"{tag}-{n}", key.pk, "2025-11-25", CLIENT)
            outcomes.append("opened")
        except sessions.SessionRefused as refused:
            outcomes.append(refused.scope)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=open_one, args=pair) for pair in enumerate(keys)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return Counter(outcomes)


@override_settings(
    MCP_MAX_SESSIONS_PER_KEY=5, MCP_MAX_SESSIONS_PER_CONTOUR=4, MCP_MAX_SESSIONS=1000
)
def test_keys_of_one_contour_opening_at_once_never_pass_its_cap():
    # given: one contour, a key per opener (the per-key row lock serialises nothing here)
    shop = create_contour("crowd", mode="sandbox", actor=SCAFFOLDING)
    keys = [ApiKey.issue(shop, label=f"k{n}")[0] for n in range(OPENERS)]

    for round_ in range(3):
        # when
        outcomes = race(keys, f"r{round_}")

        # then
        assert outcomes == {"opened": 4, "contour": OPENERS - 4}, outcomes
        assert McpSession.objects.count() == 4
        McpSession.objects.all().delete()


@override_settings(MCP_MAX_SESSIONS_PER_KEY=5, MCP_MAX_SESSIONS_PER_CONTOUR=100, MCP_MAX_SESSIONS=4)
def test_many_contours_opening_at_once_never_pass_the_deployment_ceiling():
    # given: eight contours, five keys each
    keys = []
    for n in range(8):
        shop = create_contour(f"shop{n}", mode="sandbox", actor=SCAFFOLDING)
        keys += [ApiKey.issue(shop, label=f"k{m}")[0] for m in range(OPENERS // 8)]

    for round_ in range(3):
        # when
        outcomes = race(keys, f"r{round_}")

        # then
        assert outcomes == {"opened": 4, "deployment": OPENERS - 4}, outcomes
        assert McpSession.objects.count() == 4
        McpSession.objects.all().delete()
