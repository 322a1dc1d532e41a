"""The floor for benchmarks.cost_per_call: uvicorn and the `mcp` SDK's Streamable HTTP with one
tool, get_order, making the same pooled httpx GET to the fake upstream as the gateway. No
database, no key, no journal: what any Python MCP server on this SDK costs at least.

    FLOOR_UPSTREAM=http://127.0.0.1:8765 [FLOOR_JSON=1] \
        .venv/bin/python -m uvicorn benchmarks.floor_server:app --port 18110
"""

from __future__ import annotations

import os
from typing import Any

import httpx
from mcp.server.mcpserver import MCPServer

UPSTREAM = os.environ.get("FLOOR_UPSTREAM", "http://127.0.0.1:8765")
server = MCPServer("floor")
_http: httpx.AsyncClient | None = None


@server.tool()
async def get_order(order_id: str) -> dict[str, Any]:
    """One order by id, from the upstream."""
    global _http
    if _http is None:  # pooled: one client (and its keep-alive connections) per process
        _http = httpx.AsyncClient(base_url=UPSTREAM, timeout=30)
    response = await _http.get(
        "/v3/filter/api/order/order", params={"id": order_id, "_pageSize": "1"}
    )
    response.raise_for_status()
    return {"status": "ok", "data": response.json()}


app = server.streamable_http_app(json_response=os.environ.get("FLOOR_JSON") == "1")
