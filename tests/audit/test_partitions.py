"""The journal partitioned by month on PostgreSQL (audit 0014): the migration with rows present,
where writes land, and archive_journal detaching a closed month only after its archive verifies."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections, transaction

from audit import journal, partitions, seals
from audit.models import JournalEntry, SignedCheckpoint
from audit.tasks import make_journal_partitions
from tests.audit.test_archive import verify_journal_output, verify_offline

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def _sql(query: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(query, params or [])
        return list(cursor.fetchall()) if cursor.description else []


def _where() -> dict[str, int]:
    """Rows per partition holding them."""
    rows = _sql("SELECT tableoid::regclass::text, count(*) FROM audit_journalentry GROUP BY 1")
    return dict(rows)  # type: ignore[arg-type]


def _attached() -> set[str]:
    with connection.cursor() as cursor:
        return {p.name for p in partitions.partitions(cursor)}


def _at(monkeypatch: pytest.MonkeyPatch, month: int, day: int, hour: int = 12) -> None:
    moment = datetime(2025, month, day, hour, 0, tzinfo=UTC)
    monkeypatch.setattr(journal, "_now", lambda: moment)


@pytest.fixture
def months(settings) -> None:
    """May and June 2025 have partitions (made as the beat makes them), in UTC."""
    settings.TIME_ZONE = "UTC"
    made = partitions.ensure_ahead(datetime(2025, 5, 10, tzinfo=UTC), ahead=1)
    assert made == ["audit_journalentry_2025_05", "audit_journalentry_2025_06"]


def test_the_migration_copies_the_rows_and_the_chains_still_verify(write, monkeypatch, settings):
    settings.TIME_ZONE = "UTC"
    for month, day in ((3, 5), (4, 10), (4, 30), (5, 3)):
        _at(monkeypatch, month, day)
        write(contour="demo", arguments={"day": day})
        write(contour="shop", tool="create_order", phase="execute")
    write(contour="")
    call_command("migrate", "audit", "0013", verbosity=0)
    assert _sql("SELECT relkind FROM pg_class WHERE relname = 'audit_journalentry'") == [("r",)]
    before = list(JournalEntry.objects.order_by("id").values_list("id", "chain", "seq", "hash"))
    assert len(before) == 9 and verify_journal_output().startswith("ok: 9 entries")

    call_command("migrate", "audit", verbosity=0)

    assert _sql("SELECT relkind FROM pg_class WHERE relname = 'audit_journalentry'") == [("p",)]
    after = list(JournalEntry.objects.order_by("id").values_list("id", "chain", "seq", "hash"))
    assert after == before
    assert _where() == {
        "audit_journalentry_2025_03": 2,
        "audit_journalentry_2025_04": 4,
        "audit_journalentry_2025_05": 3,
    }
    assert verify_journal_output().startswith("ok: 9 entries")
    # Ids go on from the same sequence; the keys hold the partition key.
    assert write(contour="demo").id > before[-1][0]
    keys = _sql(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = 'audit_journalentry'::regclass AND contype IN ('p', 'u')"
    )
    assert dict(keys) == {
        "audit_journalentry_pkey": "PRIMARY KEY (id, at)",
        "audit_entry_chain_seq": "UNIQUE (chain, seq, at)",
        "audit_entry_hash": "UNIQUE (hash, at)",
    }
    assert verify_journal_output().startswith("ok: 10 entries")


def test_writes_land_in_their_months_partition(months, write, monkeypatch):
    for month, day in ((5, 1), (5, 31), (6, 1), (7, 2)):
        _at(monkeypatch, month, day, hour=0)
        write(contour="demo")
    assert _where() == {
        "audit_journalentry_2025_05": 2,
        "audit_journalentry_2025_06": 1,
        "audit_journalentry_default": 1,  # July has no partition yet
    }
    # July's partition, made late, takes its rows out of the DEFAULT partition.
    assert partitions.ensure_ahead(datetime(2025, 7, 1, tzinfo=UTC), ahead=0) == [
        "audit_journalentry_2025_07"
    ]
    assert _where()["audit_journalentry_2025_07"] == 1
    assert "audit_journalentry_default" not in _where()
    assert verify_journal_output().startswith("ok: 4 entries")


def test_the_beat_makes_the_partitions_ahead(settings):
    settings.GATEWAY_JOURNAL_PARTITIONS_AHEAD = 5
    month, names = partitions.month_floor(datetime.now(UTC)), []
    for _ in range(6):
        names.append(partitions.name_of(month))
        month = partitions.next_month(month)

    made = make_journal_partitions()

    assert made and set(made) <= set(names)
    assert set(names) <= _attached()
    assert make_journal_partitions() == []


@pytest.fixture
def may_and_june(months, write, monkeypatch, tmp_path) -> Callable[..., JournalEntry]:
    """demo and shop write in May and June, the beat seals once mid-May and once in June (its
    stretch is cut at June's start); `old` writes only in May. A checkpoint is kept at the end."""
    _at(monkeypatch, 5, 3)
    for n in range(3):
        write(contour="demo", arguments={"n": n})
        write(contour="shop", tool="create_order", phase="execute")
    write(contour="old")
    seals.seal()
    _at(monkeypatch, 5, 31, hour=23)
    write(contour="demo", arguments={"n": 10})
    write(contour="old")
    _at(monkeypatch, 6, 1, hour=0)
    write(contour="demo", arguments={"n": 20})
    write(contour="shop", tool="create_order", phase="execute")
    made = seals.seal()
    assert {(s.chain, s.from_seq, s.to_seq) for s in made} == {
        ("demo", 4, 4),  # May 31 ...
        ("demo", 5, 5),  # ... and June 1: two stretches, one per month
        ("old", 2, 2),
        ("shop", 4, 4),
    }
    call_command("journal_checkpoint", "--output", str(tmp_path / "end.json"), stdout=StringIO())
    return write


def _archive(*args: str) -> str:
    out = StringIO()
    call_command("archive_journal", "--before", "2025-06", *args, stdout=out)
    return out.getvalue()


def test_a_closed_month_is_archived_verified_and_detached(may_and_june, tmp_path):
    assert _where()["audit_journalentry_2025_05"] == 9
    archive = tmp_path / "2025-05.jsonl"

    said = _archive("--output", str(archive))

    assert "archived and removed 9 entries of 3 chain(s)" in said
    assert "detached partition(s)" in said and "audit_journalentry_2025_05" in said
    assert "audit_journalentry_2025_05" not in _attached()
    assert _sql("SELECT count(*) FROM audit_journalentry_2025_05") == [(9,)]  # left to drop
    assert _where() == {"audit_journalentry_2025_06": 2}
    assert verify_offline(tmp_path, archive).returncode == 0
    # The chain verifies across the cut: June's first rows link to May's archived ends.
    assert verify_journal_output().startswith("ok: 2 entries")
    assert verify_journal_output("--checkpoint", str(tmp_path / "end.json")).startswith("ok:")
    assert verify_journal_output("--full", "--checkpoint", str(tmp_path / "end.json")).startswith(
        "ok:"
    )
    # Writing goes on in every chain, `old` (all archived) from its archived end.
    for contour in ("demo", "shop", "old"):
        may_and_june(contour=contour)
    assert JournalEntry.objects.get(chain="old").seq == 3
    assert verify_journal_output().startswith("ok: 5 entries")


def test_a_row_changed_in_june_still_breaks_the_chain_after_the_cut(may_and_june, tmp_path):
    _archive("--output", str(tmp_path / "2025-05.jsonl"))
    june = JournalEntry.objects.get(chain="demo")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE audit_journalentry SET message = 'подменено' WHERE id = %s", [june.id]
        )
    with pytest.raises(SystemExit):
        verify_journal_output()


