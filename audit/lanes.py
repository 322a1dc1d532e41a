"""Which chain an entry joins, and the short append on PostgreSQL.

On PostgreSQL a contour has up to GATEWAY_JOURNAL_LANES parallel chains ("lanes": `shop`,
`shop~1`, ...); a writer takes a lane no other transaction holds, so calls of one contour do
not queue. Once a contour's lanes exist, an append is two round trips: `BEGIN; SELECT … FOR
UPDATE SKIP LOCKED` (one message), then `WITH … INSERT … UPDATE` head and `COMMIT` (another).
The hash is computed here, between the two, from the locked head: the key never reaches the
database. Those two messages are sent bound on the client (several statements in one message);
with DATABASE_PREPARED_STATEMENTS the lane's SELECT and the entry's WITH in them are sent as
EXECUTE of statements prepared on the connection. Inside a caller's transaction there is no
BEGIN and no COMMIT of ours.
Opening a lane, and SQLite (one writer at a time anyway), go through the ORM.
"""

from __future__ import annotations

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
# Only table names are formatted into the SQL here and below; every value is a parameter.
_LANE_SQL = (
    f'SELECT chain, last_seq, last_hash FROM "{_HEADS}" '  # noqa: S608
    "WHERE chain = %s OR starts_with(chain, %s) "
    "ORDER BY last_seq LIMIT 1 FOR UPDATE SKIP LOCKED /*prepared*/"
)
# " /*prepared*/" ends a statement every call sends: with DATABASE_PREPARED_STATEMENTS it is
# prepared once per connection (tools/models/prepared.py, which audit/ does not import).


def usable(db: Any = connection) -> bool:
    lanes: int = settings.GATEWAY_JOURNAL_LANES
    return lanes > 1 and db.features.has_select_for_update_skip_locked and db.vendor == "postgresql"


def append(entry: JournalEntry, place: Place, *, savepoint: bool) -> bool:
    """Append on a free lane of the entry's contour; False when there is none yet (open one
    through the ORM: free_lane())."""
    lane_params = [entry.contour, f"{entry.contour}{LANE_MARK}"]
    if connection.in_atomic_block:  # the caller's transaction: no BEGIN, no COMMIT of ours
        with transaction.atomic(savepoint=savepoint), connection.cursor() as cursor:
            cursor.execute(_LANE_SQL, lane_params)
            row = cursor.fetchone()
            if row is not None:
                _insert_and_advance(cursor, entry, place, *row)
        return row is not None
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
    return row is not None


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
    values = [field.pre_save(entry, True) for field in _FIELDS]
    sql = _INSERTS.get(connection.vendor)
    if sql is None or any(hasattr(value, "resolve_expression") for value in values):
        return _orm_insert_sql(entry)  # and an expression among the values compiles apart
    return sql, [
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
    """A lane of the contour that no other transaction holds, locked; opening one if allowed."""
    lanes: int = settings.GATEWAY_JOURNAL_LANES
    if lanes <= 1 or not connection.features.has_select_for_update_skip_locked:
        return None  # SQLite: one writer at a time anyway
    free = (
        ChainHead.objects.select_for_update(skip_locked=True)
        .filter(_lane_chains(contour))
        .order_by("last_seq")
        .first()
    )
    if free is not None:
        return free
    taken = ChainHead.objects.filter(_lane_chains(contour)).count()
    if taken >= lanes:
        return None
    chain = contour if taken == 0 else f"{contour}{LANE_MARK}{taken}"
    return locked_head(chain)


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
