"""Where a served gateway's CPU goes under load (issue 44): py-spy on one uvicorn worker on
PostgreSQL while the raw client (benchmarks/raw_http.py) keeps `--clients` MCP (or REST)
get_order calls in flight against the fake upstream, then the samples grouped by the
frames they pass through (inclusive shares) and by leaf function (own shares).

py-spy is not a project dependency: install it apart, e.g.
    pip install --target /tmp/pyspy py-spy
    .venv/bin/python -m benchmarks.profile_served --py-spy /tmp/pyspy/bin/py-spy \
        [--kind mcp|rest] [--clients 8] [--seconds 20] [--port 18300] [--env NAME=value]

Not a figure of the README by itself: the shares tell what to remove, cost_per_call measures
whether removing it paid.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import Server, bench_database, process, seed_key, server_env
from benchmarks.cost_per_call import GATEWAY_ENV, TOKEN, Call, mcp_target, rest_target, uptime
from harness.fake_upstream import MERCHANT_ID

# Frames whose inclusive share is reported (a substring of py-spy's "function (file:line)").
PARTS = {
    "core call (gateway.call)": "call (tools/pipeline/gateway.py",
    "journal (audit)": "(audit/",
    "upstream GET (connections.send)": "send (invoicebox/connections.py",
    "budget+circuit (limits)": "invoicebox/limits.py",
    "key and session (one statement)": "key_and_session (adapters/mcp/sessions.py",
    "session resume": "resume (adapters/mcp/sessions.py",
    "lean answer (pydantic dump)": "answer (adapters/mcp/lean.py",
    "lean call_of (parse)": "call_of (adapters/mcp/lean.py",
    "tool result (envelope to CallToolResult)": "call_result (adapters/mcp/server.py",
    "pydantic model_dump/_json": "model_dump",
    "the admission hop (admit)": "admit (adapters/mcp/http.py",
    "the in-flight limit": "(adapters/inflight.py",
    "the body bound": "(adapters/bounded_body.py",
    "psycopg execute": "(psycopg/cursor.py",
    "httpx/httpcore": "(httpcore/",
    "uvicorn": "(uvicorn/",
    "starlette": "(starlette/",
    "mcp SDK": "(mcp/",
    "opentelemetry": "(opentelemetry/",
    "Django ORM (db/models)": "(django/db/models/",
    "Django request handling": "(django/core/handlers/",
    "DRF": "(rest_framework/",
    "json (stdlib)": "(json/",
    "pydantic": "(pydantic",
    "asyncio/uvloop loop": "(asyncio/",
    "thread pool workers": "(concurrent/futures/thread.py",
}


def summarize(raw: Path, top: int) -> str:
    """py-spy's raw (collapsed) output: inclusive shares of PARTS and the top own frames."""
    total = 0
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        count = int(count_text)
        total += count
        frames = stack.split(";")
        for part, needle in PARTS.items():
            if any(needle in frame for frame in frames):
                inclusive[part] += count
        own[frames[-1]] += count
    lines = [f"samples: {total}", "", "| part (inclusive) | share |", "|---|---|"]
    for part, count in inclusive.most_common():
        lines.append(f"| {part} | {100 * count / max(1, total):.1f} % |")
    lines += ["", "| leaf frame (own) | share |", "|---|---|"]
    for frame, count in own.most_common(top):
        lines.append(f"| `{frame[:110]}` | {100 * count / max(1, total):.1f} % |")
    return "\n".join(lines)


async def drive(make: Call, clients: int, seconds: float) -> int:
    calls = [await make() for _ in range(clients)]  # type: ignore[operator]
    done = 0

    async def loop(call: Call, stop: float) -> None:
        nonlocal done
        while time.monotonic() < stop:
            await call()
            done += 1
            await getattr(call, "maintain", _nothing)()

    stop = time.monotonic() + seconds
    await asyncio.gather(*(loop(call, stop) for call in calls))
    return done


async def _nothing() -> None:
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--py-spy", required=True, help="path of the py-spy binary")
    parser.add_argument("--kind", choices=("mcp", "rest"), default="mcp")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--port", type=int, default=18300)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--env", action="append", default=[], help="NAME=value for the gateway")
    parser.add_argument("--gil", action="store_true", help="only samples holding the GIL")
    args = parser.parse_args()
    fake_port, gw_port = args.port, args.port + 1
    fake = f"http://127.0.0.1:{fake_port}"
    with bench_database("postgres", "profile") as url, contextlib.ExitStack() as stack:
        key = seed_key(url, upstream=fake, merchant_id=MERCHANT_ID, token=TOKEN)
        extra = {**GATEWAY_ENV, **dict(e.split("=", 1) for e in args.env)}
        stack.enter_context(
            process(
                [sys.executable, "-m", "harness.fake_upstream", "--port", str(fake_port)],
                fake_port,
                "fake upstream",
            )
        )
        gateway = stack.enter_context(Server(server_env(url, gw_port, **extra), gw_port, 1))
        target = (
            mcp_target("mcp", gw_port, gateway.pids, {"Authorization": f"Bearer {key}"})
            if args.kind == "mcp"
            else rest_target(gw_port, key, gateway.pids)
        )
        asyncio.run(drive(target.make, args.clients, 2.0))  # warm
        raw = Path(tempfile.mkstemp(suffix=".txt")[1])
        assert gateway.process is not None
        spy = subprocess.Popen(  # noqa: S603
            [
                args.py_spy,
                "record",
                "--pid",
                str(gateway.process.pid),
                "--rate",
                str(args.rate),
                "--duration",
                str(int(args.seconds)),
                "--format",
                "raw",
                "--output",
                str(raw),
                "--nonblocking",
                *(["--gil"] if args.gil else []),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        load = uptime()
        done = asyncio.run(drive(target.make, args.clients, args.seconds))
        spy.wait(timeout=args.seconds + 30)
        print(
            f"{args.kind}, {args.clients} clients, {done / args.seconds:.0f} req/s while "
            f"profiled (py-spy --nonblocking, {args.rate} Hz{', --gil' if args.gil else ''}); "
            f"load average {load} -> {uptime()}"
        )
        print(f"raw samples: {raw}")
        print(summarize(raw, args.top))


if __name__ == "__main__":
    main()
