"""Concurrent writers on PostgreSQL serialize on the journal head: the chain never forks."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections

from audit.journal import record, verify_chain
from audit.models import JournalEntry

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
    if connection.vendor != "postgresql":
        pytest.skip("needs DATABASE_URL pointing at PostgreSQL")

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        list(pool.map(_write_many, range(WRITERS)))

    ids = list(JournalEntry.objects.order_by("id").values_list("id", flat=True))
    assert len(ids) == WRITERS * PER_WRITER
    assert ids == list(range(ids[0], ids[0] + len(ids)))
    assert verify_chain() is None
