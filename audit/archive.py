"""Retention: a closed month's sealed stretches written to a signed archive, checked, removed.

`manage.py archive_journal --before YYYY-MM` seals every chain up to its last entry written
before that month (audit.seals.seal_until; a stretch never spans a month's start), writes the
sealed stretches that end before it as a signed export (audit.signed_export: checkpoints, rows,
signed manifest), verifies the file with tools/verify_export.py in a process of its own and
the public keys alone, checks that it carries exactly the stretches due, and only then takes
their rows out in one transaction and marks their checkpoints archived. verify_journal then
starts each chain after its archived prefix, linking the first remaining row to the last
archived hash, kept in the signed checkpoint at the cut (audit/walk.py); a chain whose rows
were all archived ends at that checkpoint, which its head must match.

On PostgreSQL, where the journal is partitioned by month (migration audit 0014,
audit/partitions.py), a month partition whose rows all lie before the month and all belong to
archived stretches is DETACHED, not deleted: it stays a table of its own until the operator
drops it. Rows elsewhere (the DEFAULT partition, a month also holding rows not archived, a flat
table, SQLite) are deleted.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.db.models import Max
from django.utils import timezone

from audit import partitions, seals
from audit.models import ChainHead, JournalEntry, SignedCheckpoint
from audit.signed_export import iter_signed_jsonl

VERIFY_TIMEOUT_SECONDS = 3600


class ArchiveError(RuntimeError):
    """The archive cannot be written or does not verify: nothing was removed."""


def month_start(text: str) -> datetime:
    """The first instant of month YYYY-MM in TIME_ZONE; refuses a month not yet closed."""
    try:
        year, month = (int(part) for part in text.split("-"))
        start = timezone.make_aware(datetime(year, month, 1))
    except ValueError:
        raise ArchiveError(f"--before expects YYYY-MM, got {text!r}") from None
    now = timezone.localtime()
    if start > timezone.make_aware(datetime(now.year, now.month, 1)):
        raise ArchiveError(
            f"{text} is later than the current month: only closed months are "
            "archived (the entries before the month given)"
        )
    return start


def due(boundary: datetime) -> list[SignedCheckpoint]:
    """The unarchived stretches that end before `boundary`, contiguous from each chain's
    archived prefix, up to its head (the head row keeps the last hash of an archived chain)."""
    heads = dict(ChainHead.objects.values_list("chain", "last_seq"))
    archived: dict[str, int] = {}
    for chain, to_seq in SignedCheckpoint.objects.filter(archived_at__isnull=False).values_list(
        "chain", "to_seq"
    ):
        archived[chain] = max(archived.get(chain, 0), to_seq)
    found: list[SignedCheckpoint] = []
    stopped: set[str] = set()
    for stretch in SignedCheckpoint.objects.filter(
        archived_at__isnull=True, last_at__lt=boundary
    ).order_by("chain", "from_seq"):
        chain = stretch.chain
        if (
            chain in stopped
            or stretch.to_seq > heads.get(chain, 0)
            or stretch.from_seq != archived.get(chain, 0) + 1
        ):
            stopped.add(chain)
            continue
        archived[chain] = stretch.to_seq
        found.append(stretch)
    return found


def _rows(stretches: list[SignedCheckpoint]) -> int:
    return sum(s.to_seq - s.from_seq + 1 for s in stretches)


def write(path: Path, stretches: list[SignedCheckpoint]) -> None:
    qs = SignedCheckpoint.objects.filter(pk__in=[s.pk for s in stretches]).order_by(
        "chain", "from_seq"
    )
    try:
        with path.open("x", encoding="utf-8") as handle:
            for line in iter_signed_jsonl(qs):
                handle.write(line)
    except FileExistsError:
        raise ArchiveError(f"{path} exists: an archive is never overwritten") from None
    except OSError as exc:
        raise ArchiveError(f"{path}: cannot write the archive ({exc})") from None


def verify(path: Path, stretches: list[SignedCheckpoint]) -> str:
    """Check the file as an auditor would, then that it holds exactly `stretches`; its sha256."""
    verifier = Path(settings.BASE_DIR) / "tools" / "verify_export.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "PYTHONPATH"))}
    with tempfile.TemporaryDirectory() as folder:
        keys = []
        for number, public in enumerate(sorted({s.public_key for s in stretches})):
            key = Path(folder) / f"key{number}.pem"
            key.write_text(seals.public_pem(base64.b64decode(public)))
            keys += ["--public-key", str(key)]
        # Our own interpreter and verifier; the paths are ours too.
        done = subprocess.run(  # noqa: S603 - our interpreter and verifier
            [sys.executable, str(verifier), *keys, str(path.resolve())],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=VERIFY_TIMEOUT_SECONDS,
            check=False,
        )
    if done.returncode != 0:
        raise ArchiveError(
            f"{path} does not verify, nothing was removed: {(done.stderr or done.stdout).strip()}"
        )
    digest, signatures, rows = hashlib.sha256(), set(), None
    with path.open("rb") as handle:
        for line in handle:
            digest.update(line)
            record = json.loads(line)
            if record.get("type") == "checkpoint":
                signatures.add(record["signature"])
            elif record.get("type") == "manifest":
                rows = record["rows"]
    if signatures != {s.signature for s in stretches} or rows != _rows(stretches):
        raise ArchiveError(
            f"{path} verifies but is not the archive of these stretches "
            f"({len(stretches)} stretches, {_rows(stretches)} rows): nothing "
            "was removed"
        )
    return digest.hexdigest()


def _archived_ends() -> dict[str, int]:
    """Each chain's archived prefix: every place up to this one is in an archive file."""
    return dict(
        SignedCheckpoint.objects.filter(archived_at__isnull=False)
        .values("chain")
        .annotate(end=Max("to_seq"))
        .values_list("chain", "end")
    )


