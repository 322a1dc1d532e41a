"""approve_in_dialog: never for money, only the own contour's pending item, journaled."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.invoicebox.sandbox import pay_order
from audit.models import JournalEntry
from tests.conftest import order_args
from tools import gateway
from tools.approvals import approve_in_dialog
from tools.contours import create_contour
from tools.errors import ToolError
from tools.models import ConfirmationStatus, Contour, PendingConfirmation


def call(contour: Contour, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return gateway.call(contour, name, args, channel="rest", actor="test").as_dict()


def awaiting(contour: Contour, name: str, args: dict[str, Any]) -> str:
    """Prepare and confirm a write that needs a human; its confirmation id."""
    first = call(contour, name, args)
    second = call(contour, name, {**args, "confirmation_token": first["confirmation"]["token"]})
    assert second["status"] == "awaiting_approval", second
    return second["confirmation"]["id"]


def guarded(slug: str) -> Contour:
    """A sandbox contour where every write waits for a human."""
    contour = create_contour(slug, mode="sandbox", toolsets=["read", "write", "refund"])
    contour.approval_for_all_writes = True
    contour.save()
    return contour


@pytest.fixture
def shop(db: None) -> Contour:
    return guarded("acme")


def test_approves_a_pending_write_once_and_journals_it(shop: Contour):
    # given
    cid = awaiting(shop, "create_order", order_args())

    # when
    approved = approve_in_dialog(cid, shop, channel="mcp-stdio", actor="stdio:acme")

    # then
    assert approved.status == ConfirmationStatus.APPROVED
    assert approved.decided_by == "dialog:stdio:acme"
    entry = JournalEntry.objects.get(phase="approve")
    assert (entry.channel, entry.actor, entry.code, entry.confirmation_id) == (
        "mcp-stdio", "stdio:acme", "approved", cid)
    with pytest.raises(ToolError) as again:
        approve_in_dialog(cid, shop, channel="mcp-stdio", actor="stdio:acme")
    assert again.value.code == "confirmation_used"


def test_refuses_a_money_tool(shop: Contour):
    # given: a paid order and a refund of it waiting for the operator
    shop.approval_for_all_writes = False
    shop.save()
    order = call(shop, "create_order", order_args())
    done = call(shop, "create_order", {**order_args(),
                                       "confirmation_token": order["confirmation"]["token"]})
    pay_order(done["data"]["order_id"], notify=False)
    cid = awaiting(shop, "create_refund", {"parent_order_id": done["data"]["order_id"],
                                           "description": "отказ от брони"})

    # when
    with pytest.raises(ToolError) as refused:
        approve_in_dialog(cid, shop, channel="mcp-http", actor="key:abc")

    # then
    assert refused.value.code == "forbidden"
    assert PendingConfirmation.objects.get(pk=cid).status == ConfirmationStatus.PENDING
    assert not JournalEntry.objects.filter(phase="approve").exists()


def test_refuses_a_confirmation_of_another_contour(shop: Contour):
    # given
    other = guarded("bravo")
    cid = awaiting(other, "create_order", order_args())

    # when
    with pytest.raises(ToolError) as refused:
        approve_in_dialog(cid, shop, channel="mcp-http", actor="key:abc")

    # then
    assert refused.value.code == "confirmation_invalid"
    assert PendingConfirmation.objects.get(pk=cid).status == ConfirmationStatus.PENDING
    assert not JournalEntry.objects.filter(phase="approve").exists()
