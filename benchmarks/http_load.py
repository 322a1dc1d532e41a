"""Throughput and latency of POST /api/v1/call and MCP tools/call under concurrent clients."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import tempfile
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx

from benchmarks._common import (
    DATABASES,
    PG_ADMIN,
    CpuMeter,
    Server,
    bench_database,
    free_port,
    manage,
    md_table,
    save,
    server_env,
    setup_django,
    summary_ms,
)

Call = Callable[[], Awaitable[bool]]


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


class Drive:
    """Clients calling back to back for `duration` seconds or until `budget` calls are sent."""

    def __init__(self, calls: list[Call], duration: float, budget: int) -> None:
        self.calls, self.duration, self.budget = calls, duration, budget
        self.latencies: list[float] = []
        self.errors = 0
        self.first_error = ""
        self.sent = 0

    async def _loop(self, call: Call, stop_at: float) -> None:
        while time.monotonic() < stop_at and self.sent < self.budget:
            self.sent += 1
            start = time.perf_counter()
            try:
                ok = await call()
                problem = "" if ok else "not ok"
            except Exception as error:  # a failed request is counted, not fatal
                ok, problem = False, f"{type(error).__name__}: {error}"[:200]
            if ok:
                self.latencies.append(time.perf_counter() - start)
            else:
                self.errors += 1
                self.first_error = self.first_error or problem

    async def run(self) -> float:
        stop_at = time.monotonic() + self.duration
        start = time.perf_counter()
        await asyncio.gather(*(self._loop(call, stop_at) for call in self.calls))
        return time.perf_counter() - start


@contextlib.asynccontextmanager
async def rest_clients(base: str, key: str, order_id: str, n: int) -> AsyncIterator[list[Call]]:
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    body = {"name": "get_order", "arguments": {"order_id": order_id}}
    async with httpx.AsyncClient(
        base_url=base, limits=limits, timeout=60, headers={"Authorization": f"Bearer {key}"}
    ) as http:

        async def call() -> bool:
            response = await http.post("/api/v1/call", json=body)
            return response.status_code == 200 and response.json()["status"] == "ok"

        yield [call] * n


@contextlib.asynccontextmanager
async def mcp_clients(base: str, key: str, order_id: str, n: int) -> AsyncIterator[list[Call]]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with contextlib.AsyncExitStack() as stack:
        calls: list[Call] = []
        for _ in range(n):
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
            )
            client = await stack.enter_async_context(
                Client(streamable_http_client(f"{base}/mcp", http_client=http))
            )

            async def call(client: Any = client) -> bool:
                result = await client.call_tool("get_order", {"order_id": order_id})
                content = result.structured_content or {}
                return not result.is_error and content.get("status") == "ok"

            calls.append(call)
        yield calls


PROTOCOLS = {"rest": rest_clients, "mcp": mcp_clients}
_FIRST_TABLE = re.compile(r'FROM\s+"?([a-z_]+)"?', re.I)


class LockWaits(threading.Thread):
    """Samples pg_stat_activity of the benchmark database: how many sessions wait on a lock,
    and on which table's statement. Off for SQLite (url is None)."""

    def __init__(self, url: str | None, every: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.dbname = url.rsplit("/", 1)[1] if url else None
        self.every = every
        self.stop = threading.Event()
        self.samples = 0
        self.waiting: Counter[str] = Counter()

    def run(self) -> None:
        if self.dbname is None:
            return
        import psycopg

        query = (
            "SELECT query FROM pg_stat_activity WHERE datname = %s AND wait_event_type = "
            "'Lock' AND backend_type = 'client backend'"
        )
        with psycopg.connect(**{**PG_ADMIN, "dbname": self.dbname}, autocommit=True) as conn:
            while not self.stop.wait(self.every):
                self.samples += 1
                for (sql,) in conn.execute(query, (self.dbname,)).fetchall():
                    match = _FIRST_TABLE.search(sql or "")
                    self.waiting[match.group(1) if match else "?"] += 1

    def result(self) -> dict[str, Any]:
        if not self.samples:
            return {"lock_waiters_avg": None, "lock_top": ""}
        top = self.waiting.most_common(1)
        return {
            "lock_waiters_avg": round(sum(self.waiting.values()) / self.samples, 2),
            "lock_top": f"{top[0][0]} ({top[0][1] / self.samples:.2f})" if top else "",
        }


async def cell(
    server: Server,
    protocol: str,
    key: str,
    order_id: str,
    clients: int,
    duration: float,
    budget: int,
    warmup: float,
    pg_url: str | None,
) -> dict[str, Any]:
    async with PROTOCOLS[protocol](server.base, key, order_id, clients) as calls:
        await Drive(calls, warmup, budget).run()
        drive = Drive(calls, duration, budget)
        locks = LockWaits(pg_url)
        locks.start()
        with CpuMeter(server.pids) as served, CpuMeter() as loadgen:
            elapsed = await drive.run()
        locks.stop.set()
        locks.join(timeout=5)
    done = len(drive.latencies)
    return {
        "protocol": protocol,
        "workers": server.workers,
        "clients": clients,
        "ok": done,
        "errors": drive.errors,
        "first_error": drive.first_error,
        "seconds": round(elapsed, 2),
        "rps": round(done / elapsed, 1),
        **{k: v for k, v in summary_ms(drive.latencies).items() if k != "n"},
        "server_cpu_pct": served.result["ours_pct"],
        "loadgen_cpu_pct": loadgen.result["ours_pct"],
        "machine_busy_pct": served.result["machine_busy_pct"],
        **locks.result(),
    }


def _create_order(base: str, key: str) -> str:
    from harness.orders import order_args

    headers = {"Authorization": f"Bearer {key}"}
    args = order_args()
    first = httpx.post(
        f"{base}/api/v1/call",
        json={"name": "create_order", "arguments": args},
        headers=headers,
        timeout=30,
    ).json()
    token = first["confirmation"]["token"]
    done = httpx.post(
        f"{base}/api/v1/call",
        headers=headers,
        timeout=30,
        json={"name": "create_order", "arguments": {**args, "confirmation_token": token}},
    ).json()
    return done["data"]["order_id"]


def run(args: argparse.Namespace, url: str) -> list[dict[str, Any]]:
    port = free_port()
    env = server_env(url, port)
    state = tempfile.mkdtemp(prefix="gw-bench-http-")
    manage(env, "migrate", "--noinput")
    key = re.search(r"API key:\s+(\S+)", manage(env, "seed_demo", "--state-dir", state)).group(1)
    setup_django(url, migrate=False, PORT=str(port))
    from django.db import connections

    from sandbox.api import set_faults
    from tools.contours.services import DEMO_TOKEN

    rows: list[dict[str, Any]] = []
    order_id = ""
    for workers in _ints(args.workers):
        with Server(env, port, workers, app=args.app) as server:
            order_id = order_id or _create_order(server.base, key)
            for latency in _ints(args.latency):
                set_faults(DEMO_TOKEN, latency_ms=latency)
                connections.close_all()
                for protocol in args.protocols.split(","):
                    for clients in _ints(args.clients):
                        row = asyncio.run(
                            cell(
                                server,
                                protocol,
                                key,
                                order_id,
                                clients,
                                args.duration,
                                args.budget,
                                args.warmup,
                                url if url.startswith("postgres") else None,
                            )
                        )
                        row["latency_ms"] = latency
                        rows.append(row)
                        print(
                            f"  {protocol:4} workers={workers} latency={latency:3} ms "
                            f"clients={clients:2}: {row['rps']:7.1f} req/s, median "
                            f"{row['median_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms, "
                            f"errors {row['errors']} {row['first_error']}; waiting on locks "
                            f"{row['lock_waiters_avg']} {row['lock_top']}",
                            flush=True,
                        )
    set_faults(DEMO_TOKEN, latency_ms=0)
    connections.close_all()
    return rows


def render(db: str, rows: list[dict[str, Any]]) -> str:
    by = {(r["protocol"], r["latency_ms"], r["clients"], r["workers"]): r for r in rows}
    workers = sorted({r["workers"] for r in rows})
    table = []
    for (protocol, latency, clients, w), r in sorted(by.items()):
        one = by.get((protocol, latency, clients, workers[0]))
        scale = f"{r['rps'] / one['rps']:.2f}×" if one and one["rps"] and w != workers[0] else ""
        ideal = f"{clients * 1000 / latency:.0f}" if latency else "—"
        table.append(
            [
                protocol,
                latency,
                clients,
                w,
                r["rps"],
                scale,
                ideal,
                r["median_ms"],
                r["p99_ms"],
                r["errors"],
                r["server_cpu_pct"],
                r["loadgen_cpu_pct"],
                r["machine_busy_pct"],
                f"{r['lock_waiters_avg']}: {r['lock_top']}" if r.get("lock_top") else "—",
            ]
        )
    headers = [
        "protocol",
        "sandbox latency ms",
        "clients",
        "workers",
        "req/s",
        f"vs {workers[0]} worker",
        "ceiling if upstream waits overlap (req/s)",
        "median ms",
        "p99 ms",
        "errors",
        "server CPU %",
        "load generator CPU %",
        "machine busy %",
        "DB sessions waiting on a lock (avg): top table (avg)",
    ]
    return (
        f"Database: **{db}**; tool get_order (one sandbox request per call). CPU in % of "
        "one core; the machine has 2, and the load generator (this process, asyncio + "
        "httpx / the MCP SDK client) runs on them too.\n\n" + md_table(headers, table)
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", choices=DATABASES, default="postgres")
    parser.add_argument("--workers", default="1,2", help="uvicorn worker counts, e.g. 1,2")
    parser.add_argument("--clients", default="1,8,32", help="concurrent clients, e.g. 1,8,32")
    parser.add_argument("--latency", default="0,100", help="sandbox latency in ms, e.g. 0,100")
    parser.add_argument("--protocols", default="rest,mcp")
    parser.add_argument("--duration", type=float, default=4.0, help="seconds measured per cell")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds discarded per cell")
    parser.add_argument("--budget", type=int, default=3000, help="most calls per cell")
    parser.add_argument(
        "--app",
        default="config.asgi:application",
        help="ASGI app to serve (benchmarks.asgi_wide_executor:application for "
        "the thread-pool experiment)",
    )
    parser.add_argument("--name", default="", help="suffix of the results file")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with bench_database(args.db, "http") as url:
        rows = run(args, url)
    name = f"http_load-{args.db}" + (f"-{args.name}" if args.name else "")
    text = render(args.db, rows)
    if args.app != "config.asgi:application":
        text = f"Served app: `{args.app}` (experiment).\n\n" + text
    save(name, {"db": args.db, "app": args.app, "rows": rows}, text, started)


if __name__ == "__main__":
    main()
