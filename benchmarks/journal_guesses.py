"""How often a process's guess of a lane head misses when several processes write one contour
(issue 44, fifth session: audit/lanes.py writes an entry in one statement after the head this
process left, and falls back to the two round trips when another process moved it).

    .venv/bin/python -m benchmarks.journal_guesses [--processes 1 2 4] [--threads 8]
        [--entries 400] [--json PATH]

Each process (its own interpreter, as a worker) appends `--entries` entries per thread to one
contour from `--threads` threads, all processes at once, on a PostgreSQL database made for the
run. Each counts, around the real append, the guesses it tried and those that wrote nothing;
the journal is verified afterwards. Path: in process, PostgreSQL on loopback, no server.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks._common import bench_database, setup_django


def _writer(
    database_url: str, contour: str, threads: int, entries: int, start: Any, out: Any
) -> None:
    setup_django(database_url, migrate=False)
    from django.db import connections

    from audit import lanes
    from audit.journal import record

    tried = missed = 0
    original = lanes._append_after

    def counted(*args: Any) -> bool:
        nonlocal tried, missed
        tried += 1
        done = original(*args)
        missed += not done
        return done

    lanes._append_after = counted  # counting only: the real statement runs

    def write(thread: int) -> None:
        try:
            for n in range(entries):
                record(
                    contour=contour,
                    channel="rest",
                    actor=f"key:bench_{thread}",
                    tool="get_order",
                    phase="read",
                    arguments={"n": n},
                    status="ok",
                    code="ok",
                    message="",
                )
        finally:
            connections.close_all()

    start.wait()
    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(write, range(threads)))
    out.put({"tried": tried, "missed": missed, "seconds": time.perf_counter() - began})


def run(url: str, processes: int, threads: int, entries: int) -> dict[str, Any]:
    """One contour of its own, written by `processes` processes at once."""
    from django.db import connections

    from audit.journal import record
    from audit.models import JournalEntry
    from audit.walk import verify_chain

    contour = f"guesses-{processes}"
    record(  # the contour's first lane, opened through the ORM before the writers start
        contour=contour,
        channel="rest",
        actor="bench",
        tool="get_order",
        phase="read",
        arguments={},
        status="ok",
        code="ok",
        message="",
    )
    connections.close_all()
    context = multiprocessing.get_context("spawn")
    start, out = context.Event(), context.Queue()
    workers = [
        context.Process(target=_writer, args=(url, contour, threads, entries, start, out))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    start.set()
    results = [out.get(timeout=600) for _ in workers]
    for worker in workers:
        worker.join()
    written = JournalEntry.objects.filter(contour=contour).count() - 1
    lanes_used = JournalEntry.objects.filter(contour=contour).values("chain").distinct().count()
    broken = verify_chain()
    connections.close_all()
    tried = sum(r["tried"] for r in results)
    missed = sum(r["missed"] for r in results)
    return {
        "processes": processes,
        "threads": threads,
        "entries": written,
        "guesses_tried": tried,
        "guesses_missed": missed,
        "missed_pct": round(100 * missed / tried, 2) if tried else None,
        "one_statement_pct": round(100 * (tried - missed) / written, 2) if written else None,
        "lanes_used": lanes_used,
        "entries_per_second": round(written / max(r["seconds"] for r in results), 1),
        "journal_verified": broken is None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--entries", type=int, default=400)
    parser.add_argument("--json")
    args = parser.parse_args()
    with bench_database("postgres", "guesses") as url:
        setup_django(url)
        rows = [run(url, p, args.threads, args.entries) for p in args.processes]
    print(
        "| processes | threads | entries | guesses tried | missed | missed % | in one statement % "
        "| lanes used | entries/s | journal verified |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['processes']} | {r['threads']} | {r['entries']} | {r['guesses_tried']} "
            f"| {r['guesses_missed']} | {r['missed_pct']} | {r['one_statement_pct']} "
            f"| {r['lanes_used']} | {r['entries_per_second']} | {r['journal_verified']} |"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
