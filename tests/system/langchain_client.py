"""langchain-mcp-adapters as an agent uses it: SESSIONS sessions of tool calls in, ToolMessages out.

Runs in its own venv (.venv-langchain, made by `make test`): the adapters import mcp 1.x, the
gateway runs mcp 2. Standalone on purpose (no Django, no project imports); the steps are those
of tests/system/sessions.py and node/ts_client.mjs (which says why each order is its own and
how the refusal is made). Prints one JSON line per session.

    .venv-langchain/bin/python tests/system/langchain_client.py URL KEY SESSIONS ORDER_JSON
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import Any

from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools


async def one_session(client: MultiServerMCPClient, order: dict[str, Any]) -> dict[str, Any]:
    async with client.session("gateway") as session:
        tools = {tool.name: tool for tool in await load_mcp_tools(session)}

        async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
            message = await tools[name].ainvoke(
                {"type": "tool_call", "id": "call-1", "name": name, "args": args}
            )
            content = message.content
            text = content if isinstance(content, str) else content[0]["text"]
            return {**json.loads(text), "isError": message.status == "error"}

        order = {**order, "description": f"{order['description']} №{uuid.uuid4().hex[:8]}"}
        done: dict[str, Any] = {"tools": list(tools)}
        done["find"] = await call("find_orders", {})
        done["prepared"] = await call("create_order", order)
        token = (done["prepared"].get("confirmation") or {}).get("token")
        done["created"] = await call("create_order", {**order, "confirmation_token": token})
        done["read"] = await call(
            "get_order", {"order_id": (done["created"].get("data") or {}).get("order_id")}
        )
        done["refused"] = await call("create_order", {**order, "amount": "1"})
        return done


async def main(url: str, key: str, sessions: int, order: dict[str, Any]) -> int:
    client = MultiServerMCPClient(
        {
            "gateway": {
                "transport": "streamable_http",
                "url": url,
                "headers": {"Authorization": f"Bearer {key}"},
            }
        }
    )
    failed = 0
    for index in range(sessions):
        try:
            print(
                json.dumps(
                    {"session": index, **await one_session(client, order)}, ensure_ascii=False
                ),
                flush=True,
            )
        except Exception as error:  # reported, counted, the next session still runs
            failed += 1
            print(json.dumps({"session": index, "error": repr(error)}), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    url, key, sessions, order = sys.argv[1:5]
    sys.exit(asyncio.run(main(url, key, int(sessions), json.loads(order))))
