"""The MCP door cut to its least (issue 44), served by benchmarks.served_ab as a variant: how
much of a served call the door's layers cost, measured against the gateway itself.

NOT a door to deploy: it skips the checks that make the door safe, to bound what any slimmer
door could save. A session's POST to /mcp without an Origin header goes, before every layer of
config.asgi (the body's bounds, the in-flight limit, Starlette's routing, CORS, the database
fault envelope, the SDK's Host/Origin check, asgiref's hop), straight to the fast path's own
work: `lean.call_of` on the loop, `http.admit` (the key, the session, the core call, the
answer) on the pool's thread with Django's connection handling around it, and the answer's
bytes. Everything else goes to the gateway's app as it came.

    .venv/bin/python -m benchmarks.served_ab --variant gateway=config.asgi:application \\
        --variant slim=benchmarks.slim_door:application --reference
"""
# ruff: noqa: I001 - config.asgi first, as it sets Django up

from __future__ import annotations

import asyncio
from typing import Any

from config.asgi import application as gateway  # first: it sets Django up

from django.db import close_old_connections
from starlette.requests import Request

from adapters.mcp import lean
from adapters.mcp.http import PATH, admit


def _admit_on_thread(*args: Any) -> Any:
    close_old_connections()
    try:
        return admit(*args)
    finally:
        close_old_connections()


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == PATH:
        headers = dict(scope["headers"])
        session_id = headers.get(b"mcp-session-id")
        if session_id and b"origin" not in headers:
            chunks = []
            while True:
                message = await receive()
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    break
            body = b"".join(chunks)
            call = lean.call_of(Request(scope), body)
            if call is not None:
                admitted = await asyncio.get_running_loop().run_in_executor(
                    None,
                    _admit_on_thread,
                    headers.get(b"authorization", b"").decode("latin-1"),
                    scope["client"][0],
                    session_id.decode("latin-1"),
                    True,
                    body,
                    call,
                )
                if admitted.response is not None:
                    await admitted.response(scope, receive, send)
                    return
            replayed = False

            async def replay() -> dict[str, Any]:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return dict(await receive())

            await gateway(scope, replay, send)
            return
    await gateway(scope, receive, send)
