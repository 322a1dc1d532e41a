"""Isolation: a key of contour A reads, confirms, approves and exports nothing of contour B."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.test import Client

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from invoicebox.notify import sign
from tests.conftest import Assistant, order_args
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import PendingConfirmation


def _own_contour(slug: str, **changes: Any) -> Assistant:
    # Each with its own sandbox shop: its own token and merchant, as two real shops would be.
    contour = create_contour(
        slug,
        mode="sandbox",
        toolsets=["read", "write"],
        token=uuid.uuid4().hex,
        merchant_id=str(uuid.uuid4()),
        actor=SCAFFOLDING,
    )
    for name, value in changes.items():
        setattr(contour, name, value)
    contour.save()
    return Assistant(http=Client(), key=issue_key(contour, actor=SCAFFOLDING), contour=contour)


@pytest.fixture
def pair(db: None) -> tuple[Assistant, Assistant]:
    a = _own_contour("alpha", notification_key="alpha-key")
    b = _own_contour("bravo", notification_key="bravo-key", approval_for_all_writes=True)
    return a, b


def _b_order(b: Assistant) -> dict[str, Any]:
    b.contour.approval_for_all_writes = False
    b.contour.save()
    args = order_args(description="Счёт контура B")
    _, first = b.call("create_order", args)
    _, done = b.call("create_order", {**args, "confirmation_token": first["confirmation"]["token"]})
    b.contour.approval_for_all_writes = True
    b.contour.save()
    return done["data"]


def test_a_cannot_read_bs_orders(pair: tuple[Assistant, Assistant]):
    a, b = pair
    order = _b_order(b)

    by_id = a.call("get_order", {"order_id": order["order_id"]})
    by_number = a.call("get_order", {"merchant_order_id": order["merchant_order_id"]})
    listed = a.call("find_orders", {})

    assert by_id[1]["code"] == "not_found"
    assert by_number[1]["code"] == "not_found"
    assert listed[1]["data"]["total_count"] == 0
    assert b.call("get_order", {"order_id": order["order_id"]})[0] == 200


def test_a_cannot_confirm_or_see_bs_confirmation(pair: tuple[Assistant, Assistant]):
    a, b = pair
    args = order_args()
    _, prepared = b.call("create_order", args)
    token = prepared["confirmation"]["token"]
    confirmation_id = prepared["confirmation"]["id"]

    status, used = a.call("create_order", {**args, "confirmation_token": token})
    seen = a.get(f"/api/v1/confirmations/{confirmation_id}")

    assert (status, used["code"]) == (409, "confirmation_invalid")
    assert seen[0] == 404
    assert PendingConfirmation.objects.get(pk=confirmation_id).status == "pending"
    assert b.get(f"/api/v1/confirmations/{confirmation_id}")[0] == 200


def test_a_key_cannot_approve_anything(pair: tuple[Assistant, Assistant]):
    a, b = pair
    _, prepared = b.call("create_order", order_args())
    confirmation_id = prepared["confirmation"]["id"]

    response = a.http.post(
        f"/approvals/{confirmation_id}/",
        {"decision": "approve"},
        HTTP_AUTHORIZATION=f"Bearer {a.key}",
    )

    assert response.status_code in (302, 403)
    assert "/accounts/login/" in response.get("Location", "/accounts/login/")
    assert PendingConfirmation.objects.get(pk=confirmation_id).status == "pending"
    assert not JournalEntry.objects.filter(phase__in=["approve", "reject"]).exists()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/journal",
        "/api/v1/journal/export?format=jsonl",
        "/api/v1/journal/export?format=csv&contour=bravo",
    ],
)
def test_a_key_cannot_export_the_journal(pair: tuple[Assistant, Assistant], path: str):
    a, b = pair
    _b_order(b)

    response = a.http.get(path, HTTP_AUTHORIZATION=f"Bearer {a.key}")

    assert response.status_code in (401, 403)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert b"bravo" not in body


def test_as_notification_key_cannot_move_bs_orders(pair: tuple[Assistant, Assistant]):
    _, b = pair
    order = _b_order(b)
    body = (
        f'{{"id": "{order["order_id"]}", "status": "completed", "merchantId": '
        f'"{b.contour.merchant_id}", "merchantOrderId": "{order["merchant_order_id"]}", '
        f'"amount": 366, "currencyId": "RUB"}}'
    ).encode()

    answer = (
        Client()
        .post(
            "/invoicebox/notifications/bravo",
            data=body,
            content_type="application/json",
            HTTP_X_SIGNATURE=sign(body, "alpha-key"),
        )
        .json()
    )

    assert answer["code"] == "signature_error"
    assert b.contour.orders.get().status == "created"
