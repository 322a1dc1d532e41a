"""MCP sessions in the database: any worker of any host answers a session another one opened.

A session is its initialize facts (protocol version, the client's params, the key that opened
it) and when it was last used. A worker that has no copy of a session in memory rebuilds one
from them (adapters/mcp/manager.py). Hygiene lives here too: idle expiry (quick for a session
that never made a call), a session bound to its key, a revoked key ending its sessions.

Sessions are each tenant's own resource (issue 41): a key, its contour and the deployment have
caps. When one is reached, only the opening key's own least recently used session may make
room, and only if it has not been used within MCP_SESSION_PROTECT_SECONDS; otherwise the new
session is refused (SessionRefused, HTTP 429). On PostgreSQL the openings take turns (one
advisory lock for the deployment, held to the commit), so the counts an opening reads are
still true when it inserts: no cap is passed by openings racing on other workers or hosts.
Nothing here sorts or deletes the whole table:
counts are bounded and served by indexes, and expired rows are deleted by the beat in batches
(adapters/mcp/tasks.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, FilteredRelation, Q, QuerySet
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from adapters.mcp.models import McpSession
from tools.hashing import sha256_hex
from tools.models import ApiKey
from tools.models.prepared import PreparedQuery

REFUSED_CODE = "too_many_sessions"
# pg_advisory_xact_lock(namespace, 0): the openings' turn ("MCPS"; nothing else locks it).
OPENING_LOCK = 0x4D435053


@dataclass(frozen=True)
class SessionFacts:
    session_id: str
    key_id: int
    protocol_version: str
    client_params: dict[str, Any]
    used: bool = True


def declares_elicitation(client_params: dict[str, Any] | None) -> bool:
    """Whether the client said it can hold a dialog: its session then gets SSE, not JSON."""
    capabilities = (client_params or {}).get("capabilities")
    return isinstance(capabilities, dict) and capabilities.get("elicitation") is not None


class SessionRefused(Exception):
    """A new session over a cap that no session of the same key could make room under."""

    def __init__(self, scope: str, cap: int) -> None:
        self.scope, self.cap = scope, cap
        where = {
            "key": "этого ключа API",
            "contour": "этого магазина (контура)",
            "deployment": "шлюза в целом",
        }[scope]
        super().__init__(
            f"слишком много открытых сессий MCP у {where} (предел {cap}); закройте неиспользуемые "
            "подключения ассистента или повторите позже: сессия без запросов закрывается сама"
        )


def _idle_cutoff(now: datetime) -> datetime:
    return now - timedelta(seconds=settings.MCP_SESSION_IDLE_SECONDS)


def _unused_cutoff(now: datetime) -> datetime:
    return now - timedelta(seconds=settings.MCP_SESSION_UNUSED_SECONDS)


def live_q(now: datetime) -> Q:
    """Seen within the idle timeout, and either used or opened (seen) only just now."""
    return Q(last_seen__gt=_idle_cutoff(now)) & (
        Q(used=True) | Q(last_seen__gt=_unused_cutoff(now))
    )


def _touch_after() -> timedelta:
    """last_seen is written at most this often per session: one UPDATE a minute, not one per
    request; expiry is that much coarser (a 30-minute expiry may take 30 min + 1)."""
    return timedelta(
        seconds=min(
            60.0, settings.MCP_SESSION_IDLE_SECONDS / 10, settings.MCP_SESSION_UNUSED_SECONDS / 2
        )
    )


def _bounded_count(queryset: QuerySet[McpSession], limit: int) -> int:
    """How many rows, counted no further than `limit` (a LIMIT in a subquery)."""
    return queryset.values("pk")[:limit].count()


def _caps(key_id: int, contour_id: int, now: datetime) -> list[tuple[str, int, int]]:
    """(scope, cap, sessions open now) from the narrowest scope to the widest."""
    live = McpSession.objects.filter(live_q(now))
    scoped = (
        ("key", settings.MCP_MAX_SESSIONS_PER_KEY, live.filter(key_id=key_id)),
        ("contour", settings.MCP_MAX_SESSIONS_PER_CONTOUR, live.filter(key__contour_id=contour_id)),
        ("deployment", settings.MCP_MAX_SESSIONS, live),
    )
    # Counted a little past the cap: a cap lowered under what is open needs that many gone.
    return [(scope, cap, _bounded_count(rows, cap + 8)) for scope, cap, rows in scoped]


def _take_turn() -> None:
    """Wait for the openings in flight to commit (PostgreSQL, what several hosts share; SQLite
    is the one-host demo's database and takes no such lock).

    One lock for the deployment, not one per contour: its ceiling counts every contour. An
    opening holds it for three bounded counts, an INSERT and its commit, so openings across
    the deployment go one at a time; opening is once per session, not per request."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, 0)", [OPENING_LOCK])


def record(
    session_id: str, key_id: int, protocol_version: str, client_params: dict[str, Any]
) -> list[str]:
    """Store a new session of the key, within its caps (SessionRefused when it cannot be).

    Returns the ids of the key's own sessions closed to make room, so the caller can drop its
    copies of them at once (other workers find out on the session's next request)."""
    with transaction.atomic():
        _take_turn()
        now = timezone.now()  # after the wait: the counts below are as of now
        # The key's row locked: it is not deleted under the session about to name it.
        found = list(
            ApiKey.objects.select_for_update()
            .filter(pk=key_id)
            .values_list("contour_id", flat=True)
        )
        if not found:
            raise SessionRefused("key", 0)
        contour_id = found[0]
        counts = _caps(key_id, contour_id, now)
        need = max(open_now - cap + 1 for _, cap, open_now in counts)
        closed: list[str] = []
        if need > 0:
            protected = now - timedelta(seconds=settings.MCP_SESSION_PROTECT_SECONDS)
            closed = list(
                McpSession.objects.filter(live_q(now), key_id=key_id, last_seen__lte=protected)
                .order_by("last_seen")
                .values_list("session_id", flat=True)[:need]
            )
            if len(closed) < need:
                scope, cap, _ = next(c for c in counts if c[2] >= c[1])
                raise SessionRefused(scope, cap)
            McpSession.objects.filter(session_id__in=closed).delete()
        McpSession.objects.create(
            session_id=session_id,
            key_id=key_id,
            protocol_version=protocol_version,
            client_params=client_params,
            last_seen=now,
        )
    return closed


