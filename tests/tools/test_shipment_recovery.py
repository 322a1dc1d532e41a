"""One confirmed shipment never makes two: each is sent with a documentNumber of ours and
recovered by it, even from the documented-only answer (the request plus id and merchantId)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.test import Client

from invoicebox.client import InvoiceboxClient
from sandbox.api import DEMO_TOKEN, clear_faults, set_faults
from sandbox.models import SandboxShipment
from tests.conftest import SANDBOX, Assistant
from tests.tools.test_more_tools import SHIP_LINE, new_order
from tools.models import Operation
from tools.pipeline import sweep

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _documented_only(settings: Any, tmp_path: Path) -> None:
    settings.INVOICEBOX_SANDBOX_DOCUMENTED_ONLY = True
    settings.INVOICEBOX_TIMEOUT_SECONDS = 0.3
    settings.GATEWAY_STATE_DIR = str(tmp_path)


def age_operations(seconds: float = 3600) -> None:
    for operation in Operation.objects.all():
        Operation.objects.filter(pk=operation.pk).update(
            started_at=operation.started_at - timedelta(seconds=seconds)
        )


def prepared(assistant: Assistant, **extra: Any) -> dict[str, Any]:
    order_id = new_order(assistant, paid=True)
    args = {"order_id": order_id, "basket_items": [SHIP_LINE], **extra}
    _, first = assistant.call("create_shipment", args)
    assert first["status"] == "confirmation_required", first
    return {**args, "confirmation_token": first["confirmation"]["token"]}


def lost_execution(assistant: Assistant, confirmed: dict[str, Any]) -> None:
    set_faults(DEMO_TOKEN, drop_response_after_create=True)
    _, lost = assistant.call("create_shipment", confirmed)
    clear_faults(DEMO_TOKEN)
    assert lost["code"] == "outcome_unknown", lost
    assert SandboxShipment.objects.count() == 1


def test_a_lost_shipment_answer_is_recovered_by_its_document_number_never_sent_twice(
    assistant: Assistant,
):
    confirmed = prepared(assistant)
    lost_execution(assistant, confirmed)
    age_operations()  # past the stale period: absence would now mean "send again"

    status, retried = assistant.call("create_shipment", confirmed)

    assert (status, retried["status"]) == (200, "ok"), retried
    assert retried["data"]["recovered"] is True
    [stored] = SandboxShipment.objects.all()
    assert retried["data"]["shipment_id"] == str(stored.pk)
    number = Operation.objects.get(tool="create_shipment").merchant_order_id
    assert retried["data"]["document_number"] == number
    assert SandboxShipment.objects.count() == 1


def test_the_sweep_recovers_a_lost_shipment_too(assistant: Assistant):
    confirmed = prepared(assistant)
    lost_execution(assistant, confirmed)
    age_operations()

    assert sweep.resolve_operations() == {"found": 1}
    _, replay = assistant.call("create_shipment", confirmed)
    assert replay["status"] == "ok" and replay["replayed"] is True, replay
    assert SandboxShipment.objects.count() == 1


def test_the_assistants_own_document_number_is_sent_and_recovered_by(assistant: Assistant):
    confirmed = prepared(assistant, document_number="УПД-17")
    lost_execution(assistant, confirmed)
    age_operations()

    _, retried = assistant.call("create_shipment", confirmed)

    assert retried["data"]["recovered"] is True, retried
    assert retried["data"]["document_number"] == "УПД-17"
    assert SandboxShipment.objects.count() == 1


def test_a_document_number_already_used_on_the_order_is_refused(assistant: Assistant):
    confirmed = prepared(assistant, document_number="УПД-18")
    assistant.call("create_shipment", confirmed)

    status, again = assistant.call(
        "create_shipment",
        {
            "order_id": confirmed["order_id"],
            "basket_items": [SHIP_LINE],
            "document_number": "УПД-18",
            "allow_duplicate": True,
        },
    )

    assert (status, again["code"]) == (422, "precondition_failed"), again
    assert "УПД-18" in again["message"]


class _Killed(BaseException):
    """What a SIGKILL looks like from inside: nothing after this point runs."""


def ship_by_hand(client: Client, order_id: str) -> None:
    """A shipment made in the merchant's account, with no document number."""
    answer = client.post(
        f"{SANDBOX}/billing/api/order/shipment",
        content_type="application/json",
        data={
            "orderId": order_id,
            "basketItems": [
                {
                    "sku": "ROOM-STD",
                    "name": "Бронирование номера",
                    "measure": "шт",
                    "measureCode": "796",
                    "quantity": 1,
                    "amount": 122,
                    "amountWoVat": 100,
                    "totalAmount": 122,
                    "totalVatAmount": 22,
                    "vatCode": "RUS_VAT22",
                    "type": "service",
                    "paymentType": "full_prepayment",
                }
            ],
        },
        HTTP_AUTHORIZATION=f"Bearer {DEMO_TOKEN}",
        HTTP_USER_AGENT="tests/1.0",
    )
    assert answer.status_code in (200, 201), answer.content


def test_an_unnumbered_shipment_of_the_same_sum_keeps_the_outcome_unknown(
    assistant: Assistant, client: Client
):
    """A worker died around the POST; the list holds a shipment of the same sum with no
    number (made by hand, or ours with the number dropped): absence is not proven, so
    nothing is sent again, by the caller or by the sweep."""
    confirmed = prepared(assistant)
    with (
        mock.patch.object(InvoiceboxClient, "create_shipment", side_effect=_Killed),
        pytest.raises(_Killed),
    ):
        assistant.call("create_shipment", confirmed)
    ship_by_hand(client, confirmed["order_id"])
    age_operations()

    _, retried = assistant.call("create_shipment", confirmed)

    assert retried["code"] == "outcome_unknown", retried
    assert "без номера документа" in retried["message"]
    assert Operation.objects.get(tool="create_shipment").state == "unknown"
    age_operations()
    assert sweep.resolve_operations() == {"lookup_failed": 1}
    assert SandboxShipment.objects.count() == 1


def test_the_same_row_does_not_block_a_shipment_whose_last_attempt_was_refused(
    assistant: Assistant, client: Client
):
    confirmed = prepared(assistant)
    # Refused before anything is stored: every read of the execution (the facts' re-read and
    # the handler's) is answered 429.
    set_faults(DEMO_TOKEN, rate_limit_next=20)
    _, refused = assistant.call("create_shipment", confirmed)
    clear_faults(DEMO_TOKEN)
    assert refused["code"] == "rate_limited", refused
    ship_by_hand(client, confirmed["order_id"])

    _, done = assistant.call("create_shipment", confirmed)

    assert done["status"] == "ok", done
    assert SandboxShipment.objects.count() == 2
