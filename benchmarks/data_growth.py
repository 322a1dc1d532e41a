"""Cost as data grows: per-call latency and journal export at 0, 100 000 and 1 000 000 rows."""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from typing import Any

from benchmarks._common import (
    BENCH_ENV,
    DATABASES,
    ROOT,
    CpuMeter,
    bench_database,
    md_table,
    save,
    setup_django,
    summary_ms,
    timed,
)
from benchmarks._sql import SqlMeter

GROWN_TABLES = ("audit_journalentry", "tools_pendingconfirmation")

# Synthetic rows, one SQL statement per table over a generated series `g` (start..end).
# The journal rows are NOT hash-chained: they form a chain "synthetic" of their own that no
# call appends to (verify_journal would report its first entry as broken; nothing here runs
# it). Hashes are unique 64-hex strings.
PG_SERIES = "generate_series(%(start)s, %(end)s) AS s(g)"
SQLITE_SERIES = (
    "(WITH RECURSIVE s(g) AS (SELECT %(start)s UNION ALL SELECT g + 1 FROM s "
    "WHERE g < %(end)s) SELECT g FROM s) AS s"
)


def _pick(values: list[str], expr: str = "g") -> str:
    cases = " ".join(f"WHEN {i} THEN '{v}'" for i, v in enumerate(values))
    return f"(CASE ({expr}) %% {len(values)} {cases} END)"


def _expressions(vendor: str, contour_id: int) -> dict[str, dict[str, str]]:
    pg = vendor == "postgresql"

    def hex64(salt: str) -> str:
        if pg:
            return f"md5(g::text || '{salt}') || md5(g::text || '{salt}x')"
        return "lower(hex(randomblob(32)))"

    def ago(seconds: str) -> str:
        if pg:
            return f"(now() - make_interval(secs => ({seconds})))"
        return f"strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now', '-' || ({seconds}) || ' seconds')"

    def later(moment: str, seconds: int) -> str:
        if pg:
            return f"({moment} + interval '{seconds} seconds')"
        return f"strftime('%%Y-%%m-%%d %%H:%%M:%%f', {moment}, '+{seconds} seconds')"

    def json_args() -> str:
        if pg:
            return "jsonb_build_object('order_id', md5(g::text), 'page', g %% 10)"
        return "json_object('order_id', lower(hex(randomblob(16))), 'page', g %% 10)"

    tools = ["get_order", "find_orders", "create_order", "create_order"]
    journal = {
        "id": "g",
        "at": ago("(%(end)s - g) * 2"),
        "contour": _pick(["bench", "shop-a", "shop-b", "shop-c"]),
        "channel": _pick(["rest", "mcp-http", "openai", "text"]),
        "actor": "'key:ibg_synthetic'",
        "tool": _pick(tools),
        "phase": _pick(["read", "read", "prepare", "execute"]),
        "arguments": json_args(),
        "status": _pick(["ok", "ok", "confirmation_required", "ok"]),
        "code": _pick(["ok", "ok", "confirmation_required", "ok"]),
        "message": "'Счёт по идентификатору: готово'",
        "upstream_request_id": hex64("r") if pg else "lower(hex(randomblob(16)))",
        "upstream_status": "200",
        "duration_ms": "(10 + g %% 50)",
        "prev_hash": hex64("p"),
        "hash": hex64("h"),
        # A chain of their own, so the live chains' heads and places are untouched.
        "chain": "'synthetic'",
        "seq": "g",
    }
    created = ago("(g %% 2592000)")  # spread over 30 days
    executed = "(g %% 10 < 6)"
    confirmation = {
        "id": "gen_random_uuid()" if pg else "lower(hex(randomblob(16)))",
        "contour_id": str(contour_id),
        "tool": "'create_order'",
        "arguments": json_args(),
        "args_hash": hex64("a"),
        "summary": "'Выставить счёт на 366,00 ₽ (синтетическая запись)'",
        "summary_data": "'{}'",
        "token_hash": hex64("t"),
        "status": f"(CASE WHEN {executed} THEN 'executed' WHEN g %% 10 < 9 THEN 'expired' "
        "ELSE 'pending' END)",
        "created_by": "'key:ibg_synthetic'",
        "created_at": created,
        "expires_at": later(created, 900),
        "executed_at": f"(CASE WHEN {executed} THEN {later(created, 30)} END)",
        "amount": "36600",
        "currency": "'RUB'",
    }
    return {"audit_journalentry": journal, "tools_pendingconfirmation": confirmation}


