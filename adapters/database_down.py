"""The ASGI doors (MCP Streamable HTTP, OAuth) when the gateway's database fails under them.

Both read the database before any tool runs: the MCP door looks the key (or the OAuth grant)
up, OAuth's endpoints read clients, codes and tokens. A DatabaseError there used to reach
Starlette's error page, a bare `500 Internal Server Error`. It gets what REST answers in the
same case (adapters/rest/errors.py): 503 with the envelope, `database_unavailable`, journaled
through the spool (audit/spool.py) and a Retry-After. Once the answer has begun, nothing can
be said any more, and the error goes on as before.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adapters.sync_bridge import run_sync
from tools.pipeline import anonymous, gateway
from tools.pipeline.database_faults import RETRY_AFTER_SECONDS, database_error

logger = logging.getLogger(__name__)


class DatabaseDown:
    """Wraps an ASGI app: a DatabaseError raised before the response starts becomes the
    envelope's 503 `database_unavailable`."""

    def __init__(self, app: ASGIApp, channel: str) -> None:
        self.app, self.channel = app, channel

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except DatabaseError:
            if started:
                raise
            logger.warning("database unavailable on %s", scope.get("path", ""), exc_info=True)
            body = await run_sync(self._refusal, scope)
            response = JSONResponse(
                body, status_code=503, headers={"Retry-After": str(RETRY_AFTER_SECONDS)}
            )
            await response(scope, receive, send)

    def _refusal(self, scope: Scope) -> dict[str, object]:
        error = database_error(claimed=False)
        outcome = gateway.reject(
            None,
            error.code,
            error.message,
            channel=self.channel,
            actor=_key_actor(scope),
            tool=str(scope.get("path", ""))[:64],
            hint=error.hint,
        )
        outcome.data = error.data
        return outcome.as_dict()


def _key_actor(scope: Scope) -> str:
    """Nothing could be verified: anonymous, with at most a keyed hash of the credential
    (tools/pipeline/anonymous.py). A key's visible prefix would name a real key anyone can type."""
    return anonymous.actor_of_unverified(Headers(scope=scope).get("authorization", ""))