def _detachable(cursor: Any, boundary: datetime) -> list[tuple[partitions.Partition, int]]:
    """The month partitions (never DEFAULT) whose rows all lie before `boundary` and all stand in
    archived prefixes, each place once: locked against inserts, with their row counts."""
    q = connection.ops.quote_name
    ends = _archived_ends()
    found = []
    for part in partitions.partitions(cursor):
        if part.default:
            continue
        cursor.execute(f"SELECT max(at) FROM {q(part.name)}")  # noqa: S608 - an index read
        (last_at,) = cursor.fetchone()
        if last_at is None or last_at >= boundary:
            continue
        cursor.execute(f"LOCK TABLE {q(part.name)} IN SHARE MODE")
        cursor.execute(
            f"SELECT chain, count(*), min(seq), max(seq), max(at) "  # noqa: S608
            f"FROM {q(part.name)} GROUP BY chain"
        )
        rows, whole = 0, True
        for chain, count, low, high, at in cursor.fetchall():
            rows += count
            whole = whole and at < boundary and high <= ends.get(chain, 0)
            whole = whole and count == high - low + 1
        if rows and whole:
            found.append((part, rows))
    return found


def _detach(cursor: Any, names: list[str]) -> None:
    """DETACH waits for every query on the journal, and writers queue behind it: it waits
    partitions.LOCK_TIMEOUT at most, or the whole run is undone and can be tried again."""
    if not names:
        return
    q = connection.ops.quote_name
    table = q(JournalEntry._meta.db_table)
    cursor.execute("SELECT set_config('lock_timeout', %s, true)", [partitions.LOCK_TIMEOUT])
    for name in names:
        try:
            with transaction.atomic():
                cursor.execute(f"ALTER TABLE {table} DETACH PARTITION {q(name)}")
        except OperationalError:
            raise ArchiveError(
                f"{name} could not be detached within {partitions.LOCK_TIMEOUT} "
                "(the journal was busy): nothing removed, run again"
            ) from None


def remove(
    stretches: list[SignedCheckpoint], label: str, boundary: datetime
) -> tuple[int, list[str]]:
    """Take the stretches' rows out and mark them archived, all or nothing: on PostgreSQL with
    the journal partitioned by month, a partition holding only archived rows is detached (left
    as a table of its own to drop), the other rows deleted. The rows taken out, the tables
    detached. The partitions are detached last, so writers wait only for the commit."""
    table = connection.ops.quote_name(JournalEntry._meta.db_table)
    expected = _rows(stretches)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # A month's scan and deletes outlast DATABASE_STATEMENT_TIMEOUT_SECONDS, a bound
            # for calls: this maintenance transaction has none (its DETACH waits boundedly).
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL statement_timeout = 0")
        locked = list(
            SignedCheckpoint.objects.select_for_update().filter(
                pk__in=[s.pk for s in stretches], archived_at__isnull=True
            )
        )
        if len(locked) != len(stretches):
            raise ArchiveError("another run archived some of these stretches: nothing removed")
        SignedCheckpoint.objects.filter(pk__in=[s.pk for s in stretches]).update(
            archived_at=timezone.now(), archive=label[:400]
        )
        with connection.cursor() as cursor:
            detach = _detachable(cursor, boundary)
            removed = sum(count for _part, count in detach)
            kept = [part.oid for part, _count in detach]
            for stretch in stretches:
                # Raw SQL: the model refuses deletes (JournalQuerySet); this is the one place
                # rows leave, and only after their archive verified.
                cursor.execute(
                    f"DELETE FROM {table} WHERE chain = %s AND seq >= %s "  # noqa: S608
                    f"AND seq <= %s" + (" AND tableoid <> ALL(%s::oid[])" if kept else ""),
                    [stretch.chain, stretch.from_seq, stretch.to_seq, *([kept] if kept else [])],
                )
                removed += cursor.rowcount
            if removed != expected:
                raise ArchiveError(
                    f"{removed} rows found where the seals name {expected}: run "
                    "verify_journal; nothing removed"
                )
            _detach(cursor, [part.name for part, _count in detach])
    return removed, [part.name for part, _count in detach]


def prepare(boundary: datetime) -> list[SignedCheckpoint]:
    """Make the partitions ahead (archive_journal runs as the table's owner), seal up to the
    boundary, then the stretches due."""
    partitions.make_ahead(timezone.now())
    try:
        seals.seal_until(boundary)
    except seals.SealError as exc:
        raise ArchiveError(f"the journal cannot be sealed: {exc}") from None
    return due(boundary)
