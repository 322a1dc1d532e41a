"""The short append on PostgreSQL (audit/lanes.py): two round trips once a lane exists, the
stored row exactly what was hashed, secrets redacted, and nothing left behind by a failure."""

from __future__ import annotations

import os

import pytest
from django.db import DatabaseError, IntegrityError, connection, connections
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


def test_an_append_on_an_existing_lane_takes_two_round_trips_without_a_guess():
    _record(0)  # opens the contour's first lane through the ORM
    assert lanes.usable()
    lanes.FREE_HEADS.forget()  # as a process that never appended to the contour
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
    lanes.FREE_HEADS.forget()  # the two round trips
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


def _statements(queries: CaptureQueriesContext) -> list[str]:
    return [" ".join(q["sql"].split()[:2]) for q in queries.captured_queries]


def test_an_append_after_a_head_this_process_left_takes_one_statement():
    _record(0)  # opens the lane through the ORM
    first = _record(1)  # two round trips; the process now knows where it left the head
    with CaptureQueriesContext(connection) as queries:
        entry = _record(2)
    assert _statements(queries) == ["WITH lane"], queries.captured_queries
    assert queries.captured_queries[0]["sql"].endswith("RETURNING entry.id /*prepared*/")
    assert not connection.in_atomic_block and connection.connection.info.transaction_status == 0
    stored = JournalEntry.objects.get(pk=entry.pk)
    assert (stored.chain, stored.seq, stored.prev_hash) == (first.chain, first.seq + 1, first.hash)
    assert stored.hash == entry_hash(stored.prev_hash, stored, journal_keys()[stored.key_id])
    head = ChainHead.objects.get(chain=stored.chain)
    assert (head.last_seq, head.last_id, head.last_hash) == (stored.seq, stored.id, stored.hash)
    assert SECRET not in repr(stored.arguments) and SECRET not in stored.message
    # Each value reads back as it was hashed, through the casts of the SELECT list.
    for field in lanes._FIELDS:
        assert getattr(stored, field.attname) == getattr(entry, field.attname), field.name
    assert check_chain().broken_id is None


def test_a_head_moved_by_someone_else_writes_nothing_and_the_lane_is_left_to_them():
    _record(0)
    behind = _record(1)
    ahead = _record(2)
    # This process's guess is one entry behind, as when another process appended to the lane.
    lanes.FREE_HEADS.forget()
    lanes.FREE_HEADS.give("shop", behind.chain, behind.seq, behind.hash)
    with CaptureQueriesContext(connection) as queries:
        entry = _record(3)
    assert _statements(queries)[:2] == ["WITH lane", "BEGIN; SELECT"], queries.captured_queries
    # The guess wrote nothing; the entry went to a lane of its own, the other process's lane
    # is avoided for a while (no two processes taking turns on one lane).
    assert entry.chain != behind.chain and entry.seq == 1
    assert lanes.FREE_HEADS.avoided("shop") == [behind.chain]
    assert list(
        JournalEntry.objects.filter(chain=behind.chain).order_by("seq").values_list("seq", "hash")
    ) == [(1, _first_hash(behind.chain)), (2, behind.hash), (3, ahead.hash)]
    assert check_chain().broken_id is None


def _first_hash(chain: str) -> str:
    return JournalEntry.objects.get(chain=chain, seq=1).hash


def test_a_lane_another_transaction_holds_is_not_waited_for():
    _record(0)
    held = _record(1)
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            other.set_autocommit(False)
            cursor.execute(
                "SELECT 1 FROM audit_chainhead WHERE chain = %s FOR UPDATE", [held.chain]
            )
            with connection.cursor() as mine:  # a wait fails the test instead of hanging it
                mine.execute("SET lock_timeout = '2s'")
            with CaptureQueriesContext(connection) as queries:
                entry = _record(2)  # the guess names the held lane: skipped, not waited on
            other.rollback()
    finally:
        other.close()
        with connection.cursor() as mine:
            mine.execute("RESET lock_timeout")
    assert _statements(queries)[0] == "WITH lane"
    assert entry.chain != held.chain
    assert check_chain().broken_id is None


def test_the_heads_a_process_keeps_are_bounded():
    heads = lanes._FreeHeads(contours=2)
    for n in range(5):
        heads.give(f"shop-{n}", f"shop-{n}", 1, "h")
    assert heads.take("shop-0") is None and heads.take("shop-2") is None
    assert heads.take("shop-4") == ("shop-4", 1, "h")
    assert heads.take("shop-4") is None  # taken: no other thread gets the same lane
    heads.give("shop-3", "shop-3", 5, "new")
    heads.give("shop-3", "shop-3", 4, "old")  # an older head never replaces a newer one
    assert heads.take("shop-3") == ("shop-3", 5, "new")


def test_a_failed_append_after_a_known_head_writes_nothing_and_leaves_no_guess():
    _record(0)
    before = _record(1)
    with pytest.raises(IntegrityError):  # the column's own check refuses a negative status
        _record(2, upstream_status=-1)
    assert connection.connection.info.transaction_status == 0  # idle: nothing left open
    head = ChainHead.objects.get(chain=before.chain)
    assert (head.last_seq, head.last_hash) == (before.seq, before.hash)
    assert JournalEntry.objects.count() == 2
    assert lanes.FREE_HEADS.take("shop") is None  # the failed guess is not offered again
    assert _record(3).seq == before.seq + 1
    assert check_chain().broken_id is None


def test_a_process_avoids_lanes_its_threads_hold_and_lanes_another_process_took_for_a_while(
    clock,
):
    heads = lanes._FreeHeads(contours=4)  # a lane contested is avoided for 60 s
    heads.give("shop", "shop", 3, "a")
    heads.give("shop", "shop~1", 5, "b")
    held = heads.take("shop")
    assert held is not None and heads.avoided("shop") == [held[0]]  # another thread writes it
    heads.give("shop", held[0], held[1] + 1, "c")
    assert heads.avoided("shop") == []
    missed = heads.take("shop")
    assert missed is not None
    heads.drop("shop", missed[0], contested=True)  # another process wrote there meanwhile
    clock.advance(59)
    assert heads.avoided("shop") == [missed[0]]
    clock.advance(2)
    assert heads.avoided("shop") == []  # and is tried again later


def test_a_forked_child_starts_with_no_heads_of_its_parent_and_an_order_of_its_own():
    _record(0)
    _record(1)
    assert lanes.FREE_HEADS.avoided("shop") == [] and lanes._lane_params("shop")[3] == str(
        os.getpid()
    )
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: report, then leave without running the parent's teardown
        said = f"{lanes.FREE_HEADS.take('shop')}|{lanes._lane_params('shop')[3]}|{os.getpid()}"
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    took, order, pid = os.read(read, 200).decode().split("|")
    os.close(read)
    assert took == "None" and order == pid != str(os.getpid())
    assert lanes.FREE_HEADS.take("shop") is not None  # the parent keeps its own
