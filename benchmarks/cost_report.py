"""What a cost_per_call run reports besides its timings: the statements of one MCP read, the
journal's bytes per entry, and the Markdown of the whole run."""

from __future__ import annotations

from typing import Any

from benchmarks._common import md_table
from benchmarks._sql import SqlMeter


def statements_per_call(key: str, args: dict[str, Any], calls: int = 40) -> dict[str, Any]:
    """The database work of one MCP get_order, in this process on the run's database: the
    key and its session (adapters/mcp/http._authenticate), then the core call. Statements as
    sent, grouped; ROLLBACK/COMMIT sent as statements count among them."""
    from adapters.mcp import sessions
    from adapters.mcp.http import CHANNEL, authenticate
    from tools.pipeline import gateway

    header = f"Bearer {key}"
    found, _, _ = authenticate(header, "127.0.0.1", None, False)
    assert found is not None
    sessions.record("bench-session", found.pk, "2025-11-25", {"capabilities": {}})
    actor = f"key:{found.prefix}"
    for _ in range(5):  # warm: lanes opened, last-use and address noted
        gateway.call(found.contour, "get_order", args, channel=CHANNEL, actor=actor)
    meter = SqlMeter()
    with meter.installed():
        for _ in range(calls):
            found, _, facts = authenticate(header, "127.0.0.1", "bench-session", True)
            assert found is not None and facts is not None
            outcome = gateway.call(found.contour, "get_order", args, channel=CHANNEL, actor=actor)
            assert outcome.status == "ok", outcome
    groups = {group: round(count / calls, 2) for group, (count, _) in meter.groups.items()}
    templates = {
        sql[:90]: round(count / calls, 2)
        for sql, (count, _) in sorted(meter.templates.items(), key=lambda item: -item[1][0])
    }
    return {"per_call": round(sum(groups.values()), 2), "groups": groups, "templates": templates}


def journal_sizes(dbname: str) -> dict[str, Any]:
    """Rows and bytes of the journal table and each of its indexes, after the run."""
    import psycopg

    with psycopg.connect(host="127.0.0.1", user="postgres", dbname=dbname, autocommit=True) as conn:
        rows = conn.execute("SELECT count(*) FROM audit_journalentry").fetchone()[0]
        heap = conn.execute("SELECT pg_table_size('audit_journalentry')").fetchone()[0]
        indexes = dict(
            conn.execute(
                "SELECT indexrelname, pg_relation_size(indexrelid) FROM pg_stat_user_indexes "
                "WHERE relname = 'audit_journalentry' ORDER BY 2 DESC"
            ).fetchall()
        )
    per_row = {name: round(size / max(1, rows)) for name, size in indexes.items()}
    return {
        "rows": rows,
        "heap_bytes_per_row": round(heap / max(1, rows)),
        "index_bytes_per_row": per_row,
        "total_bytes_per_row": round((heap + sum(indexes.values())) / max(1, rows)),
    }


def one_client_rows(timed: dict[str, dict[str, Any]]) -> list[list[Any]]:
    ref = timed.get("reference MCP get_order")
    rows = []
    for name, s in timed.items():
        ratio = ""
        if ref and s["cpu_ms_per_call"] and ref["cpu_ms_per_call"]:
            cpu = s["cpu_ms_per_call"] + (s["pg_cpu_ms_per_call"] or 0)
            ratio = f"{s['p50_ms'] / ref['p50_ms']:.2f}× / {cpu / ref['cpu_ms_per_call']:.2f}×"
        rows.append(
            [
                name,
                s["p50_ms"],
                s["p99_ms"],
                s["cpu_ms_per_call"] or "",
                s["pg_cpu_ms_per_call"] or "",
                ratio,
            ]
        )
    return rows


def render(result: dict[str, Any]) -> str:
    rows = one_client_rows(result["sequential"])
    one_client = [
        "p50 ms",
        "p99 ms",
        "CPU ms/call",
        "PostgreSQL CPU ms/call",
        "÷ reference (p50 / CPU incl. PostgreSQL)",
    ]
    alone = (
        "\n\n" + md_table(["one client, each alone", *one_client], one_client_rows(result["alone"]))
        if "alone" in result
        else ""
    )
    st, journal = result["statements"], result["journal"]
    statements = md_table(
        ["statements per MCP get_order (in process)", "count"],
        [["all", st["per_call"]], *st["groups"].items()],
    )
    sizes = (
        f"Journal after the run: {journal['rows']} entries, {journal['total_bytes_per_row']}"
        f" bytes per entry with its indexes (heap {journal['heap_bytes_per_row']}; indexes "
        + ", ".join(f"{k} {v}" for k, v in journal["index_bytes_per_row"].items())
        + ")."
    )
    load = [
        [
            r["server"],
            r["clients"],
            r["rps"],
            r["p50_ms"],
            r["p99_ms"],
            r["errors"],
            r["cpu_ms_per_call"],
            r["pg_cpu_ms_per_call"] or "",
            r["machine_busy_pct"],
            r["uptime"],
        ]
        for r in result["load"]
    ]
    return (
        f"Load average (1/5/15 min) at start {result['uptime_start']}, after the sequential "
        f"part {result['uptime_after_sequential']}, at the end {result['uptime_end']}. "
        f"Gateway env extra: {result['env'] or 'none'}.\n\n"
        + md_table(["one client, interleaved", *one_client], rows)
        + alone
        + "\n\n"
        + md_table(
            [
                "server",
                "clients",
                "req/s",
                "p50 ms",
                "p99 ms",
                "errors",
                "CPU ms/call",
                "PostgreSQL CPU ms/call",
                "machine busy %",
                "load average",
            ],
            load,
        )
        + "\n\n"
        + statements
        + "\n\n"
        + sizes
        + "\n"
    )
