"""Django (WSGI) on a fixed thread pool behind the event loop, one hop there and one back.

Written by hand over a2wsgi (config/asgi.py says why Django is served as WSGI on a pool).
a2wsgi's responder makes the worker thread wait for the event loop at every step of a request:
reading the body, start_response, each body chunk and the end, four round trips between the
threads for a JSON POST besides the hop there and back. Here the request body, whatever its
size or framing, is read whole on the loop before the hop (a thread never waits for a client:
adapters/bounded_body.py bounds the body's size and the time it may take), and a response that
is not streaming is collected in the thread and sent by the loop after it. A chunked body
reaches Django with its length in CONTENT_LENGTH (a2wsgi gave Django none, so it read the body
as empty). A streaming response (a file, a download) is sent chunk by chunk as a2wsgi does.
The environ, the status, the headers and the bytes on the wire are a2wsgi's, and the response
is closed (Django's request_finished: the thread's database connection back to the pool) in
the thread that ran the view, before anything is sent.
"""

from __future__ import annotations

import asyncio
import contextvars
import io
import itertools
import logging
from collections.abc import Iterable
from typing import Any

from a2wsgi import WSGIMiddleware
from a2wsgi.asgi_typing import HTTPScope, Receive, Scope, Send
from a2wsgi.wsgi import WSGIResponder, build_environ
from a2wsgi.wsgi_typing import Environ

logger = logging.getLogger(__name__)

Buffered = tuple[int, list[tuple[bytes, bytes]], bytes]


class PooledWSGI(WSGIMiddleware):
    """a2wsgi's WSGIMiddleware (same pool, same `executor`) with OneHopResponder for HTTP."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await super().__call__(scope, receive, send)
        responder = OneHopResponder(self.app, self.executor, self.send_queue_size)
        await responder.respond(scope, receive, send)


class OneHopResponder(WSGIResponder):
    sender_task: asyncio.Task[None] | None = None

    async def respond(self, scope: HTTPScope, receive: Receive, send: Send) -> None:
        body = bytearray()
        while True:  # uvicorn has de-chunked or framed the body by its Content-Length
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before its body was whole: nobody to answer
            body.extend(message.get("body", b""))
            if not message.get("more_body", False):
                break
        environ = build_environ(scope, io.BytesIO(bytes(body)))  # type: ignore[arg-type]
        # The body is whole: its length is known, whatever framing it came in.
        environ["CONTENT_LENGTH"] = str(len(body))
        # a2wsgi's Environ TypedDict names no HTTP_* header, which a WSGI environ carries.
        environ.pop("HTTP_TRANSFER_ENCODING", None)  # type: ignore[typeddict-item]
        context = contextvars.copy_context()
        try:
            buffered = await self.loop.run_in_executor(
                self.executor, context.run, self.run_app, environ, send
            )
            if buffered is None:  # streamed through a2wsgi's queue and sender task
                await self.send_queue.put(None)
                assert self.sender_task is not None
                await self.sender_task
            else:
                status, headers, content = buffered
                await send({"type": "http.response.start", "status": status, "headers": headers})
                await send({"type": "http.response.body", "body": content})
            if self.exc_info is not None:
                raise self.exc_info[0].with_traceback(self.exc_info[1], self.exc_info[2])
        finally:
            if self.sender_task is not None and not self.sender_task.done():
                self.sender_task.cancel()

    def run_app(self, environ: Environ, send: Send) -> Buffered | None:
        """In the pool's thread: the app, then its whole answer unless it streams."""
        started: list[Any] = []
        written: list[bytes] = []

        def start_response(
            status: str, response_headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            self.exc_info = exc_info
            if not started:
                started.extend((status, response_headers))
            return written.append

        iterable: Iterable[bytes] = self.app(environ, start_response)
        close = getattr(iterable, "close", lambda: None)
        if getattr(iterable, "streaming", True) is not False or written:
            try:
                self.stream(send, started, written, iterable)
            finally:
                close()
            return None
        try:
            content = b"".join(iterable)
        except BaseException:
            close()
            raise
        status, response_headers = started
        answer = (
            int(status.split(" ", 1)[0]),
            [
                (name.strip().encode("latin1").lower(), value.strip().encode("latin1"))
                for name, value in response_headers
            ],
            content,
        )
        try:
            close()
        except Exception:
            # The answer is made (and a tool call's entry journaled): a failure in what runs
            # after it (request_finished, e.g. returning a connection the database cut) must
            # not turn it into a 500. a2wsgi had sent the answer before closing, too.
            logger.exception("closing a finished response failed; its answer is sent")
        return answer

    def stream(
        self, send: Send, started: list[Any], written: list[bytes], iterable: Iterable[bytes]
    ) -> None:
        """a2wsgi's way: each message handed to a sender task on the loop, in order."""
        asyncio.run_coroutine_threadsafe(self._start_sender(send), self.loop).result()
        if started:
            status, response_headers = started
            WSGIResponder.start_response(self, status, response_headers, self.exc_info)
        for chunk in itertools.chain(written, iterable):
            self.send({"type": "http.response.body", "body": chunk, "more_body": True})
        self.send({"type": "http.response.body", "body": b""})

    async def _start_sender(self, send: Send) -> None:
        self.sender_task = self.loop.create_task(self.sender(send))
