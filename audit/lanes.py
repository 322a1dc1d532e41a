"""Which chain an entry joins, and the short append on PostgreSQL.

On PostgreSQL a contour has up to GATEWAY_JOURNAL_LANES parallel chains ("lanes": `shop`,
`shop~1`, ...); a writer takes a lane no other transaction holds, so calls of one contour do
not queue. The hash is computed here, from the head the entry follows: the key never reaches
the database.

Once a contour's lanes exist, an append outside a caller's transaction is one round trip when
this process knows where a lane's head stands (it left it there: `_FreeHeads`): one statement
locks that lane only if it is free and its head is still exactly that one, inserts the entry
after it and moves the head (`_append_after_sql`). When the head moved (another process wrote
the lane) or is locked, nothing is written and the append takes the two round trips it takes
without a guess: `BEGIN; SELECT … FOR UPDATE SKIP LOCKED` (one message), then `WITH … INSERT
… UPDATE` head and `COMMIT` (another). Inside a caller's transaction it takes those two
without BEGIN and COMMIT, and leaves no guess (the caller may still roll back).
The messages are sent bound on the client (several statements in one message); with
DATABASE_PREPARED_STATEMENTS their marked statements are sent as EXECUTE of statements
prepared on the connection. Opening a lane, and SQLite (one writer at a time anyway), go
through the ORM.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import CharField, Field, IntegerField, Q, TextField
from django.db.models.sql import InsertQuery

from audit.models import ChainHead, JournalEntry, SignedCheckpoint
from audit.places import LANE_MARK

# (entry, chain, last_seq, last_hash): puts the entry after the head, hashed and signed.
Place = Callable[[JournalEntry, str, int, str], None]

_HEADS = ChainHead._meta.db_table
_ENTRIES = JournalEntry._meta.db_table
# Only table names are formatted into the SQL here and below; every value is a parameter.
_LANE_SQL = (
    f'SELECT chain, last_seq, last_hash FROM "{_HEADS}" '  # noqa: S608
    "WHERE (chain = %s OR starts_with(chain, %s)) AND chain <> ALL(%s) "
    # sha256, not md5: a PostgreSQL built for FIPS refuses md5().
    "ORDER BY sha256(convert_to(chain || %s, 'UTF8')) "
    "LIMIT 1 FOR UPDATE SKIP LOCKED /*prepared*/"
)
# " /*prepared*/" ends a statement every call sends: with DATABASE_PREPARED_STATEMENTS it is
# prepared once per connection (tools/models/prepared.py, which audit/ does not import).


def usable(db: Any = connection) -> bool:
    lanes: int = settings.GATEWAY_JOURNAL_LANES
    return lanes > 1 and db.features.has_select_for_update_skip_locked and db.vendor == "postgresql"


class _FreeHeads:
    """Where this process left the heads of lanes it appended to and no thread of it is using
    now, per contour: its next append of the contour goes there in one round trip. Only a
    guess, which the statement checks; bounded (`contours` contours, the least recently used
    forgotten first; a contour has at most GATEWAY_JOURNAL_LANES lanes).

    A process looking for a lane without a guess avoids the lanes its own threads took and
    have not given back, and for `contested_seconds` the lanes where its guess was wrong
    (another process writes there): several processes on one contour settle on lanes of
    their own instead of taking turns on the same ones."""

    def __init__(self, contours: int, contested_seconds: float = 60.0) -> None:
        self._lock = threading.Lock()
        self._heads: OrderedDict[str, dict[str, tuple[int, str]]] = OrderedDict()
        self._taken: dict[str, set[str]] = {}
        self._contested: dict[str, dict[str, float]] = {}
        self._contours = contours
        self._contested_seconds = contested_seconds

    def take(self, contour: str) -> tuple[str, int, str] | None:
        """A lane of the contour with its head, no longer offered to another thread."""
        with self._lock:
            heads = self._heads.get(contour)
            if not heads:
                return None
            chain, (last_seq, last_hash) = heads.popitem()  # the lane given back last
            self._taken.setdefault(contour, set()).add(chain)
            return chain, last_seq, last_hash

    def avoided(self, contour: str) -> list[str]:
        """The contour's lanes to pass over when looking for one: taken by other threads of
        this process, or contested by another process lately."""
        now = time.monotonic()
        with self._lock:
            contested = self._contested.get(contour, {})
            for chain in [c for c, until in contested.items() if until <= now]:
                del contested[chain]
            if not contested:
                self._contested.pop(contour, None)
            return sorted(self._taken.get(contour, set()) | contested.keys())

    def drop(self, contour: str, chain: str, *, contested: bool = False) -> None:
        """A taken lane not given back: its statement failed, or (`contested`) its guess was
        wrong, another process having written the lane since."""
        with self._lock:
            self._untake(contour, chain)
            if contested and contour in self._heads:  # bounded as the heads are
                until = time.monotonic() + self._contested_seconds
                self._contested.setdefault(contour, {})[chain] = until

    def give(self, contour: str, chain: str, last_seq: int, last_hash: str) -> None:
        """The lane's head as a committed append of this process left it."""
        with self._lock:
            self._untake(contour, chain)
            heads = self._heads.setdefault(contour, {})
            self._heads.move_to_end(contour)
            known = heads.get(chain)
            if known is None or known[0] < last_seq:
                heads[chain] = (last_seq, last_hash)
            while len(self._heads) > self._contours:
                forgotten, _ = self._heads.popitem(last=False)
                self._contested.pop(forgotten, None)

    def _untake(self, contour: str, chain: str) -> None:
        taken = self._taken.get(contour)
        if taken is not None:
            taken.discard(chain)
            if not taken:
                del self._taken[contour]

    def forget(self) -> None:
        with self._lock:
            self._heads.clear()
            self._taken.clear()
            self._contested.clear()


