"""Filling a gateway's growing tables by script for journal_growth (issue 43): fast, and genuine
where verification reads.

The journal: every entry is genuine, HMAC-chained per contour exactly as audit.journal.record()
makes it (seq, prev_hash, hash from audit.journal.entry_hash under the signing key), built in
this process and streamed into PostgreSQL with COPY (psycopg's copy) in chunks. For a large
fill the table's secondary indexes and unique constraints are dropped first and rebuilt from
their own definitions afterwards (one sorted build each instead of 10 M random inserts), then
the chain heads are moved to the last entries and the table is VACUUM ANALYZEd.

The other tables that grow (confirmations, operations, API keys, MCP sessions, tracked orders,
payment notifications) are not chained: their rows are generated server-side with
INSERT ... SELECT over generate_series (benchmarks.data_growth._insert).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime
from types import SimpleNamespace
from typing import Any

CHUNK = 100_000
TABLE = "audit_journalentry"
TOOLS = ("get_order", "find_orders", "get_order", "create_order", "get_balance")
PHASES = {"create_order": "prepare"}
CHANNELS = ("rest", "mcp-http", "openai", "mcp-http", "text")
MESSAGES = {
    "get_order": "Счёт по идентификатору: готово",
    "find_orders": "Найдено счетов: 20",
    "create_order": "Нужно подтверждение: выставить счёт на 366,00 ₽",
    "get_balance": "Баланс магазина: готово",
}

Place = Callable[[int, datetime], str]


def heads() -> dict[str, tuple[int, str]]:
    from audit.models import ChainHead

    return {h.chain: (h.last_seq, h.last_hash) for h in ChainHead.objects.all()}


def _row(n: int, at: datetime, contour: str, seq: int, prev: str, key_id: str) -> Any:
    tool = TOOLS[n % len(TOOLS)]
    prepare = tool == "create_order"
    return SimpleNamespace(
        id=None,
        at=at,
        contour=contour,
        channel=CHANNELS[n % len(CHANNELS)],
        actor=f"key:ibg_{n % 9973:05d}",
        tool=tool,
        phase=PHASES.get(tool, "read"),
        arguments=(
            {"amount": 36600 + n % 1000, "description": f"Заказ №{n}", "currency": "RUB"}
            if prepare
            else {"order_id": f"ord-{n:09d}", "page": n % 10}
        ),
        status="confirmation_required" if prepare else ("ok", "ok", "ok", "error")[n % 4],
        code="" if prepare or n % 4 != 3 else "upstream_unavailable",
        message=MESSAGES[tool],
        confirmation_id=f"{n:032x}" if prepare else "",
        operation_key="",
        upstream_request_id="" if prepare else f"req-{n:012d}",
        upstream_status=None if prepare else 200,
        duration_ms=5 + n % 300,
        spool_id="",
        spooled_at=None,
        duplicate_of=None,
        chain=contour,
        seq=seq,
        form=2,
        prev_hash=prev,
        key_id=key_id,
    )


def _line(e: Any) -> str:
    # COPY's text format; no value here holds a tab, a newline or a backslash.
    status = "\\N" if e.upstream_status is None else str(e.upstream_status)
    args = json.dumps(e.arguments, ensure_ascii=False, separators=(",", ":"))
    return (
        f"{e.at.isoformat()}\t{e.contour}\t{e.channel}\t{e.actor}\t{e.tool}\t{e.phase}\t{args}\t"
        f"{e.status}\t{e.code}\t{e.message}\t{e.confirmation_id}\t{e.operation_key}\t"
        f"{e.upstream_request_id}\t{status}\t{e.duration_ms}\t{e.key_id}\t{e.chain}\t{e.seq}\t"
        f"{e.form}\t{e.prev_hash}\t{e.hash}\t\n"
    )


def _secondary(cursor: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The journal's unique constraints and other indexes (not the primary key), by definition."""
    cursor.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = %s::regclass AND contype = 'u'",
        [TABLE],
    )
    constraints = cursor.fetchall()
    cursor.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s "
        "AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass)",
        [TABLE, TABLE],
    )
    return constraints, cursor.fetchall()


