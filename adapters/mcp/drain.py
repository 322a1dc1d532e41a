"""stdin EOF without losing answers: requests already read are answered before the server's
read side closes (a piped session, `printf ... | manage.py mcp_stdio`, ends with EOF at once)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypeGuard

import anyio
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

# After EOF, how long answers may take before the session closes anyway (a handler waiting
# on the client, e.g. an elicitation, would never hear back).
DRAIN_SECONDS = 120.0


@asynccontextmanager
async def drained(
    read_stream: Any, write_stream: Any, *, seconds: float = DRAIN_SECONDS
) -> AsyncIterator[tuple[Any, Any]]:
    """Streams for `server.run` that hold the read side open until in-flight requests are
    answered (or `seconds` pass) after the client's stdin ends."""
    in_send, in_recv = anyio.create_memory_object_stream[Any](0)
    out_send, out_recv = anyio.create_memory_object_stream[SessionMessage](0)
    waiting: set[Any] = set()
    answered = anyio.Event()

    async def pump_in() -> None:
        nonlocal answered
        async with in_send:
            async for item in read_stream:
                if isinstance(item, SessionMessage) and _is_request(item.message):
                    waiting.add(item.message.id)
                await in_send.send(item)
            with anyio.move_on_after(seconds):
                while waiting:
                    await answered.wait()
                    answered = anyio.Event()

    writing = False

    async def pump_out() -> None:
        nonlocal writing
        async with out_recv:
            async for item in out_recv:
                writing = True
                try:
                    await write_stream.send(item)
                finally:
                    writing = False
                if _is_answer(item.message):
                    waiting.discard(item.message.id)
                    answered.set()

    async with anyio.create_task_group() as group:
        group.start_soon(pump_in)
        group.start_soon(pump_out)
        try:
            yield in_recv, out_send
        finally:
            await out_send.aclose()
            # The server may keep a clone of its write stream open: don't wait for it to end,
            # only for the answer being written to reach stdout.
            with anyio.move_on_after(5):
                while writing:
                    await anyio.sleep(0.01)
            group.cancel_scope.cancel()
    # As the server would have done with it: stdio's writer ends when its stream closes.
    await write_stream.aclose()


# By shape, not class: the SDK speaks each protocol era with its own generated models.
def _is_request(message: Any) -> TypeGuard[JSONRPCRequest]:
    return getattr(message, "method", None) is not None and getattr(message, "id", None) is not None


def _is_answer(message: Any) -> TypeGuard[JSONRPCResponse | JSONRPCError]:
    return getattr(message, "method", None) is None and (
        hasattr(message, "result") or hasattr(message, "error")
    )
