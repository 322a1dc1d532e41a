"""Concurrent writers on PostgreSQL: one contour's chain never forks; contours never wait on each other."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import OperationalError, connection, connections, transaction

from audit.journal import record
from audit.models import JournalEntry
from audit.walk import check_chain, verify_chain

WRITERS = 8
PER_WRITER = 25


def _write_many(writer: int) -> None:
    try:
        for n in range(PER_WRITER):
            record(
                contour="demo",
                channel="mcp-http",
                actor=f"writer-{writer}",
                tool="get_order",
                phase="read",
                arguments={"n": n},
                status="ok",
                code="",
                message="",
            )
    finally:
        connections.close_all()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_keep_one_unbroken_chain():
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        list(pool.map(_write_many, range(WRITERS)))

    assert JournalEntry.objects.count() == WRITERS * PER_WRITER
    for chain in set(JournalEntry.objects.values_list("chain", flat=True)):
        assert chain == "demo" or chain.startswith("demo~")
        seqs = list(
            JournalEntry.objects.filter(chain=chain).order_by("seq").values_list("seq", flat=True)
        )
        assert seqs == list(range(1, len(seqs) + 1))  # no lane forks or skips a place
    assert verify_chain() is None


def _entry(contour: str, n: int = 0) -> JournalEntry:
    return record(
        contour=contour,
        channel="rest",
        actor="a",
        tool="get_order",
        phase="read",
        arguments={"n": n},
        status="ok",
        code="",
        message="",
    )


def _append_with_lock_timeout(contour: str) -> str:
    """Append one entry, giving up after 1 s of waiting for a lock; say how it went."""
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '1s'")
            _entry(contour)
        return "appended"
    except OperationalError as error:
        return "waited" if "lock timeout" in str(error) else f"failed: {error}"
    finally:
        connections.close_all()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_writer_of_another_contour_does_not_wait_on_an_open_append():
    _entry("shop-a")
    _entry("shop-b")

    with transaction.atomic():  # an append of shop-a, its transaction still open
        _entry("shop-a", 1)
        with ThreadPoolExecutor(max_workers=2) as pool:
            other = pool.submit(_append_with_lock_timeout, "shop-b").result(timeout=30)
            same = pool.submit(_append_with_lock_timeout, "shop-a").result(timeout=30)

    assert other == "appended"
    assert same == "appended"  # on a lane of its own: shop-a~1
    assert verify_chain() is None
    assert list(JournalEntry.objects.order_by("chain", "seq").values_list("chain", "seq")) == [
        ("shop-a", 1),
        ("shop-a", 2),
        ("shop-a~1", 1),
        ("shop-b", 1),
        ("shop-b", 2),
    ]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_with_one_lane_the_same_contour_waits(settings):
    settings.GATEWAY_JOURNAL_LANES = 1
    _entry("shop-a")

    with transaction.atomic():
        _entry("shop-a", 1)
        with ThreadPoolExecutor(max_workers=1) as pool:
            same = pool.submit(_append_with_lock_timeout, "shop-a").result(timeout=30)

    assert same == "waited"  # the head lock is real: without lanes a writer queues behind it


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_writers_of_many_contours_append_in_parallel_and_each_chain_holds():
    def write_contour(writer: int) -> None:
        try:
            for n in range(PER_WRITER):
                _entry(f"shop-{writer}", n)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        list(pool.map(write_contour, range(WRITERS)))

    assert verify_chain() is None
    victim = JournalEntry.objects.filter(chain="shop-3", seq=7).get()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE audit_journalentry SET message = 'подменено' WHERE id = %s", [victim.id]
        )
    report = check_chain()
    assert (report.broken_id, report.reason) == (
        victim.id,
        "hash does not match its content (key 'dev')",
    )
