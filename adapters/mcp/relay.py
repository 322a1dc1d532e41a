"""A client's answer to a server request (a form dialog) carried to the worker that asked.

The client may POST its answer to any worker. Every request id a worker sends names it (the
high bits are the worker's tag, see manager.py), so the worker that receives an answer knows
whose it is and publishes it on that worker's Redis channel; the owner replays it into its own
copy of the session, exactly as if the client had posted it there. Redis pub/sub, no protocol
of our own: the channel has one subscriber, and an answer nobody hears (the owner died, Redis
is down) leaves the waiting call to its timeout and the chat confirmation.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable

import anyio
import redis.asyncio as redis

from adapters import strict_json

logger = logging.getLogger(__name__)

CHANNEL_PREFIX = "invoicebox-gateway:mcp-answer:"
# Request ids are <tag> * 2**ID_BITS + n: n counts one session copy's server requests.
ID_BITS = 20
# The headers the owner's transport checks, as the client sent them; never Authorization (the
# owner's copy is bound to the key already, and a secret has no business in Redis).
RELAYED_HEADERS = frozenset({b"host", b"origin", b"content-type", b"accept",
                             b"mcp-session-id", b"mcp-protocol-version"})

Deliver = Callable[[str, list[tuple[bytes, bytes]], bytes], Awaitable[None]]


def owner_of(body: bytes) -> int | None:
    """The tag of the worker that sent the request this body answers; None if it is no answer."""
    try:
        message = strict_json.parse_body(body)
    except strict_json.JsonRefused:  # not JSON, or nested past the parser's limit
        return None
    if (not isinstance(message, dict) or "method" in message
            or ("result" not in message and "error" not in message)):
        return None
    request_id = message.get("id")
    if isinstance(request_id, str) and request_id.isdigit():
        request_id = int(request_id)
    if not isinstance(request_id, int) or isinstance(request_id, bool) or request_id <= 0:
        return None
    return request_id >> ID_BITS


class AnswerRelay:
    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url)

    async def publish(self, owner: int, session_id: str, headers: list[tuple[bytes, bytes]],
                      body: bytes) -> bool:
        """True when the owner heard it (it is subscribed); False when no one did or Redis is
        unreachable."""
        payload = json.dumps({
            "session": session_id, "body": body.decode("utf-8", "replace"),
            "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in headers
                        if k.lower() in RELAYED_HEADERS]})
        try:
            return bool(await self.client.publish(f"{CHANNEL_PREFIX}{owner}", payload))
        except (redis.RedisError, OSError):
            logger.warning("MCP: the dialog answer could not be passed on (Redis unreachable)")
            return False

    async def listen(self, tag: int, deliver: Deliver) -> None:
        """Hand every answer published for this worker to `deliver`; reconnect on failure."""
        while True:
            try:
                async with self.client.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(f"{CHANNEL_PREFIX}{tag}")
                    async for message in pubsub.listen():
                        await self._deliver(message, deliver)
            except (redis.RedisError, OSError):
                logger.warning("MCP: the answer channel is down; retrying in 1 s")
                await anyio.sleep(1)

    @staticmethod
    async def _deliver(message: dict[str, object], deliver: Deliver) -> None:
        try:
            data = json.loads(message["data"])  # type: ignore[arg-type]
            headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in data["headers"]]
            await deliver(str(data["session"]), headers, str(data["body"]).encode())
        except Exception:  # one bad message must not end the subscription
            logger.exception("MCP: a relayed answer could not be delivered")

    async def aclose(self) -> None:
        await self.client.aclose()
