"""Approval in the dialog: a 2025-11-25 client with elicitation answers instead of the web UI."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import pytest
from django.test import Client as HttpClient
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.server.context import ServerRequestContext

from adapters.invoicebox.sandbox import pay_order
from adapters.mcp.server import Caller, build_server, run_sync
from audit.models import JournalEntry
from tests.adapters.mcp.test_protocol import envelope
from tests.conftest import order_args, sandbox_orders
from tools.contours import create_contour
from tools.models import ConfirmationStatus, Contour, PendingConfirmation

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

CHANNEL = "mcp-stdio"


class Dialog:
    """The client's elicitation callback: records every request, answers as told."""

    def __init__(self, action: str, confirm: bool = True) -> None:
        self.action = action
        self.confirm = confirm
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: ClientRequestContext,
                       params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        content = {"confirm": self.confirm} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)


@pytest.fixture
def shop(transactional_db: None) -> Contour:
    return create_contour("acme", mode="sandbox", name="Acme",
                          toolsets=["read", "write", "refund"])


@asynccontextmanager
async def connect(contour: Contour, dialog: Dialog | None) -> AsyncIterator[Client]:
    """The official client in legacy mode against the in-process server of this contour."""

    async def resolve(ctx: ServerRequestContext[Any, Any]) -> Caller:
        fresh = await run_sync(Contour.objects.get, pk=contour.pk)
        return Caller(contour=fresh, channel=CHANNEL, actor="stdio:acme")

    async with Client(build_server(resolve), mode="legacy", elicitation_callback=dialog,
                      raise_exceptions=True) as client:
        yield client


async def two_calls(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Prepare, then the confirmed call: the one that meets the approval requirement."""
    first = envelope(await client.call_tool(name, args))
    assert first["status"] == "confirmation_required", first
    token = first["confirmation"]["token"]
    return envelope(await client.call_tool(name, {**args, "confirmation_token": token}))


async def orders() -> list[dict[str, Any]]:
    return await run_sync(sandbox_orders, HttpClient())


async def above_threshold(contour: Contour) -> None:
    contour.approval_thresholds = {"RUB": 1}
    await run_sync(contour.save)


async def test_accept_in_the_dialog_approves_and_executes_once(shop: Contour):
    # given
    await above_threshold(shop)
    dialog = Dialog("accept")

    # when
    async with connect(shop, dialog) as client:
        assert client.protocol_version == "2025-11-25"
        done = await two_calls(client, "create_order", order_args())

    # then
    assert done["status"] == "ok", done
    assert len(dialog.asked) == 1
    asked = dialog.asked[0]
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert list(asked.requested_schema["properties"]) == ["confirm"]
    confirmation = await run_sync(PendingConfirmation.objects.get)
    assert confirmation.summary in asked.message
    assert confirmation.status == ConfirmationStatus.EXECUTED
    assert confirmation.decided_by == "dialog:stdio:acme"
    assert len(await orders()) == 1
    approvals = await run_sync(lambda: list(JournalEntry.objects.filter(phase="approve")))
    assert [(e.channel, e.actor, e.code) for e in approvals] == [
        (CHANNEL, "stdio:acme", "approved")]


@pytest.mark.parametrize(("action", "confirm"), [("decline", True), ("cancel", True),
                                                 ("accept", False)])
async def test_no_yes_in_the_dialog_leaves_it_awaiting_approval(shop: Contour, action: str,
                                                                confirm: bool):
    # given
    shop.approval_for_all_writes = True
    await run_sync(shop.save)
    dialog = Dialog(action, confirm=confirm)

    # when
    async with connect(shop, dialog) as client:
        waiting = await two_calls(client, "create_order", order_args())

    # then
    assert len(dialog.asked) == 1
    assert waiting["status"] == "awaiting_approval"
    assert "не подтвердил" in waiting["message"]
    assert waiting["confirmation"]["approval_url"].endswith(
        f"/approvals/{waiting['confirmation']['id']}/")
    confirmation = await run_sync(PendingConfirmation.objects.get)
    assert confirmation.status == ConfirmationStatus.PENDING
    assert await orders() == []
    assert not await run_sync(JournalEntry.objects.filter(phase="approve").exists)


async def test_a_refund_is_never_asked_in_the_dialog(shop: Contour):
    # given: a paid order, ordered below any threshold (no approval needed for it)
    async with connect(shop, None) as client:
        order = await two_calls(client, "create_order", order_args())
    assert order["status"] == "ok", order
    await run_sync(pay_order, order["data"]["order_id"], notify=False)
    dialog = Dialog("accept")

    # when
    async with connect(shop, dialog) as client:
        waiting = await two_calls(client, "create_refund", {
            "parent_order_id": order["data"]["order_id"], "description": "отказ от брони"})

    # then
    assert dialog.asked == []
    assert waiting["status"] == "awaiting_approval"
    assert "не подтвердил" not in waiting["message"]
    refund = await run_sync(PendingConfirmation.objects.get, tool="create_refund")
    assert refund.status == ConfirmationStatus.PENDING


async def test_a_client_without_elicitation_gets_plain_awaiting_approval(shop: Contour):
    # given
    await above_threshold(shop)

    # when
    async with connect(shop, None) as client:
        waiting = await two_calls(client, "create_order", order_args())

    # then
    assert waiting["status"] == "awaiting_approval"
    assert waiting["message"].startswith("ждёт решения оператора")
    assert await orders() == []
    confirmation = await run_sync(PendingConfirmation.objects.get)
    assert confirmation.status == ConfirmationStatus.PENDING
