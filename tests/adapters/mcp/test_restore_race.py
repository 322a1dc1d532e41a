"""A session opened on one worker, first met by another worker in several requests at once:
each request is answered by the one copy that worker restores (adapters/mcp/manager.py), none
by a copy not yet connected (the SDK's "No read stream writer available", seen once with
langchain-mcp-adapters behind nginx)."""

from __future__ import annotations

import asyncio
import json

import httpx

from tests.adapters.mcp.conftest import Gateway, free_port, serving

VERSION = "2025-11-25"  # an era with sessions
CONCURRENT = 12


def _headers(gateway: Gateway, session_id: str = "") -> dict[str, str]:
    headers = {
        "Authorization": f"Bearer {gateway.keys['acme']}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": VERSION,
    }
    if session_id:
        headers["Mcp-Session-Id"] = session_id
    return headers


def _open_session(gateway: Gateway, url: str) -> str:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "restore-race", "version": "1"},
        },
    }
    opened = httpx.post(url, json=initialize, headers=_headers(gateway), timeout=30)
    assert opened.status_code == 200, opened.text
    session_id = opened.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    done = httpx.post(url, json=initialized, headers=_headers(gateway, session_id), timeout=30)
    assert done.status_code == 202, done.text
    return session_id


async def _at_once(gateway: Gateway, url: str, session_id: str) -> list[httpx.Response]:
    async with httpx.AsyncClient(headers=_headers(gateway, session_id), timeout=30) as http:
        return await asyncio.gather(
            *(
                http.post(url, content=json.dumps({"jsonrpc": "2.0", "id": n, "method": m}))
                for n, m in enumerate(["tools/list", "ping"] * (CONCURRENT // 2), start=10)
            )
        )


def test_a_session_met_by_another_worker_in_requests_at_once_answers_each(live: Gateway) -> None:
    session_id = _open_session(live, live.url)
    with serving(live, str(free_port())) as other:
        answers = asyncio.run(_at_once(live, other, session_id))
    assert [a.status_code for a in answers] == [200] * CONCURRENT, [a.text for a in answers]
    for answer in answers:
        body = answer.json()
        assert "result" in body, body
