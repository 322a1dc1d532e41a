"""One clock for every comparison that spans processes: the database's.

Two workers whose clocks disagree must still agree whether a claim is stale, a confirmation has
expired, which day a ceiling counts or whether a key still holds: each takes "now" from the
database (PostgreSQL's statement_timestamp(), the same for every connection), never from its
own clock. SQLite is one file on one host, so its processes share the host's clock already.
Inside a query, django.db.models.functions.Now is the same clock (STATEMENT_TIMESTAMP()).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from django.db import connection
from django.utils import timezone

# Tests move time by moving the host's clock (tests/conftest.py's `clock` fixture); a database
# server's clock can't be moved, so while a test does, now() follows the host's on PostgreSQL
# too. Only that fixture enters following_host(); production never does.
_follow_host = False


@contextmanager
def following_host() -> Iterator[None]:
    """now() is the host's clock (timezone.now()) inside, on every database."""
    global _follow_host
    before, _follow_host = _follow_host, True
    try:
        yield
    finally:
        _follow_host = before


def now() -> datetime:
    """The database server's current time (aware, UTC); the host's on SQLite."""
    if connection.vendor != "postgresql" or _follow_host:
        return timezone.now()
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement_timestamp()")
        moment: datetime = cursor.fetchone()[0]
    return moment.astimezone(UTC)
