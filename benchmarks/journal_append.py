"""One journal append, in one statement after the head this process left or in the two round
trips taken without that guess (issue 44, fifth session: audit/lanes.py), interleaved in one
process so that the machine's drift falls on both alike.

    .venv/bin/python -m benchmarks.journal_append [--appends 300] [--rounds 16] [--json PATH]

Path: in process, one thread, `audit.journal.record` as a read's entry, PostgreSQL on loopback
(a database made for the run), its synchronous commit included. "two" forgets the process's
heads before each append, so each takes the lane by `SELECT … FOR UPDATE SKIP LOCKED` first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from benchmarks._common import bench_database, setup_django


def measure(appends: int, rounds: int) -> dict[str, Any]:
    from django.db import connections

    from audit import lanes
    from audit.journal import record

    def one() -> None:
        record(
            contour="append",
            channel="mcp-http",
            actor="key:ibg_bench",
            tool="get_order",
            phase="read",
            arguments={"order_id": "0c1d2e3f-0000-4000-8000-0000000000aa"},
            status="ok",
            code="ok",
            message="Счёт найден",
        )

    one()  # opens the lane
    one()
    wall: dict[str, list[float]] = {"one": [], "two": []}
    cpu: dict[str, list[float]] = {"one": [], "two": []}
    for n in range(rounds):
        for mode in ("one", "two") if n % 2 else ("two", "one"):
            started, thread = time.perf_counter(), time.thread_time()
            for _ in range(appends):
                if mode == "two":
                    lanes.FREE_HEADS.forget()
                one()
            wall[mode].append((time.perf_counter() - started) / appends * 1e6)
            cpu[mode].append((time.thread_time() - thread) / appends * 1e6)
    connections.close_all()
    ratios = [a / b for a, b in zip(wall["one"], wall["two"], strict=True)]
    return {
        mode: {
            "wall_us": round(statistics.median(wall[mode])),
            "wall_us_range": [round(min(wall[mode])), round(max(wall[mode]))],
            "thread_cpu_us": round(statistics.median(cpu[mode])),
        }
        for mode in wall
    } | {
        "wall_one_over_two": [
            round(min(ratios), 2),
            round(statistics.median(ratios), 2),
            round(max(ratios), 2),
        ]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--json")
    args = parser.parse_args()
    with bench_database("postgres", "append") as url:
        setup_django(url)
        result = measure(args.appends, args.rounds)
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
