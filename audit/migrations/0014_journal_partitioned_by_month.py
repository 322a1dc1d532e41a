"""PostgreSQL: the journal becomes a table partitioned by RANGE on `at`, one partition a month.

Only the database changes; Django's model state does not (no state operation: `id` stays the
model's primary key, the constraints keep their names). On PostgreSQL, in one transaction:
the flat table is renamed, a partitioned table LIKE it is created with a partition for every
month that holds rows (in TIME_ZONE) and for this month and the next
GATEWAY_JOURNAL_PARTITIONS_AHEAD ones, and a DEFAULT partition; every row is copied as it is
(ids, times and hashes unchanged, so the chains verify as before); the flat table is dropped;
ids continue from the same sequence position. Then the keys, which a partitioned table needs to
hold its partition key: primary key (id, at), unique (chain, seq, at) and (hash, at); the
spool's id gets a plain partial index (audit/partitions.py says what guards what instead).
It takes as long as copying the journal: run it in a maintenance window on a large one.

Other databases (SQLite): nothing happens. Backwards: the same copy into a flat table.
"""

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import migrations

TABLE = "audit_journalentry"
FLAT = "audit_journalentry_flat"
SEQUENCE = "audit_journalentry_id_seq"
INDEXES = (
    "CREATE INDEX audit_entry_at ON {t} (at)",
    "CREATE INDEX audit_entry_channel ON {t} (channel)",
    "CREATE INDEX audit_entry_contour_at ON {t} (contour, at)",
    "CREATE INDEX audit_entry_status ON {t} (status)",
    "CREATE INDEX audit_entry_tool ON {t} (tool)",
)


def _month(at: datetime, zone: ZoneInfo) -> datetime:
    local = at.astimezone(zone)
    return datetime(local.year, local.month, 1, tzinfo=zone)


def _literal(at: datetime) -> str:
    return "'" + at.isoformat() + "'::timestamptz"


def _copy_ids_on(execute: Any, fetch: Any) -> None:
    """The new table's id sequence continues where the flat table's stopped."""
    execute(f"SELECT pg_get_serial_sequence('{FLAT}', 'id')")
    old = fetch()[0]
    last = 0
    if old:
        execute(f"SELECT last_value, is_called FROM {old}")  # noqa: S608 - a catalog name
        value, called = fetch()
        last = value if called else value - 1
    execute(f"SELECT COALESCE(max(id), 0) FROM {FLAT}")  # noqa: S608
    last = max(last, fetch()[0])
    execute(f"SELECT setval('{SEQUENCE}_new', %s, %s)", [max(last, 1), last > 0])


