"""Upstream faults from the sandbox switches: each outcome right, no duplicate, nothing unjournaled."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from audit.models import JournalEntry
from sandbox.api import DEMO_TOKEN, clear_faults, set_faults
from sandbox.models import SandboxFaults
from tests.conftest import Assistant, order_args, sandbox_orders
from tools.models import Operation

# fault switches -> (code of the first execution, HTTP status, whether the order exists upstream)
FAULTS: dict[str, tuple[dict[str, Any], str, int, bool]] = {
    "latency over the client timeout": ({"latency_ms": 600}, "outcome_unknown", 504, True),
    "5xx on every request": ({"error_rate": 1.0}, "outcome_unknown", 504, False),
    # A 5xx on a create may come after the order was stored: unknown, proven absent by lookup.
    "503 once": ({"fail_next": 1}, "outcome_unknown", 504, False),
    "connection reset": ({"reset_next": 1}, "outcome_unknown", 504, False),
    "response lost after the create": (
        {"drop_response_after_create": True},
        "outcome_unknown",
        504,
        True,
    ),
    "429 once": ({"rate_limit_next": 1}, "rate_limited", 429, False),
}


@pytest.fixture(autouse=True)
def _short_timeout(settings: Any) -> None:
    settings.INVOICEBOX_TIMEOUT_SECONDS = 0.3
    # Each retry here comes after the earlier request can no longer land (the in-process
    # sandbox has answered it): absence found by the lookup is then proof.
    settings.GATEWAY_STALE_IN_FLIGHT_SECONDS = 0


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_fault_during_execution_never_duplicates_the_order(
    assistant: Assistant, client: Client, fault: str
):
    switches, code, http_status, landed = FAULTS[fault]
    args = order_args()
    _, first = assistant.call("create_order", args)
    confirmed = {**args, "confirmation_token": first["confirmation"]["token"]}
    set_faults(DEMO_TOKEN, **switches)

    status, failed = assistant.call("create_order", confirmed)
    clear_faults(DEMO_TOKEN)
    upstream_after_fault = len(sandbox_orders(client))
    _, retried = assistant.call("create_order", confirmed)
    _, replayed = assistant.call("create_order", confirmed)

    expected_status = "rejected" if code == "rate_limited" else "error"
    assert (status, failed["status"], failed["code"]) == (http_status, expected_status, code)
    assert upstream_after_fault == (1 if landed else 0)
    assert retried["status"] == "ok", retried
    assert retried["data"].get("recovered", False) is landed
    assert replayed["replayed"] is True
    assert replayed["data"]["order_id"] == retried["data"]["order_id"]
    assert len(sandbox_orders(client)) == 1
    operation = Operation.objects.get()
    assert (operation.state, operation.attempts) == ("done", 2)
    # prepare, the failed execution, the retry and the replay: four calls, four outcome
    # entries; each of the two attempts also journaled that it started, before its request.
    entries = list(JournalEntry.objects.filter(contour="acme").order_by("id"))
    assert [(e.phase, e.code) for e in entries] == [
        ("prepare", "confirmation_required"),
        ("execute", "execution_started"),
        ("execute", code),
        ("execute", "execution_started"),
        ("execute", "ok"),
        ("execute", "ok"),
    ]


@pytest.mark.parametrize(
    "switches",
    [
        {"rate_limit_next": 1},  # retried after Retry-After
        {"reset_next": 1},
        {"fail_next": 1},
    ],
)
def test_a_transient_fault_on_a_read_is_retried(assistant: Assistant, switches: dict[str, Any]):
    set_faults(DEMO_TOKEN, **switches)

    status, found = assistant.call("find_orders", {})

    assert (status, found["status"]) == (200, "ok")
    faults = SandboxFaults.objects.get()
    assert (faults.rate_limit_next, faults.reset_next, faults.fail_next) == (0, 0, 0)


def test_a_read_past_the_timeout_is_unavailable_not_a_crash(assistant: Assistant, settings: Any):
    settings.INVOICEBOX_READ_ATTEMPTS = 1
    set_faults(DEMO_TOKEN, latency_ms=600)

    status, found = assistant.call("find_orders", {})

    assert (status, found["code"]) == (502, "upstream_unavailable")
    assert JournalEntry.objects.get(phase="read").code == "upstream_unavailable"
