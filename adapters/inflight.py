"""Overload answered, not queued (issue 44): at most `GATEWAY_MAX_INFLIGHT` requests of a
process in flight, a short bounded wait for a slot, and past it a fast 503 `overloaded` with
`Retry-After`.

Without it every request past the pool's `GATEWAY_SYNC_THREADS` waited in the pool's queue,
unbounded: at twice a worker's capacity each call slowed down until clients timed out, and a
client that gave up still left its call queued, to be run for nobody. Here a request waits at
most `GATEWAY_INFLIGHT_WAIT_SECONDS` for a slot, behind at most `GATEWAY_INFLIGHT_QUEUE` others;
otherwise it is answered at once, on the event loop, without a thread, a database statement or
a journal entry (nothing is known of the caller yet, and an overload must not become a flood of
journal rows). A proxy or a client retries it after `Retry-After`, on this worker or another.

It sits inside adapters/bounded_body.py: a body is whole before its request takes a slot, so a
client trickling a body holds no slot. `/health` (a balancer's probe must tell a busy worker
from a dead one), `/metrics` and the long-lived GET stream of /mcp are never counted.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque

from starlette.types import ASGIApp, Receive, Scope, Send

from tools.errors import CODE_STATUS, Outcome
from tools.ops.metrics import OVERLOAD_REFUSALS

logger = logging.getLogger(__name__)

CODE = "overloaded"
MESSAGE = "шлюз перегружен: запрос не принят и не выполнен"
HINT = "повторите запрос через {seconds} с; ничего не было сделано"
# JSON-RPC's implementation-defined server error range (as a refused MCP session).
JSONRPC_CODE = -32000
EXEMPT_PATHS = frozenset({"/health", "/metrics"})


class InflightLimit:
    def __init__(
        self,
        app: ASGIApp,
        *,
        limit: int,
        queue: int,
        wait_seconds: float,
        retry_after: int,
        mcp_path: str = "/mcp",
    ) -> None:
        self.app = app
        self.limit, self.queue, self.wait_seconds = limit, queue, wait_seconds
        self.retry_after = retry_after
        self.mcp_path = mcp_path
        self.active = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._exempt(scope):
            await self.app(scope, receive, send)
            return
        if not await self._acquire():
            await self._refuse(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self._release()

    def _exempt(self, scope: Scope) -> bool:
        path = scope.get("path", "")
        return path in EXEMPT_PATHS or (path == self.mcp_path and scope.get("method") == "GET")

    async def _acquire(self) -> bool:
        if self.active < self.limit and not self._waiters:
            self.active += 1
            return True
        if len(self._waiters) >= self.queue or self.wait_seconds <= 0:
            return False
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(self.wait_seconds):
                await waiter
        except TimeoutError:
            pass
        except BaseException:  # the client left while waiting (the task cancelled)
            if waiter.done() and not waiter.cancelled():
                self._release()  # a slot handed over just before: pass it on
            raise
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
        if waiter.done() and not waiter.cancelled():
            return True  # the slot was handed over by _release (active already counts it)
        return False

    def _release(self) -> None:
        # A freed slot goes straight to the oldest waiter still waiting; `active` stays.
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.active -= 1

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        door = "mcp" if scope.get("path") == self.mcp_path else "http"
        OVERLOAD_REFUSALS.labels(door=door).inc()
        logger.info(
            "overloaded: %s %s refused (%d in flight, %d waiting)",
            scope.get("method"),
            str(scope.get("path", ""))[:64],
            self.active,
            len(self._waiters),
        )
        status = CODE_STATUS[CODE][1]
        envelope = Outcome(
            status=CODE_STATUS[CODE][0],
            code=CODE,
            message=MESSAGE,
            hint=HINT.format(seconds=self.retry_after),
            data={"retry_after": self.retry_after},
            http_status=status,
        ).as_dict()
        if door == "mcp":
            message = await receive()  # the whole body, already read (adapters/bounded_body.py)
            envelope = {
                "jsonrpc": "2.0",
                "id": _request_id(message.get("body", b"")),
                "error": {"code": JSONRPC_CODE, "message": MESSAGE, "data": envelope},
            }
        body = json.dumps(envelope, ensure_ascii=False).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(self.retry_after).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _request_id(body: bytes) -> str | int | None:
    """The JSON-RPC id of a small single request, else None (a refusal parses no large body)."""
    if len(body) > 65536:
        return None
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    ident = message.get("id") if isinstance(message, dict) else None
    return ident if isinstance(ident, (str, int)) and not isinstance(ident, bool) else None