def fill_journal(
    count: int, start: datetime, end: datetime, place: Place, *, rebuild_indexes: bool = False
) -> dict[str, float]:
    """`count` genuine entries with `at` spread evenly over [start, end); `place(n, at)` names
    each one's contour (its chain). Continues every chain from its head; moves the heads."""
    from django.db import connection

    from audit import journal
    from audit.models import ROW_FIELDS, ZERO_HASH, ChainHead, JournalEntry

    key_id = journal.signing_key_id()
    secret = journal.journal_keys()[key_id]
    state = heads()
    step = (end - start) / max(count, 1)
    timings: dict[str, float] = {}
    began = time.perf_counter()
    connection.ensure_connection()
    raw = connection.connection
    saved: tuple[list[tuple[str, str]], list[tuple[str, str]]] = ([], [])
    with raw.cursor() as cursor:
        # The settings bound every statement (15 s by default); an index build is not a call.
        cursor.execute("SET statement_timeout = 0")
        if rebuild_indexes:
            saved = _secondary(cursor)
            for name, _ in saved[0]:
                cursor.execute(f'ALTER TABLE {TABLE} DROP CONSTRAINT "{name}"')
            for name, _ in saved[1]:
                cursor.execute(f'DROP INDEX "{name}"')
        # every row field but the id the sequence gives, and the spool's id (empty)
        columns = (*ROW_FIELDS[1:], "spool_id")
        copy_sql = f"COPY {TABLE} ({', '.join(columns)}) FROM STDIN"
        for first in range(0, count, CHUNK):
            lines = []
            for n in range(first, min(first + CHUNK, count)):
                at = start + step * n
                contour = place(n, at)
                seq, prev = state.get(contour, (0, ZERO_HASH))
                entry = _row(n, at, contour, seq + 1, prev, key_id)
                entry.hash = journal.entry_hash(prev, entry, secret)
                state[contour] = (seq + 1, entry.hash)
                lines.append(_line(entry))
            with cursor.copy(copy_sql) as copy:
                copy.write("".join(lines))
            if count >= 10 * CHUNK:
                print(f"    {first + len(lines):>10} entries, {time.perf_counter() - began:.0f} s")
        timings["copy_s"] = round(time.perf_counter() - began, 1)
        if rebuild_indexes:
            built = time.perf_counter()
            cursor.execute("SET maintenance_work_mem = '512MB'")
            for name, definition in saved[0]:
                cursor.execute(f'ALTER TABLE {TABLE} ADD CONSTRAINT "{name}" {definition}')
            for _, definition in saved[1]:
                cursor.execute(definition)
            timings["index_rebuild_s"] = round(time.perf_counter() - built, 1)
    for chain, (seq, last_hash) in state.items():
        if seq:
            last_id = (
                JournalEntry.objects.filter(chain=chain, seq=seq).values_list("id", flat=True).get()
            )
            ChainHead.objects.update_or_create(
                chain=chain, defaults={"last_seq": seq, "last_id": last_id, "last_hash": last_hash}
            )
    if count >= 10 * CHUNK:
        vacuumed = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM ANALYZE {TABLE}")
        timings["vacuum_s"] = round(time.perf_counter() - vacuumed, 1)
    return timings


def _ago(seconds: str) -> str:
    return f"(now() - make_interval(secs => ({seconds})))"


