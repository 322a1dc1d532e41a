"""Journal export: a selector by period, contour, tool and status; streaming CSV and JSON Lines."""

from __future__ import annotations

import csv
import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.db.models import QuerySet

from audit.models import ROW_FIELDS, JournalEntry
from audit.places import vouched

EXPORT_CHUNK = 2000
# Lines are grouped into writes of about this many characters: one write per line is slow,
# the whole export at once is unbounded.
WRITE_BATCH_CHARS = 64 * 1024

FIELDS: tuple[str, ...] = (
    *ROW_FIELDS,
    # The spool's marks (audit/spool.py): empty/null on every entry not spooled.
    "spool_id",
    "spooled_at",
    "duplicate_of",
)


def entries(
    since: datetime | None,
    until: datetime | None,
    contour: str | None,
    *,
    tool: str | None = None,
    status: str | None = None,
) -> QuerySet[JournalEntry]:
    """Entries with since <= at < until (either bound optional), optionally of one contour, one
    tool and one status, in id order; only those at places their chain's head vouches for
    (a row forged past a head, or into another contour's chain, is verify_journal's finding,
    never an exported fact)."""
    qs = vouched(JournalEntry.objects.all())
    if since is not None:
        qs = qs.filter(at__gte=since)
    if until is not None:
        qs = qs.filter(at__lt=until)
    if contour is not None:
        qs = qs.filter(contour=contour)
    if tool is not None:
        qs = qs.filter(tool=tool)
    if status is not None:
        qs = qs.filter(status=status)
    return qs.order_by("id")


def rows(qs: QuerySet[JournalEntry]) -> Iterator[dict[str, Any]]:
    """Each entry as a plain dict of FIELDS, `at` in UTC ISO form."""
    for row in qs.values(*FIELDS).iterator(chunk_size=EXPORT_CHUNK):
        # The same UTC form the hash is computed over, so an export can be re-verified.
        row["at"] = row["at"].astimezone(UTC).isoformat(timespec="microseconds")
        if row["spooled_at"] is not None:
            row["spooled_at"] = row["spooled_at"].astimezone(UTC).isoformat(timespec="microseconds")
        yield row


class _Echo:
    """A file-like object whose write() hands back the line instead of storing it."""

    def write(self, value: str) -> str:
        return value


# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula, defused with a leading quote.

    Only the CSV output is escaped: the journal stores (and hashes) what happened, JSON Lines
    carries it unchanged for re-verification, and CSV is what people open in a spreadsheet.
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def iter_csv(qs: QuerySet[JournalEntry], *, excel: bool = False) -> Iterator[str]:
    """A header line, then one CSV line per entry; arguments as compact JSON in one column,
    text cells that look like spreadsheet formulas prefixed with a quote.

    `excel`: what a Russian Excel opens by double click: a BOM (else it reads cp1251) and `;`
    (the comma is the decimal separator in the Russian locale)."""
    writer = csv.writer(_Echo(), delimiter=";" if excel else ",")
    if excel:
        yield "\ufeff"
    yield writer.writerow(FIELDS)
    for row in rows(qs):
        row["arguments"] = json.dumps(row["arguments"], ensure_ascii=False, separators=(",", ":"))
        for name in ("upstream_status", "spooled_at", "duplicate_of"):
            if row[name] is None:
                row[name] = ""
        yield writer.writerow([spreadsheet_safe(row[name]) for name in FIELDS])


def iter_jsonl(qs: QuerySet[JournalEntry]) -> Iterator[str]:
    """One JSON object per entry and line."""
    for row in rows(qs):
        yield json.dumps(row, ensure_ascii=False) + "\n"


def batched(lines: Iterator[str], size: int = WRITE_BATCH_CHARS) -> Iterator[str]:
    """Join consecutive lines into pieces of about `size` characters."""
    batch: list[str] = []
    length = 0
    for line in lines:
        batch.append(line)
        length += len(line)
        if length >= size:
            yield "".join(batch)
            batch, length = [], 0
    if batch:
        yield "".join(batch)


async def aiterate(pieces: Iterator[str]) -> AsyncIterator[str]:
    """Serve a sync iterator to an ASGI server one piece at a time.

    Django's ASGI handler would otherwise read a sync iterator to the end into a list before
    sending a byte. Each step runs thread-sensitively, so every database read of the export
    happens in the request's one thread and on its one connection.
    """
    step = sync_to_async(_next_piece, thread_sensitive=True)
    while (piece := await step(pieces)) is not None:
        yield piece


def _next_piece(pieces: Iterator[str]) -> str | None:
    return next(pieces, None)
