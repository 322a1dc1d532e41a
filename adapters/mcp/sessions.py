"""MCP sessions in the database: any worker of any host answers a session another one opened.

A session is its initialize facts (protocol version, the client's params, the key that opened
it) and when it was last used. A worker that has no copy of a session in memory rebuilds one
from them (adapters/mcp/manager.py). Hygiene lives here too: idle expiry, the cap with the
oldest idle session closed first, a session bound to its key, a revoked key ending its sessions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from adapters.mcp.models import McpSession
from tools.models import ApiKey
from tools.models.prepared import PreparedQuery


@dataclass(frozen=True)
class SessionFacts:
    session_id: str
    key_id: int
    protocol_version: str
    client_params: dict[str, Any]


def _idle_cutoff(now: datetime) -> datetime:
    return now - timedelta(seconds=settings.MCP_SESSION_IDLE_SECONDS)


def _touch_after() -> timedelta:
    """last_seen is written at most this often per session: one UPDATE a minute, not one per
    request; expiry is that much coarser (a 30-minute expiry may take 30 min + 1)."""
    return timedelta(seconds=min(60.0, settings.MCP_SESSION_IDLE_SECONDS / 10))


def record(session_id: str, key_id: int, protocol_version: str,
           client_params: dict[str, Any]) -> list[str]:
    """Store a new session; close the expired ones and, past the cap, the oldest idle ones.

    Returns the ids closed, so the caller can drop its own copies of them at once (other
    workers find out on the session's next request)."""
    now = timezone.now()
    with transaction.atomic():
        McpSession.objects.create(session_id=session_id, key_id=key_id,
                                  protocol_version=protocol_version,
                                  client_params=client_params, last_seen=now)
        closed = set(McpSession.objects.filter(last_seen__lte=_idle_cutoff(now))
                     .values_list("session_id", flat=True))
        live = (McpSession.objects.exclude(session_id__in=closed)
                .order_by("-last_seen", "-opened_at").values_list("session_id", flat=True))
        closed.update(live[settings.MCP_MAX_SESSIONS:])
        closed.discard(session_id)  # the one just opened is the newest: never its own victim
        McpSession.objects.filter(session_id__in=closed).delete()
    return sorted(closed)


# Compiled once per thread (tools/models/prepared.py); the row is read on every request.
_BY_ID_AND_KEY: PreparedQuery[McpSession] = PreparedQuery(
    lambda session_id, key_id: McpSession.objects.filter(session_id=session_id, key_id=key_id)
    .values_list("protocol_version", "client_params", "last_seen"),
    ["<session_id>", -731_000_031])


def resume(session_id: str, key_id: int) -> SessionFacts | None:
    """The session if it is live and was opened with this key; its last use moved to now.

    Another key's session, an expired, closed or unknown one are all None: the client is told
    "Session not found" alike, and learns nothing about sessions it does not own."""
    now = timezone.now()
    # One row by primary key, read on every request; live means seen after the idle cutoff.
    row = _BY_ID_AND_KEY.row(session_id, key_id)
    if row is None or row[2] <= _idle_cutoff(now):
        return None
    protocol_version, client_params, last_seen = row
    if now - last_seen >= _touch_after():
        McpSession.objects.filter(session_id=session_id).update(last_seen=now)
    return SessionFacts(session_id, key_id, protocol_version, client_params)


def end(session_id: str) -> None:
    McpSession.objects.filter(session_id=session_id).delete()


def end_if_key_inactive(session_id: str) -> bool:
    """A request with a revoked or expired key ends the session that key opened."""
    deleted, _ = (McpSession.objects.filter(session_id=session_id)
                  .exclude(key__in=ApiKey.objects.active()).delete())
    return bool(deleted)


def open_count() -> int:
    return McpSession.objects.filter(last_seen__gt=_idle_cutoff(timezone.now())).count()
