"""The journal's month partitions on PostgreSQL: their bounds, and making them ahead of time.

Migration `audit 0014` turns `audit_journalentry` into a table partitioned by RANGE on `at`,
one partition a month (`audit_journalentry_YYYY_MM`, bounds at the month's first instant in
TIME_ZONE, the same instant `archive_journal --before YYYY-MM` means) and a DEFAULT partition
for rows of a month that has none yet. The beat (`audit.tasks.make_journal_partitions`, daily)
and `archive_journal` create the partitions of this month and the next
GATEWAY_JOURNAL_PARTITIONS_AHEAD ones: the writer never runs DDL. A month whose rows already
went to the DEFAULT partition (the beat was down) gets its partition with those rows moved in.
SQLite, and a PostgreSQL table left flat, have no partitions: everything here is then a no-op.

The primary key is (id, at) in the database, `id` alone in Django's model (ids come from one
sequence, so `id` stays unique); `(chain, seq)` and `hash` are unique together with `at`, and
the spool's id has a plain index: a partitioned table's unique keys must hold the partition key.
The chain walk still refuses a doubled place or hash (audit/walk.py), and the spool drain takes
an advisory lock per spool id (audit/spool.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connection, transaction
from django.db.utils import DatabaseError

logger = logging.getLogger(__name__)

TABLE = "audit_journalentry"
DEFAULT = f"{TABLE}_default"
# How long creating a partition may wait for the journal's lock before it gives up until the
# next run: the writers queue behind a waiting ALTER, so it must not wait long.
LOCK_TIMEOUT = "5s"


@dataclass(frozen=True)
class Partition:
    name: str
    oid: int
    default: bool


def zone() -> ZoneInfo:
    return ZoneInfo(settings.TIME_ZONE)


def month_floor(at: datetime) -> datetime:
    """The first instant of `at`'s month in TIME_ZONE."""
    local = at.astimezone(zone())
    return datetime(local.year, local.month, 1, tzinfo=zone())


def next_month(start: datetime) -> datetime:
    """The first instant of the month after `start` (itself a month's first instant)."""
    return month_floor(start + timedelta(days=32))


def name_of(start: datetime) -> str:
    return f"{TABLE}_{start:%Y_%m}"


def bound_sql(at: datetime) -> str:
    """A timestamptz literal: the bounds are DDL, which takes no parameters."""
    return "'" + at.isoformat() + "'::timestamptz"


def partitioned(cursor: Any) -> bool:
    if connection.vendor != "postgresql":
        return False
    cursor.execute("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [TABLE])
    row = cursor.fetchone()
    return row is not None and row[0] == "p"


def partitions(cursor: Any) -> list[Partition]:
    """The journal's partitions, by name ([] when the table is flat or not PostgreSQL)."""
    if not partitioned(cursor):
        return []
    cursor.execute(
        "SELECT c.relname, c.oid, pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT' "
        "FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = to_regclass(%s) ORDER BY c.relname",
        [TABLE],
    )
    return [Partition(name, int(oid), bool(default)) for name, oid, default in cursor.fetchall()]


def create_month(cursor: Any, start: datetime) -> bool:
    """Give the month starting at `start` its partition; False when it has one already.

    CREATE TABLE and then ATTACH: attaching takes the parent's SHARE UPDATE EXCLUSIVE lock,
    which writers (ROW EXCLUSIVE) pass, where CREATE TABLE … PARTITION OF would stop them.
    Rows of the month found in the DEFAULT partition are moved into the new one first."""
    name = name_of(start)
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
    if cursor.fetchone()[0]:
        return False
    lo, hi = bound_sql(start), bound_sql(next_month(start))
    cursor.execute("SHOW lock_timeout")
    (before,) = cursor.fetchone()
    cursor.execute("SELECT set_config('lock_timeout', %s, true)", [LOCK_TIMEOUT])
    _attach(cursor, name, lo, hi)
    # Back as it was: in a caller's transaction the setting would outlive this function.
    cursor.execute("SELECT set_config('lock_timeout', %s, true)", [before])
    return True


def _attach(cursor: Any, name: str, lo: str, hi: str) -> None:
    q = connection.ops.quote_name
    cursor.execute(
        f"CREATE TABLE {q(name)} (LIKE {q(TABLE)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
    )
    has_default = any(p.default for p in partitions(cursor))
    stray = 0
    if has_default:
        cursor.execute(
            f"SELECT count(*) FROM {q(DEFAULT)} WHERE at >= {lo} AND at < {hi}"  # noqa: S608
        )
        stray = cursor.fetchone()[0]
    if stray:
        # The rows keep every byte (ids, hashes): only the table holding them changes.
        cursor.execute(f"ALTER TABLE {q(TABLE)} DETACH PARTITION {q(DEFAULT)}")
        cursor.execute(
            f"INSERT INTO {q(name)} SELECT * FROM {q(DEFAULT)} "  # noqa: S608
            f"WHERE at >= {lo} AND at < {hi}"
        )
        cursor.execute(f"DELETE FROM {q(DEFAULT)} WHERE at >= {lo} AND at < {hi}")  # noqa: S608
        cursor.execute(f"ALTER TABLE {q(TABLE)} ATTACH PARTITION {q(DEFAULT)} DEFAULT")
        logger.warning("journal partition %s: %s row(s) moved from %s", name, stray, DEFAULT)
    cursor.execute(
        f"ALTER TABLE {q(TABLE)} ATTACH PARTITION {q(name)} FOR VALUES FROM ({lo}) TO ({hi})"
    )


def ensure_ahead(now: datetime, ahead: int | None = None) -> list[str]:
    """Create the partitions of `now`'s month and the `ahead` months after it that are missing
    (each in a transaction of its own); the names created. [] where the journal is flat."""
    months = settings.GATEWAY_JOURNAL_PARTITIONS_AHEAD if ahead is None else ahead
    with connection.cursor() as cursor:
        if not partitioned(cursor):
            return []
    made, start = [], month_floor(now)
    for _ in range(months + 1):
        with transaction.atomic(), connection.cursor() as cursor:
            if create_month(cursor, start):
                made.append(name_of(start))
        start = next_month(start)
    return made


def make_ahead(now: datetime) -> list[str]:
    """ensure_ahead() for the beat: a failure (no right to alter the table, a lock not had in
    time) is logged and left for the next run; rows meanwhile go to the DEFAULT partition."""
    try:
        return ensure_ahead(now)
    except DatabaseError:
        logger.exception(
            "journal partitions ahead not created: run `manage.py archive_journal` or this "
            "task as the table's owner (docs/production.md, Journal retention)"
        )
        return []
