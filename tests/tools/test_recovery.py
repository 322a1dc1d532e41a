"""`unknown` leaves only by proof; a begun confirmation never expires; cut executions
leave a started entry. Each test goes through the REST call path and the sandbox faults."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.test import Client
from django.utils import timezone

from audit.models import JournalEntry
from audit.walk import verify_chain
from invoicebox.client import InvoiceboxClient
from sandbox.api import DEMO_TOKEN, clear_faults, set_faults
from tests.conftest import Assistant, order_args, sandbox_orders
from tools.models import Ceiling, CeilingKind, Operation, PendingConfirmation
from tools.pipeline import execution


@pytest.fixture(autouse=True)
def _short_timeout(settings: Any) -> None:
    settings.INVOICEBOX_TIMEOUT_SECONDS = 0.3


def _prepare(assistant: Assistant, **changes: Any) -> dict[str, Any]:
    args = order_args(**changes)
    _, first = assistant.call("create_order", args)
    assert first["status"] == "confirmation_required", first
    return {**args, "confirmation_token": first["confirmation"]["token"]}


def test_a_failed_recovery_lookup_keeps_unknown_and_the_ceiling_counts_it(
    assistant: Assistant, client: Client
):
    Ceiling.objects.create(
        contour=assistant.contour, kind=CeilingKind.PER_DAY, currency="RUB", limit=36600
    )
    order_a = _prepare(assistant, description="Заказ A")
    set_faults(DEMO_TOKEN, drop_response_after_create=True)
    _, lost = assistant.call("create_order", order_a)
    assert lost["code"] == "outcome_unknown"
    set_faults(DEMO_TOKEN, fail_next=3)
    _, unavailable = assistant.call("create_order", order_a)
    assert unavailable["code"] == "upstream_unavailable", unavailable
    assert "неизвестен" in unavailable["message"]
    assert Operation.objects.get().state == "unknown"
    clear_faults(DEMO_TOKEN)

    _, refused = assistant.call("create_order", order_args(description="Заказ B"))
    assert refused["code"] == "ceiling_exceeded", refused
    _, retried = assistant.call("create_order", order_a)

    upstream = sandbox_orders(client)
    assert retried["status"] == "ok", retried
    assert retried["data"]["recovered"] is True
    assert [o["id"] for o in upstream] == [retried["data"]["order_id"]]
    assert verify_chain() is None


def test_an_expired_confirmation_with_an_unknown_outcome_recovers_its_order(
    assistant: Assistant, client: Client
):
    confirmed = _prepare(assistant)
    set_faults(DEMO_TOKEN, drop_response_after_create=True)
    _, lost = assistant.call("create_order", confirmed)
    assert lost["code"] == "outcome_unknown"
    clear_faults(DEMO_TOKEN)
    later = timezone.now() + assistant.contour.confirmation_ttl + timedelta(seconds=5)

    with mock.patch("django.utils.timezone.now", return_value=later):
        args = {k: v for k, v in confirmed.items() if k != "confirmation_token"}
        _, again = assistant.call("create_order", args)
        _, retried = assistant.call("create_order", confirmed)
        _, after = assistant.call("create_order", args)

    assert again["code"] == "outcome_unknown", again
    assert again.get("confirmation") is None
    assert again["data"]["confirmation"]["token"] == confirmed["confirmation_token"]
    assert retried["status"] == "ok", retried
    assert retried["data"]["recovered"] is True
    assert after["replayed"] is True
    assert after["data"]["order_id"] == retried["data"]["order_id"]
    assert len(sandbox_orders(client)) == 1


class _Killed(BaseException):
    """What a SIGKILL looks like from inside: nothing after the upstream request runs."""


def test_a_cut_execution_leaves_a_started_entry(assistant: Assistant, client: Client):
    confirmed = _prepare(assistant)
    with (
        mock.patch.object(InvoiceboxClient, "create_order", side_effect=_Killed),
        pytest.raises(_Killed),
    ):
        assistant.call("create_order", confirmed)

    entries = list(JournalEntry.objects.filter(contour="acme", phase="execute"))
    assert [(e.status, e.code) for e in entries] == [("started", "execution_started")]
    assert entries[0].operation_key == Operation.objects.get().key


def test_a_normal_execution_journals_its_start_and_its_outcome(assistant: Assistant):
    confirmed = _prepare(assistant)
    _, done = assistant.call("create_order", confirmed)
    entries = list(JournalEntry.objects.filter(contour="acme", phase="execute").order_by("id"))
    assert done["status"] == "ok"
    assert [(e.status, e.code) for e in entries] == [("started", "execution_started"), ("ok", "ok")]
    assert entries[1].id == done["journal_id"]
    assert verify_chain() is None


def test_an_expired_token_told_expired_once_never_executes_after(
    assistant: Assistant, client: Client
):
    """The interleaving behind a double order the chaos campaign found: Y's call passes
    resolve() while an attempt of the expired token is in flight; the attempt fails; X, told
    "expired, call again", gets a new token and its order. Y's claim comes after and must
    refuse too, or one description gets two orders."""
    confirmed = _prepare(assistant, description="Хаос: истёкший токен")
    # A refusal before the upstream stored anything (a 5xx on a create is an unknown outcome).
    set_faults(DEMO_TOKEN, rate_limit_next=1)
    _, failed = assistant.call("create_order", confirmed)
    assert failed["code"] == "rate_limited", failed
    # Another attempt of the same token is in flight, and the confirmation's lifetime is over.
    Operation.objects.update(state="in_flight", started_at=timezone.now())
    PendingConfirmation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    args = {k: v for k, v in confirmed.items() if k != "confirmation_token"}
    meanwhile: dict[str, Any] = {}
    real_claim = execution.claim

    def claim_after_the_others(*claim_args: Any) -> Any:
        if not meanwhile:  # Y is between resolve() and claim(): the others move first
            meanwhile["y"] = True
            Operation.objects.update(state="failed")  # the attempt in flight failed
            _, meanwhile["x_told"] = assistant.call("create_order", confirmed)
            _, fresh = assistant.call("create_order", args)
            _, meanwhile["x_done"] = assistant.call(
                "create_order", {**args, "confirmation_token": fresh["confirmation"]["token"]}
            )
        return real_claim(*claim_args)

    with mock.patch.object(execution, "claim", side_effect=claim_after_the_others):
        _, late = assistant.call("create_order", confirmed)

    assert meanwhile["x_told"]["code"] == "confirmation_expired"
    assert meanwhile["x_done"]["status"] == "ok", meanwhile["x_done"]
    assert late["code"] == "confirmation_expired", late
    assert [o["id"] for o in sandbox_orders(client)] == [meanwhile["x_done"]["data"]["order_id"]]
