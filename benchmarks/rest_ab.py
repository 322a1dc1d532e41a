"""REST get_order and the REST floor of this tree and another (`git archive` unpacked, with
benchmarks/rest_floor.py copied in), interleaved call by call at one client, as
benchmarks.cost_per_call's one-client part but with REST only, so many more calls fit:

    .venv/bin/python -m benchmarks.rest_ab /tmp/cmp/main [--calls 1000] [--rounds 2]
        [--port 18130] [--swap] [--tag=-x]

--swap serves the other tree first (the first gateway of a run tends to lose a little p50).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import (
    ROOT,
    Server,
    bench_database,
    md_table,
    process,
    save,
    seed_key,
    server_env,
)
from benchmarks.cost_per_call import (
    GATEWAY_ENV,
    TOKEN,
    direct_target,
    rest_target,
    sequential,
    uptime,
)
from harness.fake_upstream import MERCHANT_ID


def run(args: argparse.Namespace, url: str) -> dict[str, Any]:
    port, fake = args.port, f"http://127.0.0.1:{args.port}"
    key = seed_key(url, upstream=fake, merchant_id=MERCHANT_ID, token=TOKEN)
    extra = {**GATEWAY_ENV, "FLOOR_UPSTREAM": fake}
    trees = [(ROOT, "this tree"), (Path(args.other).resolve(), Path(args.other).name)]
    rounds: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        stack.enter_context(
            process(
                [sys.executable, "-m", "harness.fake_upstream", "--port", str(port)],
                port,
                "fake upstream",
            )
        )
        targets = [direct_target(port)]
        for index, (tree, label) in enumerate(trees[::-1] if args.swap else trees):
            gw, floor = port + 1 + 2 * index, port + 2 + 2 * index
            served = stack.enter_context(Server(server_env(url, gw, **extra), gw, 1, cwd=tree))
            bare = stack.enter_context(
                Server(
                    server_env(url, floor, **extra),
                    floor,
                    1,
                    cwd=tree,
                    app="benchmarks.rest_floor:application",
                )
            )
            targets.append(rest_target(gw, key, served.pids, f"gateway REST get_order, {label}"))
            targets.append(
                rest_target(
                    floor, key, bare.pids, f"gateway REST floor, {label}", "/bench/rest-floor"
                )
            )
        for _ in range(args.rounds):
            start = uptime()
            result = asyncio.run(sequential(targets, args.calls, 20, url.rsplit("/", 1)[1]))
            rounds.append({"uptime_start": start, "uptime_end": uptime(), "calls": result})
    return {"swap": args.swap, "rounds": rounds}


def render(result: dict[str, Any]) -> str:
    rows = [
        [
            f"{i + 1}",
            name,
            s["p50_ms"],
            s["cpu_ms_per_call"] or "",
            s["pg_cpu_ms_per_call"] if s["pg_cpu_ms_per_call"] is not None else "",
            r["uptime_start"],
        ]
        for i, r in enumerate(result["rounds"])
        for name, s in r["calls"].items()
    ]
    return (
        md_table(
            [
                "round",
                "one client, interleaved",
                "p50 ms",
                "CPU ms/call",
                "PostgreSQL CPU ms/call",
                "load average",
            ],
            rows,
        )
        + "\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("other", help="the other source tree")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--port", type=int, default=18130, help="five ports from here")
    parser.add_argument("--swap", action="store_true")
    parser.add_argument("--tag", default="")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with bench_database("postgres", "rest_ab") as url:
        result = run(args, url)
    save(f"rest_ab{args.tag}", result, render(result), started)


if __name__ == "__main__":
    main()
