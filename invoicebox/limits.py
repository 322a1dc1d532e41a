"""Upstream protection shared through the database: a rate limiter and a circuit breaker.

Invoicebox allows 100 requests per 30 s per account; several workers on several hosts share
one budget, so the counters live in the database, never in process memory.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from invoicebox.models import CircuitState, UpstreamWindow


@dataclass(frozen=True)
class Refusal:
    """Why a request was not sent, and when trying again makes sense."""

    reason: str  # "rate" | "circuit"
    retry_after: float


def account_key(token: str) -> str:
    # The token itself never reaches a table or a log: only a digest names the account.
    return hashlib.sha256(token.encode()).hexdigest()[:32]


def rate() -> tuple[int, int]:
    limit, _, period = settings.INVOICEBOX_RATE_LIMIT.partition("/")
    return int(limit), int(period)


def admit(account: str) -> Refusal | None:
    """Take one request from the account's budget and pass the circuit; or say why not.

    No transaction and no row lock spans the check: the circuit is one read and the budget one
    conditional upsert, so workers sharing an account wait on each other only for a statement.
    """
    if connection.vendor == "postgresql":
        return _admit_at_once(account, time.time())
    refusal = _circuit(account, *_read_circuit(account))
    if refusal is not None:
        return refusal
    return _take(account, time.time())


# One round trip takes a request from the window, opening the window when it is the first:
# the condition is the sliding-window estimate, `count + 1 <= limit - previous * weight` (for
# an integer count that is `count < floor(limit - carried)`). PostgreSQL and SQLite (3.35+)
# both speak INSERT ... ON CONFLICT ... DO UPDATE ... WHERE ... RETURNING.
# Only table names are formatted into the SQL here and below; every value is a parameter.
_WINDOWS = f'"{UpstreamWindow._meta.db_table}"'
_TAKE_SQL = f"""
INSERT INTO {_WINDOWS} (account, window_start, count)
SELECT %s, %s, 1 WHERE 1 <= %s - COALESCE(
    (SELECT count FROM {_WINDOWS} WHERE account = %s AND window_start = %s), 0) * %s
ON CONFLICT (account, window_start) DO UPDATE SET count = {_WINDOWS}.count + 1
WHERE {_WINDOWS}.count + 1 <= %s - COALESCE(
    (SELECT p.count FROM {_WINDOWS} p WHERE p.account = %s AND p.window_start = %s), 0) * %s