FREE_HEADS_CONTOURS = 4096
FREE_HEADS = _FreeHeads(contours=FREE_HEADS_CONTOURS)


def append(entry: JournalEntry, place: Place, *, savepoint: bool) -> bool:
    """Append on a free lane of the entry's contour; False when there is none yet (open one
    through the ORM: free_lane())."""
    if connection.in_atomic_block:  # the caller's transaction: no BEGIN, no COMMIT of ours
        with transaction.atomic(savepoint=savepoint), connection.cursor() as cursor:
            cursor.execute(_LANE_SQL, _lane_params(entry.contour))
            row = cursor.fetchone()
            if row is not None:
                _insert_and_advance(cursor, entry, place, *row)
        return row is not None
    known = FREE_HEADS.take(entry.contour)
    if known is not None:
        try:
            done = _append_after(entry, place, *known)
        except BaseException:
            FREE_HEADS.drop(entry.contour, known[0])
            raise
        if done:
            FREE_HEADS.give(entry.contour, entry.chain, entry.seq, entry.hash)
            return True
        FREE_HEADS.drop(entry.contour, known[0], contested=True)
    lane_params = _lane_params(entry.contour)
    with connection.cursor() as cursor:
        try:
            cursor.execute("BEGIN; " + _LANE_SQL, lane_params)  # client-side binding
            cursor.nextset()
            row = cursor.fetchone()
            if row is not None:  # the entry, its head and COMMIT in one round trip
                chain, last_seq, last_hash = row
                _insert_and_advance(
                    cursor, entry, place, chain, last_seq, last_hash, then="; COMMIT"
                )
            else:
                cursor.execute("ROLLBACK")
        except BaseException:
            _rollback(cursor)
            raise
    if row is not None:
        FREE_HEADS.give(entry.contour, entry.chain, entry.seq, entry.hash)
    return row is not None


def _lane_params(contour: str) -> list[Any]:
    """The contour's lanes but those this process avoids (`_FreeHeads.avoided`), in an order of
    this process's own: several processes looking for a lane do not all pick the same one,
    and a process keeps to the lanes it found free before."""
    return [contour, f"{contour}{LANE_MARK}", FREE_HEADS.avoided(contour), str(os.getpid())]


