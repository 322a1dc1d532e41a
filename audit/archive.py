"""Retention: a closed month's sealed stretches written to a signed archive, checked, removed.

`manage.py archive_journal --before YYYY-MM` seals every chain up to its last entry written
before that month (audit.seals.seal_until), writes the sealed stretches that end before it as
a signed export (audit.signed_export: checkpoints, rows, signed manifest), verifies the file
with tools/verify_export.py in a process of its own and the public keys alone, checks that it
carries exactly the stretches due, and only then removes their rows in one transaction and
marks their checkpoints archived. verify_journal then starts each chain after its archived
prefix, linking the first remaining row to the last archived hash (audit/walk.py).

A chain's stretch that holds its head is never archived, so each chain keeps its last entry
(checkpoints and the head stay checkable). Works on SQLite and PostgreSQL alike. On PostgreSQL
with the table partitioned by month (by hand: docs/production.md says how, and why no migration
does it), a month partition that holds only archived rows is detached instead of deleted.
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
from django.db import connection, transaction
from django.utils import timezone

from audit import seals
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
    archived prefix, never the one holding the chain's head."""
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
            or stretch.to_seq >= heads.get(chain, 0)
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


def _partitions(cursor: Any, table: str) -> list[str]:
    """The journal table's partitions on PostgreSQL, oldest bound first ([] when flat)."""
    if connection.vendor != "postgresql":
        return []
    cursor.execute(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = %s "
        "ORDER BY c.relname",
        [table],
    )
    return [name for (name,) in cursor.fetchall()]


def _detach_covered(
    cursor: Any, stretches: list[SignedCheckpoint], boundary: datetime
) -> tuple[int, list[str]]:
    """Detach each partition whose rows all lie before `boundary` and all belong to the
    stretches archived: their rows leave without a DELETE. The rows detached, the tables."""
    plain = JournalEntry._meta.db_table
    table = connection.ops.quote_name(plain)
    ranges = ", ".join(["(%s, %s::bigint, %s::bigint)"] * len(stretches))
    params: list[Any] = [v for s in stretches for v in (s.chain, s.from_seq, s.to_seq)]
    detached, names = 0, []
    for name in _partitions(cursor, plain):
        part = connection.ops.quote_name(name)
        cursor.execute(
            f"SELECT count(*), max(at), count(*) FILTER (WHERE NOT EXISTS ("  # noqa: S608
            f"SELECT 1 FROM (VALUES {ranges}) AS s(chain, f, t) WHERE "
            f"s.chain = e.chain AND e.seq BETWEEN s.f AND s.t)) FROM {part} e",
            params,
        )
        rows, last_at, uncovered = cursor.fetchone()
        if rows and last_at < boundary and not uncovered:
            cursor.execute(f"ALTER TABLE {table} DETACH PARTITION {part}")
            detached += rows
            names.append(name)
    return detached, names


def remove(
    stretches: list[SignedCheckpoint], label: str, boundary: datetime
) -> tuple[int, list[str]]:
    """Remove the stretches' rows and mark them archived, all or nothing: on PostgreSQL with a
    journal partitioned by month, a partition holding only archived rows is detached (left as
    a table of its own to drop), the rest deleted. The rows removed, the tables detached."""
    table = connection.ops.quote_name(JournalEntry._meta.db_table)
    expected = _rows(stretches)
    with transaction.atomic():
        locked = list(
            SignedCheckpoint.objects.select_for_update().filter(
                pk__in=[s.pk for s in stretches], archived_at__isnull=True
            )
        )
        if len(locked) != len(stretches):
            raise ArchiveError("another run archived some of these stretches: nothing removed")
        with connection.cursor() as cursor:
            removed, detached = _detach_covered(cursor, stretches, boundary)
            for stretch in stretches:
                # Raw SQL: the model refuses deletes (JournalQuerySet); this is the one place
                # rows leave, and only after their archive verified.
                cursor.execute(
                    f"DELETE FROM {table} WHERE chain = %s AND seq >= %s "  # noqa: S608
                    f"AND seq <= %s",
                    [stretch.chain, stretch.from_seq, stretch.to_seq],
                )
                removed += cursor.rowcount
        if removed != expected:
            raise ArchiveError(
                f"{removed} rows found where the seals name {expected}: run "
                "verify_journal; nothing removed"
            )
        SignedCheckpoint.objects.filter(pk__in=[s.pk for s in stretches]).update(
            archived_at=timezone.now(), archive=label[:400]
        )
    return removed, detached


def prepare(boundary: datetime) -> list[SignedCheckpoint]:
    """Seal up to the boundary, then the stretches due."""
    try:
        seals.seal_until(boundary)
    except seals.SealError as exc:
        raise ArchiveError(f"the journal cannot be sealed: {exc}") from None
    return due(boundary)