def fill_others(
    contour_ids: list[int], bench_id: int, scale: float, *, salt: str, live: int
) -> dict[str, int]:
    """The other growing tables at the issue's ratios (per 5 M entries: 10 000 keys, 100 000
    MCP sessions, 100 000 tracked orders, 50 000 confirmations, 30 000 operations), times
    `scale`. A third of the operations (all finished) are the measured contour's; every MCP
    session is past its idle timeout except `live` ones on other keys (keep them under every
    cap). `salt` keeps the unique values of one fill apart from another's."""
    from django.core.management.color import no_style
    from django.db import connection

    from adapters.mcp.models import McpSession
    from benchmarks.data_growth import _insert, _pick
    from tools.models import (
        ApiKey,
        Operation,
        PendingConfirmation,
        ProcessedNotification,
        TrackedOrder,
    )

    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 0")
    n = {
        "keys": int(10_000 * scale),
        "sessions": int(100_000 * scale),
        "orders": int(100_000 * scale),
        "notifications": int(100_000 * scale),
        "confirmations": int(50_000 * scale),
        "operations": int(30_000 * scale),
    }
    auto_id = [ApiKey, Operation, TrackedOrder, ProcessedNotification]
    top = {
        m: (m.objects.order_by("-id").values_list("id", flat=True).first() or 0) for m in auto_id
    }
    ids = ",".join(str(i) for i in contour_ids)
    contour = f"(ARRAY[{ids}])[1 + g %% {len(contour_ids)}]"
    bench_ops = n["operations"] // 3
    hex64 = f"md5(g::text || '{salt}x') || md5(g::text || 'y')"
    _insert(
        ApiKey,
        {
            "id": f"(g + {top[ApiKey]})",
            "contour_id": contour,
            "label": "'synthetic'",
            "prefix": "'ibg_' || substr(md5(g::text), 1, 8)",
            "key_hash": hex64,
            "created_at": _ago("g * 60"),
            "toolsets": "'[]'",
            "tools": "'[]'",
        },
        1,
        n["keys"],
    )
    first_key = (
        ApiKey.objects.filter(label="synthetic").order_by("id").values_list("id", flat=True)[0]
    )
    _insert(
        McpSession,
        {
            "session_id": f"md5(g::text || '{salt}s')",
            "key_id": f"({first_key} + g %% {n['keys']})",
            "protocol_version": "'2025-11-25'",
            "client_params": """'{"capabilities": {}, "clientInfo": {"name": "bench"}}'""",
            "opened_at": _ago("3600 + g * 25"),
            # `live` seen within the last 10 minutes, the rest idle for 1 h to a month.
            "last_seen": f"(CASE WHEN g <= {live} THEN {_ago('g * 4')} ELSE {_ago('3600 + g * 25')} END)",
            "used": "(g %% 5 <> 0)",
        },
        1,
        n["sessions"],
    )
    executed = "(g %% 10 < 6)"
    # Confirmation g (1..operations) is the one operation g executed; the rest expired or were
    # rejected. The measured contour owns the first third of the operations.
    own = f"(CASE WHEN g <= {bench_ops} THEN {bench_id} ELSE {contour} END)"
    _insert(
        PendingConfirmation,
        {
            "id": f"md5(g::text || '{salt}c')::uuid",
            "contour_id": own,
            "tool": "'create_order'",
            "arguments": "jsonb_build_object('amount', 36600, 'n', g)",
            "args_hash": f"md5(g::text || '{salt}a') || md5(g::text || 'b')",
            "summary": "'Выставить счёт на 366,00 ₽ (синтетическая запись)'",
            "summary_data": "'{}'",
            "token_hash": hex64,
            "status": f"(CASE WHEN g <= {n['operations']} OR {executed} THEN 'executed' "
            "WHEN g %% 10 < 9 THEN 'expired' ELSE 'rejected' END)",
            "created_by": "'key:ibg_synthetic'",
            "created_at": _ago("g * 50"),
            "expires_at": _ago("g * 50 - 900"),
            "amount": "36600",
            "currency": "'RUB'",
        },
        1,
        n["confirmations"],
    )
    _insert(
        Operation,
        {
            "id": f"(g + {top[Operation]})",
            "key": f"md5(g::text || '{salt}k')",
            "contour_id": own,
            "tool": "'create_order'",
            "confirmation_id": f"md5(g::text || '{salt}c')::uuid",
            "merchant_order_id": f"'bench-{salt}' || g",
            "amount": "36600",
            "currency": "'RUB'",
            "state": "(CASE WHEN g %% 50 = 0 THEN 'failed' ELSE 'done' END)",
            "attempts": "1",
            "created_at": _ago("g * 50 - 30"),
            "started_at": _ago("g * 50 - 30"),
            "finished_at": _ago("g * 50 - 31"),
        },
        1,
        n["operations"],
    )
    _insert(
        TrackedOrder,
        {
            "id": f"(g + {top[TrackedOrder]})",
            "contour_id": contour,
            "order_id": f"'ord-{salt}' || g",
            "merchant_order_id": "'shop-' || g",
            "amount": "36600",
            "currency": "'RUB'",
            "status": _pick(["created", "completed", "completed", "expired"]),
            "created_at": _ago("g * 25"),
            "updated_at": _ago("g * 25"),
        },
        1,
        n["orders"],
    )
    _insert(
        ProcessedNotification,
        {
            "id": f"(g + {top[ProcessedNotification]})",
            "contour_id": contour,
            "notification_id": f"'ord-{salt}' || g",
            "order_id": f"'ord-{salt}' || g",
            "status": "'completed'",
            "answer": """'{"status": "success"}'""",
            "received_at": _ago("g * 25"),
        },
        1,
        n["notifications"],
    )
    with connection.cursor() as cursor:
        for statement in connection.ops.sequence_reset_sql(no_style(), auto_id):
            cursor.execute(statement)
        for model in (
            ApiKey,
            McpSession,
            PendingConfirmation,
            Operation,
            TrackedOrder,
            ProcessedNotification,
        ):
            cursor.execute(f"VACUUM ANALYZE {model._meta.db_table}")
    return n