def _after_fork() -> None:
    """A forked child (a prefork worker) is a process of its own: none of its parent's heads
    (another process writes after them now)."""
    global FREE_HEADS
    FREE_HEADS = _FreeHeads(contours=FREE_HEADS_CONTOURS)  # the parent's lock may be held


os.register_at_fork(after_in_child=_after_fork)


def _append_after(
    entry: JournalEntry, place: Place, chain: str, last_seq: int, last_hash: str
) -> bool:
    """The entry after a head this process left, in one statement (its own transaction):
    False, with nothing written, when that head moved since or another transaction holds it."""
    place(entry, chain, last_seq, last_hash)
    values = _values(entry)
    if values is None:
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            _append_after_sql(),
            [chain, last_seq, last_hash, *values, entry.seq, entry.hash, chain],
        )
        row = cursor.fetchone()
    if row is None:
        return False
    entry.id = row[0]
    entry._state.adding, entry._state.db = False, connection.alias
    return True


@functools.cache
def _append_after_sql() -> str:
    """The lane locked only if free and still at the known head; the entry inserted after it
    (from the lane's row: none when there is none); the head moved to the entry. PostgreSQL's
    (the only vendor with lanes), built once."""
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in _FIELDS)
    # Each value cast to its column's type: a quoted value in a SELECT list is text, not the
    # column's type as in VALUES. Text columns take text (an over-long one is refused on
    # assignment, never cut: values are fitted already, audit/journal.py).
    casts = ", ".join(
        "%s::" + ("text" if kind is str else field.db_type(connection) or "text")
        for field, kind in zip(_FIELDS, _AS_IS, strict=True)
    )
    return (
        f"WITH lane AS (SELECT chain FROM {quote(_HEADS)} WHERE chain = %s "  # noqa: S608
        "AND last_seq = %s AND last_hash = %s FOR UPDATE SKIP LOCKED), "
        f"entry AS (INSERT INTO {quote(_ENTRIES)} ({columns}) SELECT {casts} FROM lane "
        f"RETURNING {quote(_ENTRIES)}.{quote('id')}) "
        f"UPDATE {quote(_HEADS)} SET last_seq = %s, last_id = entry.id, last_hash = %s "
        "FROM entry WHERE chain = %s RETURNING entry.id /*prepared*/"
    )


def _insert_and_advance(
    cursor: Any,
    entry: JournalEntry,
    place: Place,
    chain: str,
    last_seq: int,
    last_hash: str,
    then: str = "",
) -> None:
    """`then`: a statement sent in the same message (client-side binding); the cursor stays
    on the first statement's result, and an error there stops the rest."""
    place(entry, chain, last_seq, last_hash)
    insert, params = _insert_sql(entry)
    cursor.execute(
        f'WITH entry AS ({insert}) UPDATE "{_HEADS}" SET last_seq = %s, '  # noqa: S608
        "last_id = entry.id, last_hash = %s FROM entry WHERE chain = %s "
        "RETURNING entry.id /*prepared*/" + then,
        [*params, entry.seq, entry.hash, chain],
    )
    entry.id = cursor.fetchone()[0]
    entry._state.adding, entry._state.db = False, connection.alias


_FIELDS = [f for f in JournalEntry._meta.local_concrete_fields if not f.primary_key]


def _passes_as_is(field: Field[Any, Any]) -> type | None:
    """The value type a field stores unchanged: a text field's str, an integer field's int
    (their get_db_prep_save returns such a value, and None, as it came)."""
    if isinstance(field, CharField | TextField):
        return str
    if isinstance(field, IntegerField):
        return int
    return None


_AS_IS = [_passes_as_is(field) for field in _FIELDS]
# The INSERT's text per database vendor: it names the fields and has one placeholder each
# whatever the values, so it is compiled once; the values are prepared per entry below.
_INSERTS: dict[str, str] = {}


