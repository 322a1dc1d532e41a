"""A client's answer to a server request (a form dialog) carried to the worker that asked.

The client may POST its answer to any worker. Every request id a worker sends names it (the
high bits are the worker's tag, see manager.py), so the worker that receives an answer knows
whose it is and publishes it on that worker's channel; the owner replays it into its own copy
of the session, exactly as if the client had posted it there. No protocol of our own: Redis
pub/sub when MCP_REDIS_URL is set, else PostgreSQL's LISTEN/NOTIFY on the gateway's own
database (issue 41: `make demo WORKERS=2 DATABASE_URL=postgres://...` has no Redis). The
channel has one subscriber, and an answer nobody hears (the owner died, the relay is down)
leaves the waiting call to its timeout and the chat confirmation. With neither (SQLite) there
is no relay: http.py then offers no dialog where several workers may serve.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import psycopg
import redis.asyncio as redis
from django.conf import settings
from django.db import connection, connections
from psycopg import sql

from adapters import strict_json
from adapters.sync_bridge import run_sync

logger = logging.getLogger(__name__)

CHANNEL_PREFIX = "invoicebox-gateway:mcp-answer:"
# Request ids are <tag> * 2**ID_BITS + n: n counts one session copy's server requests.
ID_BITS = 20
# The headers the owner's transport checks, as the client sent them; never Authorization (the
# owner's copy is bound to the key already, and a secret has no business in Redis).
RELAYED_HEADERS = frozenset(
    {b"host", b"origin", b"content-type", b"accept", b"mcp-session-id", b"mcp-protocol-version"}
)

# PostgreSQL's NOTIFY payload must be shorter than 8000 bytes; a dialog answer is ~100.
NOTIFY_LIMIT = 7999
# Options of Django's that are not libpq connection parameters.
NOT_LIBPQ = frozenset(
    {
        "pool",
        "assume_role",
        "isolation_level",
        "server_side_binding",
        "prepare_threshold",
        "cursor_factory",
        "context",
    }
)

Deliver = Callable[[str, list[tuple[bytes, bytes]], bytes], Awaitable[None]]


def _payload(session_id: str, headers: list[tuple[bytes, bytes]], body: bytes) -> str:
    return json.dumps(
        {
            "session": session_id,
            "body": body.decode("utf-8", "replace"),
            "headers": [
                [k.decode("latin-1"), v.decode("latin-1")]
                for k, v in headers
                if k.lower() in RELAYED_HEADERS
            ],
        }
    )


async def _deliver(data: str | bytes, deliver: Deliver) -> None:
    try:
        message = json.loads(data)
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in message["headers"]]
        await deliver(str(message["session"]), headers, str(message["body"]).encode())
    except Exception:  # one bad message must not end the subscription
        logger.exception("MCP: a relayed answer could not be delivered")


def owner_of(body: bytes) -> int | None:
    """The tag of the worker that sent the request this body answers; None if it is no answer."""
    try:
        message = strict_json.parse_body(body)
    except strict_json.JsonRefused:  # not JSON, or nested past the parser's limit
        return None
    if (
        not isinstance(message, dict)
        or "method" in message
        or ("result" not in message and "error" not in message)
    ):
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

    async def publish(
        self, owner: int, session_id: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> bool:
        """True when the owner heard it (it is subscribed); False when no one did or Redis is
        unreachable."""
        payload = _payload(session_id, headers, body)
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
                        await _deliver(message["data"], deliver)
            except (redis.RedisError, OSError):
                logger.warning("MCP: the answer channel is down; retrying in 1 s")
                await anyio.sleep(1)

    async def aclose(self) -> None:
        await self.client.aclose()


def _notify(channel: str, payload: str) -> None:
    """NOTIFY on Django's connection of this thread (autocommit: sent at once)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [channel, payload])


class PostgresRelay:
    """The same relay over LISTEN/NOTIFY on the gateway's database: one listening connection
    per process, one NOTIFY per answer that reached the wrong worker."""

    def __init__(self, alias: str = "default") -> None:
        self.alias = alias

    @staticmethod
    def channel(owner: int) -> str:
        return f"invoicebox_gateway_mcp_answer_{owner}"

    def _params(self) -> dict[str, Any]:
        """libpq parameters from Django's settings (read late: a test database renames)."""
        db = connections[self.alias].settings_dict
        params: dict[str, Any] = {
            k: v for k, v in db.get("OPTIONS", {}).items() if k not in NOT_LIBPQ
        }
        for name, key in (
            ("dbname", "NAME"),
            ("user", "USER"),
            ("password", "PASSWORD"),
            ("host", "HOST"),
            ("port", "PORT"),
        ):
            if db.get(key):
                params[name] = db[key]
        return params

    async def publish(
        self, owner: int, session_id: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> bool:
        """True when the NOTIFY was sent (PostgreSQL does not say who listens)."""
        payload = _payload(session_id, headers, body)
        if len(payload.encode()) > NOTIFY_LIMIT:
            logger.warning("MCP: a dialog answer too large to pass on (%d bytes)", len(payload))
            return False
        try:
            await run_sync(_notify, self.channel(owner), payload)
        except Exception:  # the database's errors: the call falls back after its timeout
            logger.warning("MCP: the dialog answer could not be passed on (PostgreSQL)")
            return False
        return True

    async def listen(self, tag: int, deliver: Deliver) -> None:
        """Hand every answer notified for this worker to `deliver`; reconnect on failure."""
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    **self._params(), autocommit=True
                ) as conn:
                    await conn.execute(
                        sql.SQL("LISTEN {}").format(sql.Identifier(self.channel(tag)))
                    )
                    async for notify in conn.notifies():
                        await _deliver(notify.payload, deliver)
            except (psycopg.Error, OSError):
                logger.warning("MCP: the answer channel is down; retrying in 1 s")
                await anyio.sleep(1)

    async def aclose(self) -> None:
        return None


Relay = AnswerRelay | PostgresRelay


def configured() -> Relay | None:
    """Redis when MCP_REDIS_URL names it, else the database when it is PostgreSQL, else none."""
    if settings.MCP_REDIS_URL:
        return AnswerRelay(settings.MCP_REDIS_URL)
    if connections["default"].vendor == "postgresql":
        return PostgresRelay()
    return None
