"""The short append on PostgreSQL (audit/lanes.py): two round trips once a lane exists, the
stored row exactly what was hashed, secrets redacted, and nothing left behind by a failure."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext

from audit import lanes
from audit.journal import entry_hash, journal_keys, record
from audit.models import ChainHead, JournalEntry
from audit.walk import check_chain

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

SECRET = "tok-0123456789abcdef-secret"


def _record(n: int, **extra: object) -> JournalEntry:
    fields = {
        "contour": "shop",
        "channel": "mcp-http",
        "actor": "key:gw_1",
        "tool": "get_order",
        "phase": "read",
        "arguments": {"n": n, "token": SECRET, "note": f"x {SECRET}"},
        "status": "ok",
        "code": "ok",
        "message": f"прочитано {SECRET}",
        "secrets": [SECRET],
        **extra,
    }
    return record(**fields)


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the short append is PostgreSQL's")


def test_an_append_on_an_existing_lane_takes_two_round_trips():
    _record(0)  # opens the contour's first lane through the ORM
    assert lanes.usable()
    with CaptureQueriesContext(connection) as queries:
        entry = _record(1)
    statements = [q["sql"].split(" ", 2)[:2] for q in queries.captured_queries]
    assert len(statements) == 2, queries.captured_queries
    assert statements[0] == ["BEGIN;", "SELECT"]
    assert statements[1][0] == "WITH"
    # The COMMIT rides with the entry (issue 44): committed when record() returns.
    # (" /*prepared*/": the statement every call sends, see tools/models/prepared.py.)
    assert queries.captured_queries[1]["sql"].endswith("RETURNING entry.id /*prepared*/; COMMIT")
    assert not connection.in_atomic_block and connection.connection.info.transaction_status == 0
    stored = JournalEntry.objects.get(pk=entry.pk)
    head = ChainHead.objects.get(chain=stored.chain)
    assert (head.last_seq, head.last_id, head.last_hash) == (stored.seq, stored.id, stored.hash)
    assert (
        stored.hash
        == entry.hash
        == entry_hash(stored.prev_hash, stored, journal_keys()[stored.key_id])
    )
    assert SECRET not in repr(stored.arguments) and SECRET not in stored.message
    assert check_chain().broken_id is None


def test_many_appends_keep_every_chain_whole():
    for n in range(30):
        _record(n)
    assert JournalEntry.objects.count() == 30
    assert check_chain().broken_id is None


def test_a_failed_insert_leaves_no_transaction_and_no_moved_head(monkeypatch):
    _record(0)
    head_before = list(ChainHead.objects.values_list("chain", "last_seq", "last_hash"))

    def broken(entry: JournalEntry) -> tuple[str, list[object]]:
        return "INSERT INTO no_such_table VALUES (1) RETURNING 1 AS id", []

    monkeypatch.setattr(lanes, "_insert_sql", broken)
    with pytest.raises(DatabaseError):
        _record(1)
    assert connection.connection.info.transaction_status == 0  # idle: rolled back
    assert list(ChainHead.objects.values_list("chain", "last_seq", "last_hash")) == head_before
    monkeypatch.undo()
    _record(2)
    assert check_chain().broken_id is None


def _sent(params: list[object]) -> list[object]:
    # psycopg's Jsonb wrapper has no equality of its own: compare the text it sends.
    return [(type(p).__name__, p.dumps(p.obj)) if hasattr(p, "dumps") else p for p in params]


def test_the_insert_compiled_once_sends_what_the_orm_would_send():
    _record(0)
    entries = [
        _record(1),
        _record(
            2, arguments={"вложено": {"список": [1, "два", None]}}, upstream_status=None, message=""
        ),
        _record(3, arguments={}, upstream_status=502, duration_ms=7),
    ]
    assert lanes._INSERTS.get("postgresql")  # compiled by the first append
    for entry in entries:
        compiled, by_orm = lanes._insert_sql(entry), lanes._orm_insert_sql(entry)
        assert compiled[0] == by_orm[0]
        assert _sent(compiled[1]) == _sent(by_orm[1])
    assert check_chain().broken_id is None
