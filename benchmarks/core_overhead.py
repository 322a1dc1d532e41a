"""Core overhead per call: tools.pipeline.gateway.call() against the Invoicebox client alone, same sandbox."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from benchmarks._common import (
    DATABASES,
    CpuMeter,
    bench_database,
    md_table,
    save,
    setup_django,
    summary_ms,
    timed,
)
from benchmarks._sql import SqlMeter


def _paired_overhead(gateway: list[float], direct: list[float]) -> float:
    diffs = sorted(g - d for g, d in zip(gateway, direct, strict=True))
    return round(diffs[len(diffs) // 2] * 1000, 3)


def _sql_profile(meter: SqlMeter, fn: Callable[[], Any], repeat: int) -> dict[str, Any]:
    """Statements and their time per call, by part of the system (mean of `repeat` calls)."""
    meter.reset()
    meter.active = True
    wall = 0.0
    for _ in range(repeat):
        wall += timed(fn)[0]
    meter.active = False
    groups = {
        name: {"statements": round(count / repeat, 1), "ms": round(seconds / repeat * 1000, 3)}
        for name, (count, seconds) in sorted(meter.groups.items())
    }
    return {"wall_ms": round(wall / repeat * 1000, 3), "groups": groups}


def run(reads: int, writes: int, warmup: int) -> dict[str, Any]:
    from django.db import connection

    from benchmarks._workload import Workload

    w = Workload()
    for _ in range(warmup):
        w.read()
        w.direct_read()
        args = w.new_args()
        w.execute(args, w.prepare(args))
        w.direct_create()()

    # Interleaved, alternating which side goes first, so drift in machine load hits both.
    samples: dict[str, list[float]] = {
        k: [] for k in ("read_gw", "read_direct", "prepare", "execute", "write_direct")
    }

    def measure() -> None:
        for i in range(reads):
            pair = [("read_gw", w.read), ("read_direct", w.direct_read)]
            for key, fn in pair if i % 2 else reversed(pair):
                samples[key].append(timed(fn)[0])
        for i in range(writes):
            args = w.new_args()
            direct = w.direct_create()
            if i % 2:
                samples["write_direct"].append(timed(direct)[0])
            seconds, token = timed(lambda a=args: w.prepare(a))
            samples["prepare"].append(seconds)
            samples["execute"].append(timed(lambda a=args, t=token: w.execute(a, t))[0])
            if not i % 2:
                samples["write_direct"].append(timed(direct)[0])

    with CpuMeter() as load:
        measure()

    # Where the time goes: statements per call by part of the system (not timed above).
    meter = SqlMeter(active=False)
    with meter.installed():
        profile = {
            "read_gw": _sql_profile(meter, w.read, 20),
            "read_direct": _sql_profile(meter, w.direct_read, 20),
        }
        pending = [(a, w.prepare(a)) for a in (w.new_args() for _ in range(20))]
        it = iter(pending)
        profile["execute"] = _sql_profile(meter, lambda: w.execute(*next(it)), 20)
        profile["prepare"] = _sql_profile(meter, lambda: w.prepare(w.new_args()), 20)
        creates = [w.direct_create() for _ in range(20)]
        it2 = iter(creates)
        profile["write_direct"] = _sql_profile(meter, lambda: next(it2)(), 20)

    # What a server process pays on top per request with CONN_MAX_AGE=0 (the default).
    connects = []
    for _ in range(30):
        connection.close()
        connects.append(timed(connection.ensure_connection)[0])

    s = {k: summary_ms(v) for k, v in samples.items()}
    write_full = [p + e for p, e in zip(samples["prepare"], samples["execute"], strict=True)]
    cases = {
        "read (get_order)": {
            "gateway": s["read_gw"],
            "direct": s["read_direct"],
            "overhead_median_ms": round(
                s["read_gw"]["median_ms"] - s["read_direct"]["median_ms"], 3
            ),
            "overhead_paired_median_ms": _paired_overhead(
                samples["read_gw"], samples["read_direct"]
            ),
            "ratio_median": round(s["read_gw"]["median_ms"] / s["read_direct"]["median_ms"], 2),
        },
        "first call of a write (create_order, prepare)": {
            # For create_order the first call sends nothing upstream: all of it is overhead.
            "gateway": s["prepare"],
            "direct": None,
            "overhead_median_ms": s["prepare"]["median_ms"],
            "ratio_median": round(s["prepare"]["median_ms"] / s["write_direct"]["median_ms"], 2),
        },
        "execution (create_order with token)": {
            "gateway": s["execute"],
            "direct": s["write_direct"],
            "overhead_median_ms": round(
                s["execute"]["median_ms"] - s["write_direct"]["median_ms"], 3
            ),
            "overhead_paired_median_ms": _paired_overhead(
                samples["execute"], samples["write_direct"]
            ),
            "ratio_median": round(s["execute"]["median_ms"] / s["write_direct"]["median_ms"], 2),
        },
        "whole write (prepare + execute)": {
            "gateway": summary_ms(write_full),
            "direct": s["write_direct"],
            "overhead_median_ms": round(
                summary_ms(write_full)["median_ms"] - s["write_direct"]["median_ms"], 3
            ),
            "ratio_median": round(
                summary_ms(write_full)["median_ms"] / s["write_direct"]["median_ms"], 2
            ),
        },
    }
    return {
        "cases": cases,
        "sql_profile": profile,
        "cpu": load.result,
        "connect_ms": summary_ms(connects),
        "reads": reads,
        "writes": writes,
    }


def render(db: str, data: dict[str, Any]) -> str:
    rows = []
    for name, case in data["cases"].items():
        gw, direct = case["gateway"], case["direct"]
        rows.append(
            [
                name,
                gw["median_ms"],
                gw["p99_ms"],
                direct["median_ms"] if direct else "— (no upstream call)",
                direct["p99_ms"] if direct else "—",
                case["overhead_median_ms"],
                f"{case['ratio_median']}×",
            ]
        )
    cpu = data["cpu"]
    out = [
        f"Database: **{db}**; {data['reads']} reads, {data['writes']} writes, interleaved. "
        f"CPU during the timed part (% of one core): machine {cpu['machine_busy_pct']}, "
        f"this process {cpu['ours_pct']}, others {cpu['others_pct']} (PostgreSQL included).",
        "",
        md_table(
            [
                "call",
                "gateway median ms",
                "gateway p99 ms",
                "direct client median ms",
                "direct p99 ms",
                "overhead median ms",
                "ratio (median)",
            ],
            rows,
        ),
        "",
        "Ratio of the first call of a write is against the direct create_order.",
        "",
        "Statements per call and their time (ms), by part of the system:",
        "",
    ]
    groups = sorted({g for p in data["sql_profile"].values() for g in p["groups"]})
    prow = []
    for name, prof in data["sql_profile"].items():
        cells = [
            f"{prof['groups'][g]['statements']:g} / {prof['groups'][g]['ms']:.2f}"
            if g in prof["groups"]
            else "—"
            for g in groups
        ]
        sql_ms = sum(v["ms"] for v in prof["groups"].values())
        prow.append([name, prof["wall_ms"], round(sql_ms, 2), *cells])
    out.append(md_table(["call", "wall ms", "SQL+commit ms", *groups], prow))
    out += [
        "",
        f"Connection setup (paid per request with CONN_MAX_AGE=0): median "
        f"{data['connect_ms']['median_ms']} ms, p99 {data['connect_ms']['p99_ms']} ms "
        "(not included above: the benchmark keeps one connection).",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", choices=DATABASES, default="sqlite")
    parser.add_argument("--reads", type=int, default=400)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args(argv)
    started = time.monotonic()
    with bench_database(args.db, "core") as url:
        setup_django(url)
        data = run(args.reads, args.writes, args.warmup)
    data["db"] = args.db
    save(f"core_overhead-{args.db}", data, render(args.db, data), started)


if __name__ == "__main__":
    main()
