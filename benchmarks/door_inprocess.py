"""The MCP door in process (issue 44): the served ASGI app (`config.asgi.application`, every
middleware, the route, ContourKeyAuth, the hop and the answer) driven by ASGI messages on an
event loop, one `tools/call` get_order at a time, on PostgreSQL against the fake upstream; no
socket and no HTTP parsing in front of it.

    .venv/bin/python -m benchmarks.door_inprocess [--reads 1000] [--rounds 3] [--port 18410]
        [--profile tottime|cumulative] [--top 40]

Prints the process CPU per read (the loop's thread and the pool's) and the loop thread's own
share; with --profile, a cProfile of the loop thread alone (the pool thread's work is
benchmarks.lean_hop's). Run it on two trees in turn to compare them.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import time
from typing import Any

from benchmarks._common import key_on_fake_upstream
from benchmarks.cost_per_call import GATEWAY_ENV, ORDER_ID, TOKEN

VERSION = "2025-11-25"


async def _lifespan(app: Any) -> tuple[asyncio.Task[None], asyncio.Queue[Any]]:
    inbox: asyncio.Queue[Any] = asyncio.Queue()
    started = asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            started.set()

    task = asyncio.create_task(
        app({"type": "lifespan", "asgi": {"version": "3.0"}}, inbox.get, send)
    )
    await inbox.put({"type": "lifespan.startup"})
    await started.wait()
    return task, inbox


async def _request(app: Any, headers: list[tuple[bytes, bytes]], body: bytes) -> tuple[int, bytes]:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
        "headers": headers,
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client stays connected
        return {"type": "http.disconnect"}

    status, chunks = 0, []

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(chunks)


async def _run(key: str, reads: int, rounds: int, profile: str | None, top: int) -> None:
    from config.asgi import application

    base = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"authorization", f"Bearer {key}".encode()),
    ]
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "door", "version": "1"},
        },
    }
    task, inbox = await _lifespan(application)
    status, _ = await _request(application, base, json.dumps(init).encode())
    assert status == 200, status
    # the session id: the SDK answers it in a header; read it from the database instead
    from adapters.mcp.models import McpSession  # a benchmark: the model named directly

    session_id = await asyncio.to_thread(lambda: McpSession.objects.latest("opened_at").session_id)
    headers = [
        *base,
        (b"mcp-session-id", session_id.encode()),
        (b"mcp-protocol-version", VERSION.encode()),
    ]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await _request(application, headers, json.dumps(note).encode())
    call = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "get_order", "arguments": {"order_id": ORDER_ID}},
        }
    ).encode()
    for _ in range(50):
        status, answer = await _request(application, headers, call)
        assert status == 200 and b'"isError":false' in answer, (status, answer[:300])
    for _ in range(rounds):
        cpu, loop = time.process_time(), time.thread_time()
        for _ in range(reads):
            await _request(application, headers, call)
        cpu, loop = time.process_time() - cpu, time.thread_time() - loop
        print(
            f"process CPU ms/read {cpu / reads * 1000:.3f}, of which the loop's thread "
            f"{loop / reads * 1000:.3f}"
        )
    if profile:
        profiler = cProfile.Profile(time.thread_time)
        profiler.enable()
        for _ in range(reads):
            await _request(application, headers, call)
        profiler.disable()
        pstats.Stats(profiler).sort_stats(profile).print_stats(top)
    await inbox.put({"type": "lifespan.shutdown"})
    await task


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reads", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=18410, help="the fake upstream's")
    parser.add_argument("--profile", choices=("tottime", "cumulative"))
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args(argv)
    with key_on_fake_upstream("door", args.port, GATEWAY_ENV, TOKEN) as key:
        import uvloop

        uvloop.run(_run(key, args.reads, args.rounds, args.profile, args.top))


if __name__ == "__main__":
    main()