# Compiled once per thread (tools/models/prepared.py); the row is read on every request.
_BY_ID_AND_KEY: PreparedQuery[McpSession] = PreparedQuery(
    lambda session_id, key_id: McpSession.objects.filter(
        session_id=session_id, key_id=key_id
    ).values_list("protocol_version", "client_params", "last_seen", "used"),
    ["<session_id>", -731_000_031],
)


def resume(session_id: str, key_id: int, use: bool = False) -> SessionFacts | None:
    """The session if it is live and was opened with this key; its last use moved to now.
    `use`: the request is a call (not the initialized notification nor a stream), which
    makes a session that never made one a used one.

    Another key's session, an expired, closed or unknown one are all None: the client is told
    "Session not found" alike, and learns nothing about sessions it does not own."""
    # One row by primary key, read on every request.
    return _judged(session_id, key_id, _BY_ID_AND_KEY.row(session_id, key_id), use)


# A contour key and the session its request names, read in one statement (issue 44): the key
# as ApiKey.read_by_hash reads it, the session's row joined only when this key opened it.
_KEY_AND_SESSION: PreparedQuery[Any] = PreparedQuery(
    lambda key_hash, session_id: (
        ApiKey.read_by_hash(key_hash)
        .annotate(
            named_session=FilteredRelation(
                "mcp_sessions", condition=Q(mcp_sessions__session_id=session_id)
            )
        )
        .annotate(
            session_protocol=F("named_session__protocol_version"),
            session_params=F("named_session__client_params"),
            session_seen=F("named_session__last_seen"),
            session_used=F("named_session__used"),
        )
    ),
    ["<key_hash>", "<session_id>"],
)


def key_and_session(
    raw: str, session_id: str, use: bool = False
) -> tuple[ApiKey | None, SessionFacts | None]:
    """The contour key `raw` (ApiKey.accepted's rule) and its live session `session_id`
    (resume's rule), both read by one statement where ApiKey.authenticate and resume take
    two."""
    found: Any = _KEY_AND_SESSION.first(sha256_hex(raw), session_id)
    key = ApiKey.accepted(found)
    if key is None:
        return None, None
    row = (
        None
        if found.session_seen is None
        else (found.session_protocol, found.session_params, found.session_seen, found.session_used)
    )
    return key, _judged(session_id, key.pk, row, use)


def _judged(
    session_id: str, key_id: int, row: tuple[Any, ...] | None, use: bool
) -> SessionFacts | None:
    """resume's rule on the session's row (protocol, client params, last seen, used)."""
    now = timezone.now()
    # Live means seen after the idle cutoff.
    if row is None or row[2] <= _idle_cutoff(now):
        return None
    protocol_version, client_params, last_seen, used = row
    if not used and last_seen <= _unused_cutoff(now):
        return None
    if use and not used:
        McpSession.objects.filter(session_id=session_id).update(last_seen=now, used=True)
        used = True
    elif now - last_seen >= _touch_after():
        McpSession.objects.filter(session_id=session_id).update(last_seen=now)
    return SessionFacts(session_id, key_id, protocol_version, client_params, used)


def end(session_id: str) -> None:
    McpSession.objects.filter(session_id=session_id).delete()


def end_if_key_inactive(session_id: str) -> bool:
    """A request with a revoked or expired key ends the session that key opened."""
    deleted, _ = (
        McpSession.objects.filter(session_id=session_id)
        .exclude(key__in=ApiKey.objects.active())
        .delete()
    )
    return bool(deleted)


def expire(batch: int) -> int:
    """Delete expired sessions, `batch` rows per statement (the beat's task); how many."""
    now = timezone.now()
    total = 0
    for expired in (
        McpSession.objects.filter(last_seen__lte=_idle_cutoff(now)),
        McpSession.objects.filter(used=False, last_seen__lte=_unused_cutoff(now)),
    ):
        while True:
            ids = list(expired.values_list("session_id", flat=True)[:batch])
            if not ids:
                break
            total += McpSession.objects.filter(session_id__in=ids).delete()[0]
            if len(ids) < batch:
                break
    return total


def open_count() -> int:
    return McpSession.objects.filter(live_q(timezone.now())).count()


def open_by_contour(now: datetime) -> dict[str, int]:
    """Open sessions per contour slug (for the metrics scrape)."""
    rows = (
        McpSession.objects.filter(live_q(now))
        .values("key__contour__slug")
        .annotate(n=Count("pk"))
        .values_list("key__contour__slug", "n")
    )
    return dict(rows)


def sessions_gauge(now: datetime) -> Iterator[GaugeMetricFamily]:
    """The metrics scrape's gauge of open sessions per contour (tools.ops.scrape.register_state)."""
    gauge = GaugeMetricFamily(
        "gateway_mcp_sessions_open",
        "Open (live) MCP sessions per contour, against MCP_MAX_SESSIONS_PER_CONTOUR",
        labels=["contour"],
    )
    for slug, count in open_by_contour(now).items():
        gauge.add_metric([slug], count)
    yield gauge