def partition(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    zone = ZoneInfo(settings.TIME_ZONE)
    with schema_editor.connection.cursor() as cursor:
        execute, fetch = cursor.execute, cursor.fetchone
        # The copy takes as long as the journal is large: no statement bound for it
        # (DATABASE_STATEMENT_TIMEOUT_SECONDS), only for this transaction.
        execute("SET LOCAL statement_timeout = 0")
        execute(f"LOCK TABLE {TABLE} IN ACCESS EXCLUSIVE MODE")
        execute(f"ALTER TABLE {TABLE} RENAME TO {FLAT}")
        execute(
            f"CREATE TABLE {TABLE} (LIKE {FLAT} INCLUDING DEFAULTS INCLUDING CONSTRAINTS) "
            "PARTITION BY RANGE (at)"
        )
        execute(f"CREATE SEQUENCE {SEQUENCE}_new AS bigint OWNED BY {TABLE}.id")
        _copy_ids_on(execute, fetch)
        execute(f"ALTER TABLE {TABLE} ALTER COLUMN id SET DEFAULT nextval('{SEQUENCE}_new')")
        execute(
            f"SELECT DISTINCT date_trunc('month', at AT TIME ZONE %s) FROM {FLAT}",  # noqa: S608
            [settings.TIME_ZONE],
        )
        months = {datetime(m.year, m.month, 1, tzinfo=zone) for (m,) in cursor.fetchall()}
        start = _month(datetime.now(zone), zone)
        for _ in range(getattr(settings, "GATEWAY_JOURNAL_PARTITIONS_AHEAD", 3) + 1):
            months.add(start)
            start = _month(start + timedelta(days=32), zone)
        for month in sorted(months):
            after = _month(month + timedelta(days=32), zone)
            execute(
                f"CREATE TABLE {TABLE}_{month:%Y_%m} PARTITION OF {TABLE} "
                f"FOR VALUES FROM ({_literal(month)}) TO ({_literal(after)})"
            )
        execute(f"CREATE TABLE {TABLE}_default PARTITION OF {TABLE} DEFAULT")
        execute(f"INSERT INTO {TABLE} SELECT * FROM {FLAT}")  # noqa: S608
        execute(f"DROP TABLE {FLAT}")
        execute(f"ALTER SEQUENCE {SEQUENCE}_new RENAME TO {SEQUENCE}")
        execute(f"ALTER TABLE {TABLE} ALTER COLUMN id SET DEFAULT nextval('{SEQUENCE}')")
        execute(f"ALTER TABLE {TABLE} ADD CONSTRAINT {TABLE}_pkey PRIMARY KEY (id, at)")
        execute(f"ALTER TABLE {TABLE} ADD CONSTRAINT audit_entry_chain_seq UNIQUE (chain, seq, at)")
        execute(f"ALTER TABLE {TABLE} ADD CONSTRAINT audit_entry_hash UNIQUE (hash, at)")
        for index in INDEXES:
            execute(index.format(t=TABLE))
        execute(f"CREATE INDEX audit_entry_spool_id ON {TABLE} (spool_id) WHERE spool_id <> ''")


def flatten(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        execute, fetch = cursor.execute, cursor.fetchone
        execute("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [TABLE])
        row = fetch()
        if row is None or row[0] != "p":
            return
        execute("SET LOCAL statement_timeout = 0")
        execute(f"LOCK TABLE {TABLE} IN ACCESS EXCLUSIVE MODE")
        execute(f"ALTER TABLE {TABLE} RENAME TO {FLAT}")
        execute(
            f"CREATE TABLE {TABLE} (LIKE {FLAT} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
        )
        execute(f"ALTER TABLE {TABLE} ALTER COLUMN id DROP DEFAULT")
        execute(f"INSERT INTO {TABLE} SELECT * FROM {FLAT}")  # noqa: S608
        execute(f"SELECT last_value FROM {SEQUENCE}")  # noqa: S608
        last = fetch()[0]
        execute(f"SELECT COALESCE(max(id), 0) FROM {FLAT}")  # noqa: S608
        last = max(last, fetch()[0])
        execute(f"DROP TABLE {FLAT} CASCADE")
        execute(f"ALTER TABLE {TABLE} ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY")
        execute(f"SELECT pg_get_serial_sequence('{TABLE}', 'id')")
        execute("SELECT setval(%s, %s, %s)", [fetch()[0], max(last, 1), last > 0])
        execute(f"ALTER TABLE {TABLE} ADD CONSTRAINT {TABLE}_pkey PRIMARY KEY (id)")
        execute(f"ALTER TABLE {TABLE} ADD CONSTRAINT audit_entry_chain_seq UNIQUE (chain, seq)")
        execute(f"ALTER TABLE {TABLE} ADD CONSTRAINT audit_entry_hash UNIQUE (hash)")
        for index in INDEXES:
            execute(index.format(t=TABLE))
        execute(
            f"CREATE UNIQUE INDEX audit_entry_spool_id ON {TABLE} (spool_id) "
            "WHERE NOT (spool_id = '')"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0013_signed_checkpoint_archive"),
    ]

    operations = [migrations.RunPython(partition, flatten, elidable=False)]
