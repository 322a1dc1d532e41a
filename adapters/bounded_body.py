"""Every request's body read whole on the event loop, bounded in size and in time, before any
route sees it (issue 37).

Django runs on a fixed pool of threads (config/asgi.py). Had a thread waited for a body while
the client trickled it, `GATEWAY_SYNC_THREADS` slow anonymous uploads would have stalled REST,
MCP, the admin and `/health` of the whole process. Here a slow body costs a coroutine and the
bytes received so far, nothing else: a declared `Content-Length` over `GATEWAY_MAX_BODY_BYTES`
is refused with 413 before a byte is read, a body that grows past it while it streams gets 413,
and one not whole within `GATEWAY_BODY_READ_SECONDS` gets 408. The routes then get the body as
one message (a chunked body too: adapters/wsgi_pool.py hands Django its length).

The refusals are not journaled: nothing is known of the caller yet (no key has been read), and
an anonymous flood must not become a flood of journal rows. They are logged at INFO.
"""

from __future__ import annotations

import asyncio
import json
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tools.errors import CODE_STATUS, Outcome

logger = logging.getLogger(__name__)


class BodyRefused(Exception):
    def __init__(self, code: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint
        self.status = CODE_STATUS[code][1]

    def envelope(self) -> bytes:
        outcome = Outcome(
            status=CODE_STATUS[self.code][0],
            code=self.code,
            message=self.message,
            hint=self.hint,
            http_status=self.status,
        )
        return json.dumps(outcome.as_dict(), ensure_ascii=False).encode()


class BoundedBody:
    def __init__(self, app: ASGIApp, max_bytes: int, read_seconds: float) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.read_seconds = read_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            self._check_declared(scope)
            async with asyncio.timeout(self.read_seconds):
                message = await self._read(receive)
        except TimeoutError:
            await self._refuse(scope, send, self._too_slow())
            return
        except BodyRefused as refusal:
            await self._refuse(scope, send, refusal)
            return
        if message is None:
            return  # the client left before its body was whole: nobody to answer
        await self.app(scope, _replaying(message, receive), send)

    def _check_declared(self, scope: Scope) -> None:
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                raise self._too_large()

    async def _read(self, receive: Receive) -> Message | None:
        """The whole body as one `http.request` message; None if the client disconnected."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                raise self._too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

    def _too_large(self) -> BodyRefused:
        return BodyRefused(
            "request_too_large",
            f"тело запроса больше {self.max_bytes} байт",
            "запросы к шлюзу — несколько килобайт JSON; уменьшите тело запроса",
        )

    def _too_slow(self) -> BodyRefused:
        return BodyRefused(
            "request_timeout",
            f"тело запроса не пришло целиком за {self.read_seconds:g} с",
            "отправьте запрос заново одним куском",
        )

    async def _refuse(self, scope: Scope, send: Send, refusal: BodyRefused) -> None:
        client = scope.get("client") or ("?", 0)
        logger.info(
            "request body refused (%s) from %s to %s",
            refusal.code,
            client[0],
            str(scope.get("path", ""))[:64],
        )
        body = refusal.envelope()
        # The rest of the body is never read: the connection is closed after the answer.
        await send(
            {
                "type": "http.response.start",
                "status": refusal.status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _replaying(first: Message, receive: Receive) -> Receive:
    """The body already read, then the client's own events (a disconnect, for a stream)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return first
        return await receive()

    return replay
