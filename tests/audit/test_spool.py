"""audit/spool.py: an entry whose write failed waits in the spool; one whose commit reached the
server before the connection died is told apart from its spooled copy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError, connection

from audit import lanes, spool
from audit.models import JournalEntry
from audit.walk import verify_chain

FIELDS: dict[str, Any] = {
    "contour": "spool-test",
    "channel": "rest",
    "actor": "key:ibg_spool",
    "tool": "get_order",
    "phase": "read",
    "arguments": {"order_id": "1"},
    "status": "ok",
    "code": "ok",
    "message": "заказ найден",
}


@pytest.fixture(autouse=True)
def _state_dir(settings: Any, tmp_path: Path) -> None:
    settings.GATEWAY_STATE_DIR = str(tmp_path)


def lost_after_commit(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    """The server commits; the connection dies before its answer arrives (a COMMIT alone, or
    sent with the entry, or the entry's one statement outside a transaction: audit/lanes.py)."""
    result = execute(sql, params, many, context)
    alone = sql.startswith("WITH lane") and context["connection"].get_autocommit()
    if sql == "COMMIT" or sql.endswith("; COMMIT") or alone:
        raise OperationalError("server closed the connection unexpectedly")
    return result


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("guess", ["after the head this process left", "without a guess"])
def test_a_commit_whose_answer_was_lost_is_spooled_and_drained_as_a_marked_duplicate(guess):
    spool.record_or_spool(**FIELDS)  # opens the contour's lanes: the next write takes one
    if guess == "without a guess":
        lanes.FREE_HEADS.forget()  # the lane's two round trips, its COMMIT sent with the entry
    before = JournalEntry.objects.count()

    with connection.execute_wrapper(lost_after_commit):
        recorded = spool.record_or_spool(**FIELDS)

    assert recorded.entry is None and recorded.spool_id
    committed = JournalEntry.objects.order_by("-id").first()
    assert JournalEntry.objects.count() == before + 1  # the write did land
    assert spool.drain() == 1
    copy = JournalEntry.objects.get(spool_id=recorded.spool_id)
    assert copy.duplicate_of == committed.id
    assert (copy.code, copy.tool) == (committed.code, committed.tool)
    assert verify_chain() is None


@pytest.mark.django_db(transaction=True)
def test_a_write_that_never_reached_the_database_is_drained_without_a_duplicate_mark():
    spool.record_or_spool(**FIELDS)
    before = JournalEntry.objects.count()

    def refuse(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        raise OperationalError("could not connect to server")

    with connection.execute_wrapper(refuse):
        recorded = spool.record_or_spool(**FIELDS)

    assert JournalEntry.objects.count() == before
    assert spool.drain() == 1
    copy = JournalEntry.objects.get(spool_id=recorded.spool_id)
    assert copy.duplicate_of is None
    assert verify_chain() is None


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_one_spool_id_is_drained_once_though_two_drainers_hold_it(settings: Any, tmp_path: Path):
    """The journal partitioned by month cannot keep spool_id unique: a drain holds an advisory
    lock on the spool id, so a second drainer of a copy of the same file (another directory,
    another host) waits for the first one's commit and then finds the entry there."""
    import shutil
    import time
    from concurrent.futures import ThreadPoolExecutor
    from datetime import UTC, datetime

    from django.db import connections, transaction

    from audit import journal

    spool_id = spool.write(journal.build(**FIELDS))
    [spooled] = spool.directory().glob("*.json")
    other = tmp_path / "other"
    (other / "journal-spool").mkdir(parents=True)
    shutil.copy(spooled, other / "journal-spool" / spooled.name)
    first = journal.build(**FIELDS)  # what the first drainer appends from its copy
    first.spool_id, first.spooled_at = spool_id, datetime.now(UTC)

    def drain_the_copy() -> int:
        try:
            return spool.drain()
        finally:
            connections.close_all()

    pool = ThreadPoolExecutor(max_workers=1)
    with transaction.atomic():
        spool.lock_spool_id(spool_id)
        journal.append(first)
        settings.GATEWAY_STATE_DIR = str(other)
        second = pool.submit(drain_the_copy)
        deadline = time.monotonic() + 30
        while not second.done() and time.monotonic() < deadline:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                )
                if cursor.fetchone()[0]:
                    break
        assert not second.done()  # it waits on the first drainer's lock
    # committed: the copy's drain now sees the entry and appends nothing
    assert second.result(timeout=30) == 0
    pool.shutdown()
    assert JournalEntry.objects.filter(spool_id=spool_id).count() == 1
    assert verify_chain() is None
