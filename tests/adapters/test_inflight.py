"""Overload answered, not queued (issue 44): past GATEWAY_MAX_INFLIGHT requests in flight and a
short wait, a fast 503 `overloaded` with Retry-After on REST and /mcp, while the admitted calls
complete; /health is never counted.

uvicorn serves config.asgi:application with GATEWAY_MAX_INFLIGHT=2 (4 pool threads, so the pool
alone would have queued nothing and admitted all), a 0.2 s wait and a queue of 1, against the
bundled sandbox slowed to 1.5 s per request (its latency fault), on a port of 8600-8699."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import pytest

from adapters.inflight import InflightLimit
from harness.served import free_port, manage, serving

LATENCY_MS = 1500


@dataclass
class Served:
    base: str
    key: str
    env: dict[str, str]


def set_latency(env: dict[str, str], latency_ms: int) -> None:
    manage(
        env,
        "shell",
        "-c",
        "from sandbox.api import set_faults; from tools.models import Contour; "
        f"set_faults(Contour.objects.get(slug='acme').api_token, latency_ms={latency_ms})",
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    state = tmp_path_factory.mktemp("inflight")
    port = free_port(8600, 8699)
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{state / 'db.sqlite3'}",
        "LOG_LEVEL": "WARNING",
        "GATEWAY_SYNC_THREADS": "4",
        "GATEWAY_MAX_INFLIGHT": "2",
        "GATEWAY_INFLIGHT_QUEUE": "1",
        "GATEWAY_INFLIGHT_WAIT_SECONDS": "0.2",
        "GATEWAY_OVERLOAD_RETRY_AFTER": "2",
        "MCP_LEAN": "true",
    }
    manage(env, "migrate", "--noinput")
    manage(env, "create_contour", "acme", "--mode", "sandbox", "--toolsets", "read,write")
    key = manage(env, "create_api_key", "acme").strip()
    with serving(env, port, state / "uvicorn.log") as base:
        yield Served(base, key, env)


def rest_call(served: Served) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = httpx.post(
        f"{served.base}/api/v1/call",
        timeout=30,
        headers={"Authorization": f"Bearer {served.key}"},
        json={"name": "get_order", "arguments": {"order_id": str(uuid.uuid4())}},
    )
    return response, time.monotonic() - started


def mcp_call(served: Served) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = httpx.post(
        f"{served.base}/mcp",
        timeout=30,
        json={
            "jsonrpc": "2.0",
            "id": 41,
            "method": "tools/call",
            "params": {"name": "get_order", "arguments": {"order_id": str(uuid.uuid4())}},
        },
        headers={
            "Authorization": f"Bearer {served.key}",
            "Accept": "application/json, text/event-stream",
        },
    )
    return response, time.monotonic() - started


def test_calls_past_the_limit_get_a_fast_503_while_admitted_ones_complete(served: Served):
    # given: the upstream answers each request after 1.5 s, and two calls are in flight
    set_latency(served.env, LATENCY_MS)
    try:
        with ThreadPoolExecutor(8) as pool:
            admitted = [pool.submit(rest_call, served) for _ in range(2)]
            time.sleep(0.5)
            # when: three more calls arrive (REST twice, /mcp once) and the balancer probes
            extra = [
                pool.submit(rest_call, served),
                pool.submit(rest_call, served),
                pool.submit(mcp_call, served),
            ]
            health = httpx.get(f"{served.base}/health", timeout=5)
            refused = [future.result() for future in extra]
            done = [future.result() for future in admitted]
    finally:
        set_latency(served.env, 0)
    # then: each of the three is refused fast (the 0.2 s wait, never the upstream's 1.5 s)
    for response, seconds in refused:
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "2"
        assert seconds < 1.0, seconds
    rest_bodies = [response.json() for response, _ in refused[:2]]
    for body in rest_bodies:
        assert body["code"] == "overloaded" and body["status"] == "error"
        assert "перегружен" in body["message"] and body["data"] == {"retry_after": 2}
    # /mcp answers a JSON-RPC error naming the request, the envelope in its data
    rpc = refused[2][0].json()
    assert rpc["jsonrpc"] == "2.0" and rpc["id"] == 41
    assert rpc["error"]["code"] == -32000 and rpc["error"]["data"]["code"] == "overloaded"
    # the probe is not counted
    assert health.status_code == 200
    # and the admitted calls completed with the upstream's own answer, after its latency
    for response, seconds in done:
        assert response.status_code == 422, response.text
        assert response.json()["code"] == "not_found"
        assert seconds >= LATENCY_MS / 1000


def test_a_freed_slot_admits_the_next_call(served: Served):
    response, _ = rest_call(served)
    assert response.status_code == 422 and response.json()["code"] == "not_found"


# The admission itself, on a bare ASGI app: a waiter gets a freed slot within its wait, the
# queue's bound refuses at once, and every slot comes back.


async def _run_admission() -> tuple[list[int], InflightLimit]:
    release = asyncio.Event()

    async def app(scope: dict, receive: object, send: object) -> None:
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": b""})  # type: ignore[operator]

    limit = InflightLimit(app, limit=1, queue=1, wait_seconds=1.0, retry_after=1)
    statuses: list[int] = []

    async def request() -> None:
        async def receive() -> dict:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        await limit({"type": "http", "path": "/api/v1/call", "method": "POST"}, receive, send)

    first = asyncio.create_task(request())
    await asyncio.sleep(0.01)
    waiting = asyncio.create_task(request())  # waits for the first one's slot
    await asyncio.sleep(0.01)
    await request()  # the queue (1) is full: refused at once, before any is released
    release.set()
    await asyncio.gather(first, waiting)
    return statuses, limit


def test_a_waiter_gets_the_freed_slot_and_the_queue_is_bounded():
    statuses, limit = asyncio.run(_run_admission())
    assert statuses == [503, 200, 200]
    assert limit.active == 0 and not limit._waiters


async def _run_cancel_after_handover() -> InflightLimit:
    waiting: list[asyncio.Task[None]] = []
    limit: InflightLimit

    async def app(scope: dict, receive: object, send: object) -> None:
        if not waiting:
            waiting.append(asyncio.create_task(request()))  # queues behind this one
            await asyncio.sleep(0.01)
            # the waiter's client leaves just as this call frees its slot for it
            asyncio.get_running_loop().call_soon(waiting[0].cancel)

    limit = InflightLimit(app, limit=1, queue=1, wait_seconds=1.0, retry_after=1)

    async def request() -> None:
        async def receive() -> dict:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict) -> None:
            pass

        await limit({"type": "http", "path": "/api/v1/call", "method": "POST"}, receive, send)

    await request()
    with pytest.raises(asyncio.CancelledError):
        await waiting[0]
    return limit


def test_a_slot_handed_to_a_waiter_that_left_is_not_lost():
    limit = asyncio.run(_run_cancel_after_handover())
    assert limit.active == 0 and not limit._waiters