RETURNING count
"""  # noqa: S608


def _window(account: str, now: float) -> tuple[int, int, list[str | int | float]]:
    """(this window's start, the period, the parameters of _TAKE_SQL)."""
    limit, period = rate()
    start = int(now // period) * period
    # Sliding-window estimate: the previous window's requests still "in view", weighted.
    weight = 1 - (now - start) / period
    previous = (account, start - period, weight)
    return start, period, [account, start, limit, *previous, limit, *previous]


def _taken(account: str, count: int | None, start: int, period: int, now: float) -> Refusal | None:
    if count is None:
        return Refusal("rate", max(0.1, math.ceil((start + period - now) * 10) / 10))
    if count == 1:  # this request opened the window: the ones before the previous are done
        UpstreamWindow.objects.filter(account=account, window_start__lt=start - period).delete()
    return None


def _take(account: str, now: float) -> Refusal | None:
    start, period, params = _window(account, now)
    with connection.cursor() as cursor:
        cursor.execute(_TAKE_SQL, params)
        row = cursor.fetchone()
    return _taken(account, None if row is None else row[0], start, period, now)


# PostgreSQL: the circuit read and the budget taken in one round trip (issue 44). The budget is
# taken only when no circuit is open or half-open (`opened_until` set), which is what reading
# the circuit first and then taking the budget did; an open or half-open circuit is then judged
# as before, and a half-open probe that wins takes its budget in a statement of its own.
# (SQLite has no INSERT inside WITH: there the two statements stay.)
_CIRCUITS = f'"{CircuitState._meta.db_table}"'
# " /*prepared*/": sent on every upstream request, so prepared once per connection where
# DATABASE_PREPARED_STATEMENTS says so (tools/models/prepared.py; invoicebox/ imports nothing
# of tools/).
_ADMIT_SQL = f"""
WITH circuit AS (SELECT failures, opened_until FROM {_CIRCUITS} WHERE account = %s),
taken AS ({
    _TAKE_SQL.replace(
        "SELECT %s, %s, 1 WHERE",
        "SELECT %s, %s, 1 WHERE NOT EXISTS (SELECT 1 FROM circuit WHERE opened_until IS NOT NULL) AND",
        1,
    )
})
SELECT (SELECT failures FROM circuit), (SELECT opened_until FROM circuit),
       (SELECT count FROM taken) /*prepared*/"""  # noqa: S608
# The same, committed without waiting for its WAL to reach the disk (issue 44), when it is a
# transaction of its own (autocommit, as on every read and around every upstream request): the
# budget's count is seen by every other process at once as before; only a crash of PostgreSQL
# could lose it, and then only for a call whose journal entry was not committed yet (that
# synchronous commit flushes the WAL written before it, this count's included). One fsync
# per read instead of two: on a disk whose flush takes milliseconds, the read's largest wait.
_ADMIT_ASYNC_SQL = _ADMIT_SQL.replace(
    "(SELECT count FROM taken) /*prepared*/",
    "(SELECT count FROM taken), set_config('synchronous_commit', 'off', true) /*prepared*/",
    1,
)


def _admit_at_once(account: str, now: float) -> Refusal | None:
    start, period, params = _window(account, now)
    with connection.cursor() as cursor:
        # Inside a caller's transaction the setting would reach that transaction's commit.
        sql = _ADMIT_SQL if connection.in_atomic_block else _ADMIT_ASYNC_SQL
        cursor.execute(sql, [account, *params])
        failures, opened_until, count = cursor.fetchone()[:3]
    if opened_until is not None:
        return _circuit(account, failures, opened_until) or _take(account, now)
    _seen.clean = account if not failures else None
    return _taken(account, count, start, period, now)


# Accounts whose circuit this thread just saw closed with no failures counted: a success then
# has nothing to reset, and the read path saves a statement. (A failure another worker records
# meanwhile is concurrent with this success; either order is a true history.)
_seen = threading.local()


# The circuit is read on every upstream request: one plain statement, no ORM query to build.
_CIRCUIT_SQL = (
    f'SELECT failures, opened_until FROM "{CircuitState._meta.db_table}" '  # noqa: S608
    "WHERE account = %s"
)


def _read_circuit(account: str) -> tuple[int, datetime | None]:
    with connection.cursor() as cursor:
        cursor.execute(_CIRCUIT_SQL, [account])
        row = cursor.fetchone()
    if row is None:
        return 0, None
    failures, opened_until = row
    if opened_until is not None and opened_until.tzinfo is None:
        # SQLite hands back the naive UTC value the ORM stored (PostgreSQL an aware one).
        opened_until = opened_until.replace(tzinfo=UTC)
    return failures, opened_until


def _circuit(account: str, failures: int, opened_until: datetime | None) -> Refusal | None:
    _seen.clean = account if failures == 0 and opened_until is None else None
    if opened_until is None:
        return None
    now = timezone.now()
    if opened_until > now:
        return Refusal("circuit", (opened_until - now).total_seconds())
    # Half-open: exactly one request wins this conditional update and becomes the probe;
    # the others keep failing fast until it answers.
    probe_until = now + timedelta(seconds=settings.INVOICEBOX_BREAKER_OPEN_SECONDS)
    won = CircuitState.objects.filter(account=account, opened_until=opened_until).update(
        opened_until=probe_until
    )
    if won:
        return None
    return Refusal("circuit", settings.INVOICEBOX_BREAKER_OPEN_SECONDS)


def record(account: str, *, server_fault: bool) -> None:
    """A 5xx, timeout or network error counts; any other answer closes the circuit."""
    if not server_fault:
        if getattr(_seen, "clean", None) == account:
            return
        CircuitState.objects.filter(account=account).filter(
            Q(failures__gt=0) | Q(opened_until__isnull=False)
        ).update(failures=0, opened_until=None)
        return
    _seen.clean = None
    with transaction.atomic():
        state, _ = CircuitState.objects.select_for_update().get_or_create(account=account)
        state.failures += 1
        if state.failures >= settings.INVOICEBOX_BREAKER_FAILURES:
            state.opened_until = timezone.now() + timedelta(
                seconds=settings.INVOICEBOX_BREAKER_OPEN_SECONDS
            )
        state.save(update_fields=["failures", "opened_until"])
