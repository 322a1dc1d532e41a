"""Journal export: a selector by period and contour, and streaming CSV and JSON Lines writers."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from django.db.models import QuerySet

from audit.models import JournalEntry

EXPORT_CHUNK = 2000

FIELDS: tuple[str, ...] = (
    "id",
    "at",
    "contour",
    "channel",
    "actor",
    "tool",
    "phase",
    "arguments",
    "status",
    "code",
    "message",
    "confirmation_id",
    "operation_key",
    "upstream_request_id",
    "upstream_status",
    "duration_ms",
    "prev_hash",
    "hash",
)


def entries(
    since: datetime | None, until: datetime | None, contour: str | None
) -> QuerySet[JournalEntry]:
    """Entries with since <= at < until (either bound optional) for one contour or all, by id."""
    qs = JournalEntry.objects.all()
    if since is not None:
        qs = qs.filter(at__gte=since)
    if until is not None:
        qs = qs.filter(at__lt=until)
    if contour is not None:
        qs = qs.filter(contour=contour)
    return qs.order_by("id")


def _rows(qs: QuerySet[JournalEntry]) -> Iterator[dict[str, Any]]:
    for row in qs.values(*FIELDS).iterator(chunk_size=EXPORT_CHUNK):
        # The same UTC form the hash is computed over, so an export can be re-verified.
        row["at"] = row["at"].astimezone(UTC).isoformat(timespec="microseconds")
        yield row


class _Echo:
    """A file-like object whose write() hands back the line instead of storing it."""

    def write(self, value: str) -> str:
        return value


def iter_csv(qs: QuerySet[JournalEntry]) -> Iterator[str]:
    """A header line, then one CSV line per entry; arguments as compact JSON in one column."""
    writer = csv.writer(_Echo())
    yield writer.writerow(FIELDS)
    for row in _rows(qs):
        row["arguments"] = json.dumps(row["arguments"], ensure_ascii=False, separators=(",", ":"))
        if row["upstream_status"] is None:
            row["upstream_status"] = ""
        yield writer.writerow([row[name] for name in FIELDS])


def iter_jsonl(qs: QuerySet[JournalEntry]) -> Iterator[str]:
    """One JSON object per entry and line."""
    for row in _rows(qs):
        yield json.dumps(row, ensure_ascii=False) + "\n"
