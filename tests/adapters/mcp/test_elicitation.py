"""The dialog (MCP elicitation) may stand in for the chat confirmation, never for an operator.

The client that answers an elicitation is the key holder's own software: its "yes" is no
second person. Every write the contour hands to an operator stays awaiting_approval whatever
the dialog answers; a URL-mode client is only pointed to the approval page.
"""

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

from adapters.mcp.server import Caller, build_server, run_sync
from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from sandbox.api import pay_order
from tests.adapters.mcp.test_protocol import envelope
from tests.conftest import order_args, sandbox_orders
from tools.contours.services import create_contour
from tools.models import ConfirmationStatus, Contour, PendingConfirmation

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

CHANNEL = "mcp-stdio"


class Dialog:
    """The client's elicitation callback: records every request, answers as told."""

    def __init__(self, action: str = "accept", confirm: bool = True) -> None:
        self.action = action
        self.confirm = confirm
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.asked.append(params)
        content = {"confirm": self.confirm} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)


@pytest.fixture
def shop(transactional_db: None) -> Contour:
    return create_contour(
        "acme", mode="sandbox", name="Acme", toolsets=["read", "write", "refund"], actor=SCAFFOLDING
    )


@asynccontextmanager
async def connect(contour: Contour, dialog: Dialog | None) -> AsyncIterator[Client]:
    """The official client in legacy mode against the in-process server of this contour."""

    async def resolve(ctx: ServerRequestContext[Any, Any]) -> Caller:
        fresh = await run_sync(Contour.objects.get, pk=contour.pk)
        return Caller(contour=fresh, channel=CHANNEL, actor="stdio:acme")

    async with Client(
        build_server(resolve), mode="legacy", elicitation_callback=dialog, raise_exceptions=True
    ) as client:
        yield client


async def two_calls(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Prepare, then the confirmed call: the one that meets the approval requirement."""
    first = envelope(await client.call_tool(name, args))
    assert first["status"] == "confirmation_required", first
    token = first["confirmation"]["token"]
    return envelope(await client.call_tool(name, {**args, "confirmation_token": token}))


async def orders() -> list[dict[str, Any]]:
    return await run_sync(sandbox_orders, HttpClient())


OPERATOR_RULES = {
    "threshold": {"approval_thresholds": {"RUB": 1}},
    "all_writes": {"approval_for_all_writes": True},
    "currency_without_threshold": {
        "approval_thresholds": {"RUB": 100_000_000_00},
        "allowed_currencies": ["RUB", "EUR"],
    },
}


def args_for(rule: str) -> dict[str, Any]:
    if rule == "currency_without_threshold":
        return order_args(currency_id="EUR")
    return order_args()


async def with_rule(contour: Contour, rule: str) -> None:
    for name, value in OPERATOR_RULES[rule].items():
        setattr(contour, name, value)
    await run_sync(contour.save)


async def nothing_approved() -> None:
    assert not await run_sync(JournalEntry.objects.filter(phase="approve").exists)
    statuses = await run_sync(
        lambda: set(PendingConfirmation.objects.values_list("status", flat=True))
    )
    assert statuses <= {ConfirmationStatus.PENDING}


@pytest.mark.parametrize("rule", list(OPERATOR_RULES))
@pytest.mark.parametrize("answer", ["accept", "no_client_dialog"])
async def test_a_write_for_an_operator_is_never_approved_in_the_dialog(
    shop: Contour, rule: str, answer: str
):
    # given: the contour hands this write to an operator; the key holder's client says "yes"
    await with_rule(shop, rule)
    dialog = Dialog("accept") if answer == "accept" else None

    # when
    async with connect(shop, dialog) as client:
        waiting = await two_calls(client, "create_order", args_for(rule))

    # then: nothing executed, nobody "approved", only the page link was shown
    assert waiting["status"] == "awaiting_approval", waiting
    assert await orders() == []
    await nothing_approved()
    asked = dialog.asked if dialog is not None else []
    assert all(isinstance(params, types.ElicitRequestURLParams) for params in asked)
    if dialog is not None:
        assert [params.url for params in asked] == [waiting["confirmation"]["approval_url"]]


async def test_a_refund_is_never_approved_in_the_dialog(shop: Contour):
    # given: a paid order, ordered below any threshold (no approval needed for it)
    async with connect(shop, None) as client:
        order = await two_calls(client, "create_order", order_args())
    assert order["status"] == "ok", order
    await run_sync(pay_order, order["data"]["order_id"], notify=False)
    dialog = Dialog("accept")

    # when
    async with connect(shop, dialog) as client:
        waiting = await two_calls(
            client,
            "create_refund",
            {"parent_order_id": order["data"]["order_id"], "description": "отказ от брони"},
        )

    # then
    assert waiting["status"] == "awaiting_approval", waiting
    assert all(isinstance(params, types.ElicitRequestURLParams) for params in dialog.asked)
    refund = await run_sync(PendingConfirmation.objects.get, tool="create_refund")
    assert refund.status == ConfirmationStatus.PENDING
    assert not await run_sync(JournalEntry.objects.filter(phase="approve").exists)


async def test_a_yes_in_the_dialog_stands_in_for_the_chat_confirmation(shop: Contour):
    # given: a write below the threshold, no operator needed
    dialog = Dialog("accept")

    # when: the first call alone, the person says yes in the client's dialog
    async with connect(shop, dialog) as client:
        assert client.protocol_version == "2025-11-25"
        done = envelope(await client.call_tool("create_order", order_args()))

    # then: executed once, journaled as the key's own execute call, no approval recorded
    assert done["status"] == "ok", done
    assert len(dialog.asked) == 1
    asked = dialog.asked[0]
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert list(asked.requested_schema["properties"]) == ["confirm"]
    confirmation = await run_sync(PendingConfirmation.objects.get)
    assert confirmation.summary in asked.message
    assert confirmation.status == ConfirmationStatus.EXECUTED
    assert confirmation.decided_by == ""
    assert len(await orders()) == 1
    phases = await run_sync(lambda: list(JournalEntry.objects.values_list("phase", flat=True)))
    assert "approve" not in phases and "execute" in phases


@pytest.mark.parametrize(
    ("action", "confirm"), [("decline", True), ("cancel", True), ("accept", False)]
)
async def test_no_yes_in_the_dialog_leaves_the_chat_confirmation(
    shop: Contour, action: str, confirm: bool
):
    # given
    dialog = Dialog(action, confirm=confirm)

    # when
    async with connect(shop, dialog) as client:
        first = envelope(await client.call_tool("create_order", order_args()))

    # then
    assert len(dialog.asked) == 1
    assert first["status"] == "confirmation_required"
    assert "не подтвердил" in first["message"]
    assert await orders() == []


async def test_a_client_without_elicitation_gets_the_plain_two_calls(shop: Contour):
    # when
    async with connect(shop, None) as client:
        first = envelope(await client.call_tool("create_order", order_args()))
        done = await two_calls(client, "create_order", order_args(description="другой счёт"))

    # then
    assert first["status"] == "confirmation_required"
    assert done["status"] == "ok", done
    assert len(await orders()) == 1