def _insert_sql(entry: JournalEntry) -> tuple[str, list[Any]]:
    """The ORM's own INSERT … RETURNING id for the entry: its SQL compiled once, each value
    prepared by its field exactly as the ORM's compiler prepares it (the same bytes stored)."""
    sql = _INSERTS.get(connection.vendor)
    values = _values(entry) if sql is not None else None
    if sql is None or values is None:
        return _orm_insert_sql(entry)  # and an expression among the values compiles apart
    return sql, values


def _values(entry: JournalEntry) -> list[Any] | None:
    """Each field's value as the ORM's compiler prepares it for an INSERT; None when one is an
    expression (never in the journal's own entries), which only the ORM compiles."""
    values = [field.pre_save(entry, True) for field in _FIELDS]
    if any(hasattr(value, "resolve_expression") for value in values):
        return None
    return [
        value
        if kind is not None and (value is None or type(value) is kind)
        else field.get_db_prep_save(value, connection=connection)
        for field, kind, value in zip(_FIELDS, _AS_IS, values, strict=True)
    ]


def _orm_insert_sql(entry: JournalEntry) -> tuple[str, list[Any]]:
    query = InsertQuery(JournalEntry)
    query.insert_values(_FIELDS, [entry])
    compiler = query.get_compiler(connection=connection)
    compiler.returning_fields = [JournalEntry._meta.pk]
    [(sql, params)] = compiler.as_sql()
    if sql.count("%s") == len(_FIELDS) == len(params):  # plain placeholders: reusable
        _INSERTS.setdefault(connection.vendor, sql)
    return sql, list(params)


def _rollback(cursor: Any) -> None:
    try:
        cursor.execute("ROLLBACK")
    except Exception:  # noqa: S110 - a broken connection: Django discards it after the call
        pass


def _lane_chains(contour: str) -> Q:
    # Lane 0 is named by the slug itself; slugs never hold "~", so no contour's lanes collide.
    return Q(chain=contour) | Q(chain__startswith=f"{contour}{LANE_MARK}")


def free_lane(contour: str) -> ChainHead | None:
    """A lane of the contour that no other transaction holds, locked: one this process does not
    avoid (`_FreeHeads.avoided`), else a new one if allowed, else any free one."""
    lanes: int = settings.GATEWAY_JOURNAL_LANES
    if lanes <= 1 or not connection.features.has_select_for_update_skip_locked:
        return None  # SQLite: one writer at a time anyway
    free_heads = ChainHead.objects.select_for_update(skip_locked=True).filter(_lane_chains(contour))
    avoided = FREE_HEADS.avoided(contour)
    free = free_heads.exclude(chain__in=avoided).order_by("last_seq").first()
    if free is not None:
        return free
    opened = ChainHead.objects.filter(_lane_chains(contour)).count()
    if opened < lanes:
        chain = contour if opened == 0 else f"{contour}{LANE_MARK}{opened}"
        return locked_head(chain)
    return free_heads.order_by("last_seq").first() if avoided else None


def locked_head(chain: str) -> ChainHead:
    head = ChainHead.objects.select_for_update().filter(chain=chain).first()
    if head is not None:
        return head
    # No head yet (a new chain, or a flushed table): start it from the chain's last entry, if
    # any. A concurrent first writer makes get_or_create fall back to reading (and locking)
    # the winner's row.
    last = (
        JournalEntry.objects.filter(chain=chain)
        .order_by("-seq")
        .values_list("seq", "id", "hash")
        .first()
    )
    if last is None:  # every row archived (audit/archive.py): go on from the archived end
        last = (
            SignedCheckpoint.objects.filter(chain=chain, archived_at__isnull=False)
            .order_by("-to_seq")
            .values_list("to_seq", "last_id", "last_hash")
            .first()
        )
    defaults = dict(zip(("last_seq", "last_id", "last_hash"), last, strict=True)) if last else {}
    head, _ = ChainHead.objects.select_for_update().get_or_create(chain=chain, defaults=defaults)
    return head