def _insert(model: Any, exprs: dict[str, str], start: int, end: int) -> None:
    """INSERT ... SELECT over a series; fields not named get their default or NULL, so a
    field added to the model later does not break the benchmark."""
    from django.db import connection

    columns, values, params = [], [], {"start": start, "end": end}
    for fld in model._meta.concrete_fields:
        if fld.column in exprs:
            values.append(exprs[fld.column])
        elif fld.null and not fld.has_default():
            continue
        elif (default := fld.get_default()) is not None:
            params[fld.column] = fld.get_db_prep_save(default, connection)
            values.append(f"%({fld.column})s")
        else:
            raise RuntimeError(f"{model.__name__}.{fld.name}: no synthetic value, no default")
        columns.append(connection.ops.quote_name(fld.column))
    pg = connection.vendor == "postgresql"
    series = PG_SERIES if pg else SQLITE_SERIES
    sql = (
        f"INSERT INTO {model._meta.db_table} ({', '.join(columns)}) "  # noqa: S608
        f"SELECT {', '.join(values)} FROM {series}"
    )
    if not pg:
        # SQLite's driver takes named parameters as :name.
        sql = re.sub(r"%\((\w+)\)s", r":\1", sql).replace("%%", "%")
        with connection.cursor() as cursor:
            cursor.connection.execute(sql, params)
        return
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def grow(contour_id: int, journal_rows: int, confirmations: int) -> float:
    """Append synthetic rows; move the journal head past them. Returns seconds spent."""
    from django.core.management.color import no_style
    from django.db import connection, transaction

    from audit.models import JournalEntry
    from tools.models import PendingConfirmation

    start = time.monotonic()
    exprs = _expressions(connection.vendor, contour_id)
    with transaction.atomic():
        if journal_rows:
            top = JournalEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0
            _insert(JournalEntry, exprs["audit_journalentry"], top + 1, top + journal_rows)
            # Ids were given explicitly: move the table's sequence past them.
            with connection.cursor() as cursor:
                for statement in connection.ops.sequence_reset_sql(no_style(), [JournalEntry]):
                    cursor.execute(statement)
        if confirmations:
            offset = PendingConfirmation.objects.count() + 1
            _insert(
                PendingConfirmation,
                exprs["tools_pendingconfirmation"],
                offset,
                offset + confirmations - 1,
            )
    # VACUUM sets hint bits and the visibility map the way a settled table has them; without
    # it the first reads after a bulk insert write pages, which no production call would see.
    analyze = "VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE"
    with connection.cursor() as cursor:
        for table in GROWN_TABLES:
            cursor.execute(f"{analyze} {table}")
    return time.monotonic() - start


def export(url: str, fmt: str, extra: list[str] | None = None) -> dict[str, Any]:
    """manage.py export_journal to /dev/null: wall time and the child's peak RSS (wait4)."""
    env = {**os.environ, **BENCH_ENV, "DATABASE_URL": url}
    start = time.monotonic()
    with open(os.devnull, "wb") as sink:
        child = subprocess.Popen(  # noqa: S603
            [sys.executable, "manage.py", "export_journal", "--format", fmt, *(extra or [])],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.PIPE,
        )
        _, status, usage = os.wait4(child.pid, 0)
    seconds = time.monotonic() - start
    stderr = child.stderr.read().decode() if child.stderr else ""
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"export_journal --format {fmt} failed: {stderr[-2000:]}")
    return {
        "format": fmt,
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
    }


def _short(sql: str) -> str:
    """SELECT <columns> FROM ... as SELECT … FROM ...: the part that says what is looked up."""
    head, sep, rest = sql.partition(" FROM ")
    return (head[:7] + "… FROM " + rest)[:400] if sep else sql[:400]


