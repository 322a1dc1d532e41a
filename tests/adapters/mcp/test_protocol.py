"""The catalog through the official MCP client: stdio and HTTP, 2026-07-28 and 2025-11-25."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from adapters.mcp.schema import tools_list
from tests.adapters.mcp.conftest import (
    READER_TOOLSETS,
    WRITER_TOOLSETS,
    Connected,
    tool_names,
)
from tests.conftest import order_args
from tools.catalog import CATALOG

pytestmark = pytest.mark.anyio


def envelope(result: types.CallToolResult) -> dict[str, Any]:
    """The structured content, checked to be the same JSON the text block carries."""
    assert result.structured_content is not None
    assert [block.type for block in result.content] == ["text"]
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def test_lists_the_contours_tools_in_the_negotiated_revision(mcp: Connected):
    # when
    client = mcp["acme"]
    version = client.protocol_version
    listed = await client.list_tools()

    # then
    assert version == mcp.protocol
    assert [tool.name for tool in listed.tools] == tool_names(WRITER_TOOLSETS)
    # exactly what GET /api/v1/tools?format=mcp exports for the same contour
    visible = [spec for spec in CATALOG if spec.toolset in WRITER_TOOLSETS]
    assert [
        tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in listed.tools
    ] == tools_list(visible)["tools"]


async def test_read_only_contour_lists_only_read_tools(mcp: Connected):
    # when
    listed = await mcp["viewer"].list_tools()

    # then
    assert [tool.name for tool in listed.tools] == tool_names(READER_TOOLSETS)


async def test_read_returns_the_envelope_as_structured_content_and_text(mcp: Connected):
    # when
    client = mcp["acme"]
    listed = await client.list_tools()
    result = await client.call_tool("find_orders", {"page_size": 5})

    # then
    body = envelope(result)
    assert result.is_error is False
    assert body["status"] == "ok"
    assert body["data"]["page_size"] == 5
    assert next(t for t in listed.tools if t.name == "find_orders").output_schema is None


async def test_two_phase_write_issues_one_order_and_replays_it(mcp: Connected):
    # given
    args = order_args(description=f"Бронирование, {mcp.transport} {mcp.protocol}")

    # when
    client = mcp["acme"]
    first = envelope(await client.call_tool("create_order", args))
    token = first["confirmation"]["token"]
    second = envelope(await client.call_tool("create_order", {**args, "confirmation_token": token}))
    replay = envelope(await client.call_tool("create_order", {**args, "confirmation_token": token}))
    read = envelope(await client.call_tool("get_order", {"order_id": second["data"]["order_id"]}))

    # then
    assert first["status"] == "confirmation_required"
    assert "order_id" not in first["data"]
    assert second["status"] == "ok", second
    assert second["replayed"] is False
    assert replay["replayed"] is True
    assert replay["data"]["order_id"] == second["data"]["order_id"]
    assert read["data"]["amount"] == args["amount"]
    entries = mcp.gateway.journal(confirmation_id=first["confirmation"]["id"])
    assert [(e["phase"], e["status"]) for e in entries] == [
        ("prepare", "confirmation_required"),
        ("execute", "started"),
        ("execute", "ok"),
        ("execute", "ok"),
    ]
    assert {e["channel"] for e in entries} == {mcp.channel}
    expected_actor = "stdio:acme" if mcp.transport == "stdio" else "key:ibg_"
    assert all(e["actor"].startswith(expected_actor) for e in entries)


async def test_refusal_is_a_tool_result_flagged_is_error(mcp: Connected):
    # given: positions that do not add up to the amount
    args = order_args(amount="100", description=f"Не сходится, {mcp.transport} {mcp.protocol}")

    # when
    result = await mcp["acme"].call_tool("create_order", args)

    # then
    body = envelope(result)
    assert result.is_error is True
    assert (body["status"], body["code"]) == ("rejected", "invalid_arguments")
    assert any(p["field"] == "amount" for p in body["problems"])
    assert "confirmation" not in body
    [entry] = mcp.gateway.journal(id=body["journal_id"])
    assert (entry["channel"], entry["phase"], entry["code"]) == (
        mcp.channel,
        "prepare",
        "invalid_arguments",
    )
    assert (entry["upstream_request_id"], entry["confirmation_id"]) == ("", "")


async def test_write_on_a_read_only_contour_is_refused(mcp: Connected):
    # when
    result = await mcp["viewer"].call_tool("create_order", order_args())

    # then
    body = envelope(result)
    assert result.is_error is True
    assert body["code"] == "forbidden"
    [entry] = mcp.gateway.journal(id=body["journal_id"])
    assert (entry["contour"], entry["channel"], entry["upstream_request_id"]) == (
        "viewer",
        mcp.channel,
        "",
    )


async def test_unknown_tool_is_a_protocol_error_and_still_journaled(mcp: Connected):
    # given
    name = f"no_such_tool_{mcp.transport}_{mcp.mode}"

    # when
    with pytest.raises(MCPError) as refused:
        await mcp["acme"].call_tool(name, {})

    # then
    assert refused.value.code == types.INVALID_PARAMS
    assert name in refused.value.message
    [entry] = mcp.gateway.journal(tool=name)
    assert (entry["code"], entry["channel"]) == ("unknown_tool", mcp.channel)


async def test_the_refund_read_tools_answer_through_mcp(mcp: Connected):
    # given: an order issued through the same connection
    client = mcp["acme"]
    args = order_args(description=f"Возвраты, {mcp.transport} {mcp.protocol}")
    first = envelope(await client.call_tool("create_order", args))
    issued = envelope(
        await client.call_tool(
            "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
        )
    )
    order_id = issued["data"]["order_id"]

    # when
    refunds = envelope(await client.call_tool("find_refunds", {"order_id": order_id}))
    refundable = envelope(await client.call_tool("get_refundable", {"order_id": order_id}))

    # then: an unpaid order has neither refunds nor anything to refund
    assert (refunds["status"], refunds["data"]["total_count"]) == ("ok", 0), refunds
    assert refunds["data"]["refunded_amount"] == "0"
    assert refundable["status"] == "ok", refundable
    assert (refundable["data"]["status"], refundable["data"]["lines"]) == ("created", [])
