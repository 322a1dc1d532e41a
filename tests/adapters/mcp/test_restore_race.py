"""A session opened on one worker, first met by another worker in several requests at once:
each request is answered by the one copy that worker restores (adapters/mcp/manager.py), none
by a copy not yet connected (the SDK's "No read stream writer available", seen once with
langchain-mcp-adapters behind nginx)."""

from __future__ import annotations

import asyncio

import httpx

from tests.adapters.mcp.conftest import Gateway, free_port, serving
from tests.adapters.mcp.test_http import ACCEPT, LEGACY, open_session, rpc

CONCURRENT = 12


async def _at_once(url: str, key: str, session_id: str) -> list[httpx.Response]:
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": ACCEPT,
        "Mcp-Session-Id": session_id,
        "MCP-Protocol-Version": LEGACY,
    }
    methods = ["tools/list", "ping"] * (CONCURRENT // 2)
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        return await asyncio.gather(
            *(http.post(url, json=rpc(m, id=n)) for n, m in enumerate(methods, start=10))
        )


def test_a_session_met_by_another_worker_in_requests_at_once_answers_each(live: Gateway) -> None:
    key = live.keys["acme"]
    session_id = open_session(live, key)
    with serving(live, str(free_port())) as other:
        answers = asyncio.run(_at_once(other, key, session_id))
    assert [a.status_code for a in answers] == [200] * CONCURRENT, [a.text for a in answers]
    for answer in answers:
        body = answer.json()
        assert "result" in body, body