def _explain(sql: str, params: Any) -> str:
    from django.db import connection

    pg = connection.vendor == "postgresql"
    plain_select = sql.lstrip().upper().startswith("SELECT") and "FOR UPDATE" not in sql.upper()
    prefix = (
        ("EXPLAIN (ANALYZE, BUFFERS) " if plain_select else "EXPLAIN ")
        if pg
        else "EXPLAIN QUERY PLAN "
    )
    with connection.cursor() as cursor:
        cursor.execute(prefix + sql, params)
        rows = cursor.fetchall()
    return "\n".join(str(row[-1]) for row in rows)


def run(args: argparse.Namespace, url: str) -> dict[str, Any]:
    from django.db import connection

    from benchmarks._workload import Workload

    w = Workload()
    for _ in range(10):
        w.read()
        a = w.new_args()
        w.execute(a, w.prepare(a))
        w.direct_read()
        w.direct_create()()

    sizes = sorted(int(s) for s in args.sizes.split(","))
    stages: list[dict[str, Any]] = []
    templates: dict[int, dict[str, tuple[int, float]]] = {}
    samples_of: dict[str, Any] = {}
    grown = 0
    meter = SqlMeter(active=False)
    for size in sizes:
        fill_seconds = grow(w.contour.pk, size - grown, size - grown) if size > grown else 0.0
        grown = size
        # The direct client calls touch none of the grown tables: they are the control that
        # tells a slower machine from a slower query, so each size is judged by the ratio.
        samples: dict[str, list[float]] = {
            k: [] for k in ("read", "prepare", "execute", "direct_read", "direct_write")
        }
        meter.reset()
        with meter.installed(), CpuMeter() as load:
            meter.active = True
            for _ in range(args.calls):
                samples["direct_read"].append(timed(w.direct_read)[0])
                samples["read"].append(timed(w.read)[0])
                a = w.new_args()
                seconds, token = timed(lambda a=a: w.prepare(a))
                samples["prepare"].append(seconds)
                samples["execute"].append(timed(lambda a=a, t=token: w.execute(a, t))[0])
                samples["direct_write"].append(timed(w.direct_create())[0])
            meter.active = False
        templates[size] = {k: (v[0], v[1]) for k, v in meter.templates.items()}
        samples_of.update(meter.samples)
        stage: dict[str, Any] = {
            "size": size,
            "fill_seconds": round(fill_seconds, 1),
            "cpu": load.result,
            **{k: summary_ms(v) for k, v in samples.items()},
        }
        stage["read_vs_direct"] = round(
            stage["read"]["median_ms"] / stage["direct_read"]["median_ms"], 2
        )
        for kind in ("prepare", "execute"):
            stage[f"{kind}_vs_direct"] = round(
                stage[kind]["median_ms"] / stage["direct_write"]["median_ms"], 2
            )
        if args.export:
            stage["export"] = [export(url, fmt) for fmt in ("csv", "jsonl")]
        stages.append(stage)
        print(
            f"  size {size:>9}: read {stage['read']['median_ms']} ms "
            f"({stage['read_vs_direct']}× direct), prepare {stage['prepare']['median_ms']} ms, "
            f"execute {stage['execute']['median_ms']} ms ({stage['execute_vs_direct']}× direct)"
            + (f", export {stage['export']}" if args.export else ""),
            flush=True,
        )

    # Which statements grew: mean time per execution, smallest size against the largest.
    small, large = templates[sizes[0]], templates[sizes[-1]]
    growth = []
    for sql, (count, seconds) in large.items():
        if sql in small and small[sql][0]:
            before = small[sql][1] / small[sql][0] * 1000
            after = seconds / count * 1000
            growth.append(
                {
                    "sql": sql,
                    "calls_per_stage": count,
                    "mean_ms_small": round(before, 3),
                    "mean_ms_large": round(after, 3),
                    "ratio": round(after / before, 2) if before else None,
                }
            )
    # Statements on tables that did not grow slow down only with the machine: their median
    # ratio is the control a grown-table statement is compared with.
    control = [
        g["ratio"] for g in growth if g["ratio"] and not any(t in g["sql"] for t in GROWN_TABLES)
    ]
    control_ratio = statistics.median(control) if control else 1.0
    for g in growth:
        g["grown_table"] = any(t in g["sql"] for t in GROWN_TABLES)
        g["vs_control"] = round(g["ratio"] / control_ratio, 2) if g["ratio"] else None
    growth.sort(key=lambda row: -(row["vs_control"] or 0))
    plans = {}
    for sql, params in samples_of.items():
        if sql.lstrip().upper().startswith("SELECT") and any(t in sql for t in GROWN_TABLES):
            plans[_short(sql)] = _explain(sql, params)
    baseline_rss = export(url, "csv", ["--since", "2999-01-01"]) if args.export else None
    return {
        "stages": stages,
        "statement_growth": growth,
        "control_ratio": round(control_ratio, 2),
        "plans": plans,
        "export_baseline_empty": baseline_rss,
        "calls": args.calls,
        "vendor": connection.vendor,
    }


