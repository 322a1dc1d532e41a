"""Served variants of the gateway, interleaved in short rounds (issue 44): which of two
changes moves the worker's CPU per call when this machine's speed drifts by a third within
minutes (benchmarks/README.md), and where that CPU goes (user, system, context switches).

Each variant is one uvicorn worker of an ASGI app (`config.asgi:application` by default) from a
source tree (this one by default), on one PostgreSQL database made for the run, against
harness/fake_upstream.py over TCP; `--clients` raw HTTP clients (benchmarks/raw_http.py) call
get_order over MCP for `--duration` seconds, variant after variant, round after round. The
reference (`--reference`) is measured the same way when it is built
(benchmarks/reference_setup.sh).

    .venv/bin/python -m benchmarks.served_ab [--rounds 6] [--duration 4] [--clients 8]
        [--variant 'NAME=APP[@TREE][;VAR=value...]']... [--reference] [--rungs pg core]
        [--port 18700]

A variant NAME=benchmarks.slim_door:application serves that module's app from this tree;
NAME=config.asgi:application@/tmp/main serves another tree's (e.g. `git archive` of main);
'NAME=config.asgi:application;GATEWAY_SYNC_THREADS=4' this tree's with a setting of its own.
Prints, per variant, the median and range over rounds of req/s, the worker's CPU ms per call
(user + system, and system alone), its context switches per call, and PostgreSQL's CPU ms per
call; a variant's round is ratioed to the reference's round next to it when there is one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import (
    CLOCK_TICKS,
    ROOT,
    Server,
    _proc_stat,
    bench_database,
    md_table,
    process,
    save,
    seed_key,
    server_env,
)
from benchmarks.cost_per_call import (
    GATEWAY_ENV,
    LADDER_RUNGS,
    TOKEN,
    Target,
    loaded,
    mcp_target,
    reference_target,
    rung_target,
)
from harness.fake_upstream import MERCHANT_ID


def _threads_stat(pids: list[int]) -> tuple[int, int, int]:
    """User ticks, system ticks and context switches (voluntary and not, every thread's) of
    these processes."""
    user = system = switches = 0
    for pid in pids:
        fields = _proc_stat(pid)
        if fields is None:
            continue
        user, system = user + int(fields[11]), system + int(fields[12])
        for task in Path(f"/proc/{pid}/task").glob("*/status"):
            with contextlib.suppress(OSError):
                for line in task.read_text().splitlines():
                    if "ctxt_switches:" in line:
                        switches += int(line.split()[1])
    return user, system, switches


class _ThreadMeter:
    """User and system ticks and context switches of a server's processes over a window."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.used = (0, 0, 0)

    def __enter__(self) -> _ThreadMeter:
        self._before = _threads_stat(self.pids)
        return self

    def __exit__(self, *exc: object) -> None:
        after = _threads_stat(self.pids)
        self.used = (
            after[0] - self._before[0],
            after[1] - self._before[1],
            after[2] - self._before[2],
        )


async def _round(
    target: Target, clients: int, duration: float, dbname: str | None
) -> dict[str, Any]:
    meter = _ThreadMeter(target.pids())
    figures = await loaded(target, clients, duration, dbname, window=lambda: meter)
    calls = figures["rps"] * duration
    if calls:
        per_call = 1000 / CLOCK_TICKS / calls
        figures["user_ms_per_call"] = round(meter.used[0] * per_call, 3)
        figures["system_ms_per_call"] = round(meter.used[1] * per_call, 3)
        figures["switches_per_call"] = round(meter.used[2] / calls, 1)
    return figures


def _variant(spec: str) -> tuple[str, str, Path, dict[str, str]]:
    """NAME=APP[@TREE][;VAR=value...]: the app, its source tree, and its own environment."""
    spec, *settings = spec.split(";")
    name, _, rest = spec.partition("=")
    app, _, tree = rest.partition("@")
    env = dict(setting.split("=", 1) for setting in settings)
    return name, app or "config.asgi:application", Path(tree).resolve() if tree else ROOT, env


async def _run(args: argparse.Namespace, url: str, key: str) -> dict[str, list[dict[str, Any]]]:
    fake_port = args.port
    fake = f"http://127.0.0.1:{fake_port}"
    dbname = url.rsplit("/", 1)[1]
    rounds: dict[str, list[dict[str, Any]]] = {}
    with contextlib.ExitStack() as stack:
        argv = [sys.executable, "-m", "harness.fake_upstream", "--port", str(fake_port)]
        stack.enter_context(process(argv, fake_port, "fake upstream"))
        targets: list[Target] = []
        for index, spec in enumerate(args.variant or ["gateway=config.asgi:application"]):
            name, app, tree, own_env = _variant(spec)
            port = fake_port + 1 + index
            env = server_env(url, port, **{**GATEWAY_ENV, **own_env})
            server = stack.enter_context(Server(env, port, 1, app=app, cwd=tree))
            target = mcp_target(name, port, server.pids, {"Authorization": f"Bearer {key}"})
            target.pg = True  # every variant is a gateway on the run's database
            targets.append(target)
        for index, rung in enumerate(args.rungs):
            targets.append(
                rung_target(stack, rung, fake_port + 20 + index, url, fake, key, GATEWAY_ENV)
            )
        if args.reference:
            targets.append(reference_target(stack, fake, fake_port + 40, "reference"))
        for round_ in range(args.rounds):
            order = targets if round_ % 2 == 0 else list(reversed(targets))
            for target in order:
                figures = await _round(
                    target, args.clients, args.duration, dbname if target.pg else None
                )
                rounds.setdefault(target.name, []).append(figures)
                print(target.name, figures, flush=True)
    return rounds


def _summary(rounds: dict[str, list[dict[str, Any]]]) -> str:
    def spread(values: list[float]) -> str:
        return f"{statistics.median(values):.3f} [{min(values):.3f}–{max(values):.3f}]"

    reference = rounds.get("reference")
    rows = []
    for name, figures in rounds.items():
        total = [f["cpu_ms_per_call"] + (f["pg_cpu_ms_per_call"] or 0) for f in figures]
        row = [
            name,
            spread([f["rps"] for f in figures]),
            spread([f["cpu_ms_per_call"] for f in figures]),
            spread([f.get("system_ms_per_call", 0) for f in figures]),
            spread([f.get("switches_per_call", 0) for f in figures]),
            spread([f["pg_cpu_ms_per_call"] or 0 for f in figures]),
        ]
        if reference and name != "reference":
            ratio_cpu = [t / r["cpu_ms_per_call"] for t, r in zip(total, reference, strict=False)]
            ratio_rps = [f["rps"] / r["rps"] for f, r in zip(figures, reference, strict=False)]
            row += [spread(ratio_cpu), spread(ratio_rps)]
        else:
            row += ["", ""]
        rows.append(row)
    return md_table(
        [
            "variant",
            "req/s",
            "worker CPU ms/call",
            "of it system",
            "switches/call",
            "PostgreSQL CPU ms/call",
            "CPU with PG ÷ reference",
            "req/s ÷ reference",
        ],
        rows,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--duration", type=float, default=4.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--port", type=int, default=18700)
    parser.add_argument(
        "--variant", action="append", help="NAME=APP[@TREE][;VAR=value...]; may repeat"
    )
    parser.add_argument("--reference", action="store_true", help="the vendor's server too")
    parser.add_argument(
        "--rungs",
        nargs="*",
        default=[],
        choices=LADDER_RUNGS,
        help="rungs of benchmarks/ladder_server.py served too (ports from --port + 20)",
    )
    parser.add_argument("--tag", default="", help="results/served_ab<TAG>.json")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with bench_database("postgres", "ab") as url:
        fake = f"http://127.0.0.1:{args.port}"
        key = seed_key(url, upstream=fake, merchant_id=MERCHANT_ID, token=TOKEN)
        rounds = asyncio.run(_run(args, url, key))
    save(f"served_ab{args.tag}", {"rounds": rounds}, _summary(rounds), started)


if __name__ == "__main__":
    main()