def test_an_archive_that_does_not_verify_keeps_the_partition(may_and_june, tmp_path):
    archive = tmp_path / "2025-05.jsonl"
    assert "archive verified: 9 entries" in _archive("--output", str(archive), "--keep-rows")
    lines = archive.read_text(encoding="utf-8").splitlines(keepends=True)
    target = next(i for i, line in enumerate(lines) if "type" not in json.loads(line))
    row = json.loads(lines[target])
    row["message"] = "подменено"
    lines[target] = json.dumps(row, ensure_ascii=False) + "\n"
    Path(archive).write_text("".join(lines), encoding="utf-8")

    with pytest.raises(CommandError, match="does not verify, nothing was removed"):
        _archive("--from-archive", str(archive))

    assert "audit_journalentry_2025_05" in _attached()
    assert _where()["audit_journalentry_2025_05"] == 9
    assert not SignedCheckpoint.objects.filter(archived_at__isnull=False).exists()
    assert verify_journal_output().startswith("ok: 11 entries")


def test_the_default_partition_is_never_detached(write, monkeypatch, settings, tmp_path):
    """May has no partition here: its rows, in DEFAULT, are deleted once archived."""
    settings.TIME_ZONE = "UTC"
    _at(monkeypatch, 5, 3)
    write(contour="demo")
    write(contour="demo")
    assert _where() == {"audit_journalentry_default": 2}

    said = _archive("--output", str(tmp_path / "2025-05.jsonl"))

    assert "archived and removed 2 entries" in said and "detached" not in said
    assert "audit_journalentry_default" in _attached() and _where() == {}
    assert verify_journal_output().startswith("ok: 0 entries")
    _at(monkeypatch, 5, 4)
    write(contour="demo")
    assert _where() == {"audit_journalentry_default": 1}


def test_a_busy_journal_is_not_detached_and_nothing_is_removed(may_and_june, tmp_path, monkeypatch):
    """DETACH waits for every query on the journal and writers queue behind it: it waits only
    partitions.LOCK_TIMEOUT, then the whole run is undone."""
    monkeypatch.setattr(partitions, "LOCK_TIMEOUT", "300ms")
    _sql("SET LOCAL lock_timeout = 0")  # as a long command may be run: no bound of its own
    holding, done = threading.Event(), threading.Event()

    def long_reader() -> None:
        try:
            with transaction.atomic(), connections["default"].cursor() as cursor:
                cursor.execute("LOCK TABLE ONLY audit_journalentry IN ACCESS SHARE MODE")
                holding.set()
                done.wait(timeout=60)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        reader = pool.submit(long_reader)
        assert holding.wait(timeout=30)
        try:
            with pytest.raises(CommandError, match="could not be detached within 300ms"):
                _archive("--output", str(tmp_path / "2025-05.jsonl"))
        finally:
            done.set()
        reader.result(timeout=30)

    assert "audit_journalentry_2025_05" in _attached()
    assert _where()["audit_journalentry_2025_05"] == 9
    assert not SignedCheckpoint.objects.filter(archived_at__isnull=False).exists()
    assert verify_journal_output().startswith("ok: 11 entries")