def render(db: str, data: dict[str, Any]) -> str:
    stages = data["stages"]
    rows = []
    for st in stages:
        rows.append(
            [
                f"{st['size']:,}",
                st["read"]["median_ms"],
                st["read"]["p99_ms"],
                st["direct_read"]["median_ms"],
                f"{st['read_vs_direct']}×",
                st["prepare"]["median_ms"],
                st["prepare"]["p99_ms"],
                st["execute"]["median_ms"],
                st["execute"]["p99_ms"],
                st["direct_write"]["median_ms"],
                f"{st['execute_vs_direct']}×",
                st["cpu"]["others_pct"],
            ]
        )
    out = [
        f"Database: **{db}**; synthetic journal entries and pending confirmations (same "
        f"contour, same tool as the calls) at each size; {data['calls']} calls of each kind "
        "per size. The direct client calls touch none of the grown tables: their time is "
        "the control for machine load, so flat means a flat ratio.",
        "",
        md_table(
            [
                "rows in each table",
                "read median ms",
                "read p99",
                "direct read median",
                "read ÷ direct",
                "prepare median ms",
                "prepare p99",
                "execute median ms",
                "execute p99",
                "direct write median",
                "execute ÷ direct",
                "other load % of a core",
            ],
            rows,
        ),
    ]
    if "export" in stages[0]:
        erows = [
            [f"{st['size']:,}", e["format"], e["seconds"], e["peak_rss_mb"]]
            for st in stages
            for e in st["export"]
        ]
        empty = data["export_baseline_empty"]
        out += [
            "",
            "`manage.py export_journal --format csv|jsonl > /dev/null` (peak RSS of the "
            "process, from wait4):",
            "",
            md_table(["entries", "format", "seconds", "peak RSS MB"], erows),
            "",
            f"Same command selecting no rows (Django start-up only): peak RSS "
            f"{empty['peak_rss_mb']} MB.",
        ]
    grown = [g for g in data["statement_growth"] if g["grown_table"]]
    out += [
        "",
        f"Per-call statements on the grown tables, mean time at the smallest and the "
        f"largest size; control = median ratio of the statements on tables that did not "
        f"grow ({data['control_ratio']}×):",
        "",
    ]
    out.append(
        md_table(
            ["statement", "mean ms small", "mean ms large", "ratio", "÷ control"],
            [
                [
                    f"`{_short(g['sql'])[:150]}`",
                    g["mean_ms_small"],
                    g["mean_ms_large"],
                    g["ratio"],
                    g["vs_control"],
                ]
                for g in grown
            ],
        )
        if grown
        else "none."
    )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", choices=DATABASES, default="postgres")
    parser.add_argument("--sizes", default="0,100000,1000000")
    parser.add_argument("--calls", type=int, default=100, help="calls of each kind per size")
    parser.add_argument("--no-export", dest="export", action="store_false")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with bench_database(args.db, "growth") as url:
        setup_django(url)
        data = run(args, url)
    data["db"] = args.db
    text = render(args.db, data)
    text += "\n\nPlans at the largest size of the per-call SELECTs on the grown tables:\n"
    for sql, plan in data["plans"].items():
        text += f"\n```\n{sql}\n{plan}\n```\n"
    save(f"data_growth-{args.db}", data, text, started)


if __name__ == "__main__":
    main()
