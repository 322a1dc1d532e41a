"""The production path: the gateway under uvicorn, over real TCP, to a fake upstream process.

Sequential (one client, calls interleaved kind by kind so machine load hits all alike):
a direct GET to the fake (the baseline), REST and MCP `get_order` through the gateway, the
reference server's MCP `get_order` on the same fake (when built), `GET /health`, and the
execution of a write (`create_order` with its confirmation token) against a direct POST.
Then 32 REST clients with 1 and 2 uvicorn workers, sampling sessions waiting on a lock.

    .venv/bin/python -m benchmarks.production_path --db sqlite|postgres [--calls 80]
        [--reference /path/to/invoicebox-mcp-server]   # a built checkout (dist/index.js)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from benchmarks._common import (
    CpuMeter,
    Server,
    bench_database,
    free_port,
    md_table,
    process,
    save,
    seed_key,
    server_env,
    summary_ms,
)
from benchmarks.http_load import Drive, LockWaits, rest_clients
from harness.fake_upstream import MERCHANT_ID

ORDER_ID = "0c1d2e3f-0000-4000-8000-0000000000aa"
TOKEN = "bench-token-0123456789abcdef0123"  # noqa: S105 - the fake accepts any token
Timed = Callable[[], Awaitable[bool]]


def reference_env(fake_port: int, port: int, state: str) -> dict[str, str]:
    return {
        **os.environ,
        "INVOICEBOX_API_TOKEN": TOKEN,
        "INVOICEBOX_ENV": "production",
        "INVOICEBOX_MERCHANT_ID": MERCHANT_ID,
        "INVOICEBOX_TOOLSETS": "read,write",
        "INVOICEBOX_API_URL": f"http://127.0.0.1:{fake_port}",
        "INVOICEBOX_HTTP_PORT": str(port),
        "INVOICEBOX_STATE_DIR": state,
        "INVOICEBOX_LOG_LEVEL": "error",
    }


@contextlib.asynccontextmanager
async def mcp_session(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def _mcp_get_order(client: Any) -> Timed:
    async def call() -> bool:
        result = await client.call_tool("get_order", {"order_id": ORDER_ID})
        return not result.is_error

    return call


async def sequential(
    gateway: str, fake: str, key: str, reference: str | None, calls: int, warmup: int
) -> dict[str, list[float]]:
    auth = {"Authorization": f"Bearer {key}"}
    read = {"name": "get_order", "arguments": {"order_id": ORDER_ID}}
    async with contextlib.AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=60))
        mcp = await stack.enter_async_context(mcp_session(f"{gateway}/mcp", auth))
        kinds: dict[str, Timed] = {}

        async def direct() -> bool:
            response = await http.get(
                f"{fake}/v3/filter/api/order/order", params={"id": ORDER_ID, "_pageSize": "1"}
            )
            return response.status_code == 200

        async def rest() -> bool:
            response = await http.post(f"{gateway}/api/v1/call", json=read, headers=auth)
            return response.json()["status"] == "ok"

        async def health() -> bool:
            return (await http.get(f"{gateway}/health")).status_code == 200

        kinds = {
            "direct GET to the fake": direct,
            "REST get_order": rest,
            "MCP get_order": _mcp_get_order(mcp),
            "GET /health": health,
        }
        if reference:
            ref = await stack.enter_async_context(mcp_session(f"{reference}/mcp", {}))
            kinds["reference MCP get_order"] = _mcp_get_order(ref)
        samples: dict[str, list[float]] = {name: [] for name in kinds}
        failures: dict[str, int] = dict.fromkeys(kinds, 0)
        for i in range(warmup + calls):
            for name, call in kinds.items():
                started = time.perf_counter()
                ok = await call()
                elapsed = time.perf_counter() - started
                failures[name] += not ok
                if i >= warmup and ok:
                    samples[name].append(elapsed)
        for name, count in failures.items():
            if count:
                print(f"  {name}: {count} failed calls", flush=True)
        samples.update(await writes(http, gateway, fake, auth, calls, warmup))
        return samples


async def writes(
    http: httpx.AsyncClient, gateway: str, fake: str, auth: dict[str, str], calls: int, warmup: int
) -> dict[str, list[float]]:
    """Execution of create_order (the token's call only) against a direct POST to the fake."""
    from harness.orders import order_args

    executed: list[float] = []
    direct: list[float] = []
    for i in range(warmup + calls):
        args = order_args(description=f"Бронирование номера {i}")
        first = (
            await http.post(
                f"{gateway}/api/v1/call",
                headers=auth,
                json={"name": "create_order", "arguments": args},
            )
        ).json()
        token = first["confirmation"]["token"]
        started = time.perf_counter()
        done = (
            await http.post(
                f"{gateway}/api/v1/call",
                headers=auth,
                json={"name": "create_order", "arguments": {**args, "confirmation_token": token}},
            )
        ).json()
        elapsed = time.perf_counter() - started
        started = time.perf_counter()
        raw = await http.post(
            f"{fake}/v3/billing/api/order/order", json={"merchantOrderId": f"direct-{i}"}
        )
        upstream = time.perf_counter() - started
        if i >= warmup and done["status"] == "ok" and raw.status_code == 200:
            executed.append(elapsed)
            direct.append(upstream)
    return {"write execution (create_order + token)": executed, "direct POST to the fake": direct}


async def load(
    gateway: str, key: str, clients: int, duration: float, pg_url: str | None, server: Server
) -> dict[str, Any]:
    async with rest_clients(gateway, key, ORDER_ID, clients) as calls:
        await Drive(calls, 2.0, 10**9).run()
        drive = Drive(calls, duration, 10**9)
        locks = LockWaits(pg_url, every=0.01)
        locks.start()
        with CpuMeter(server.pids) as served:
            elapsed = await drive.run()
        locks.stop.set()
        locks.join(timeout=5)
    done = len(drive.latencies)
    return {
        "clients": clients,
        "workers": server.workers,
        "ok": done,
        "errors": drive.errors,
        "rps": round(done / elapsed, 1),
        **{k: v for k, v in summary_ms(drive.latencies).items() if k != "n"},
        "server_cpu_pct": served.result["ours_pct"],
        "machine_busy_pct": served.result["machine_busy_pct"],
        **locks.result(),
    }


def run(args: argparse.Namespace, url: str) -> dict[str, Any]:
    fake_port, port = free_port(), free_port()
    fake = f"http://127.0.0.1:{fake_port}"
    key = seed_key(url, upstream=fake, merchant_id=MERCHANT_ID, token=TOKEN)
    env = server_env(url, port)  # the settings' defaults, as `make demo` gets them
    result: dict[str, Any] = {"db": args.db, "uptime": _uptime()}
    with contextlib.ExitStack() as stack:
        stack.enter_context(
            process(
                [sys.executable, "-m", "harness.fake_upstream", "--port", str(fake_port)],
                fake_port,
                "fake upstream",
            )
        )
        reference = None
        if args.reference and (Path(args.reference) / "dist" / "index.js").exists():
            ref_port = free_port()
            state = stack.enter_context(tempfile.TemporaryDirectory(prefix="gw-ref-"))
            stack.enter_context(
                process(
                    [shutil.which("node") or "node", "dist/index.js"],
                    ref_port,
                    "reference server",
                    env=reference_env(fake_port, ref_port, state),
                    cwd=Path(args.reference),
                )
            )
            reference = f"http://127.0.0.1:{ref_port}"
        with Server(env, port, 1) as server:
            samples = asyncio.run(
                sequential(server.base, fake, key, reference, args.calls, args.warmup)
            )
        result["sequential"] = {name: summary_ms(values) for name, values in samples.items()}
        result["uptime_after_sequential"] = _uptime()
        result["load"] = []
        for workers in (1, 2):
            with Server(env, port, workers) as server:
                row = asyncio.run(
                    load(
                        server.base,
                        key,
                        args.clients,
                        args.duration,
                        url if url.startswith("postgres") else None,
                        server,
                    )
                )
                row["uptime"] = _uptime()
                result["load"].append(row)
                print(
                    f"  {workers} worker(s), {args.clients} clients: {row['rps']} req/s, "
                    f"median {row['median_ms']} ms, lock waiters {row['lock_waiters_avg']} "
                    f"{row['lock_top']}",
                    flush=True,
                )
    return result


def _uptime() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def render(result: dict[str, Any]) -> str:
    seq = result["sequential"]
    rows = [[name, s["n"], s["median_ms"], s["p99_ms"]] for name, s in seq.items()]
    med = {name: s["median_ms"] for name, s in seq.items()}
    direct, post = med["direct GET to the fake"], med["direct POST to the fake"]
    derived = [
        ["REST get_order overhead over the direct GET", round(med["REST get_order"] - direct, 2)],
        ["MCP get_order overhead over the direct GET", round(med["MCP get_order"] - direct, 2)],
        [
            "write execution over the direct POST",
            round(med["write execution (create_order + token)"] - post, 2),
        ],
    ]
    if "reference MCP get_order" in med:
        derived.append(
            [
                "MCP get_order ÷ reference MCP get_order",
                round(med["MCP get_order"] / med["reference MCP get_order"], 2),
            ]
        )
    load = [
        [
            r["workers"],
            r["clients"],
            r["rps"],
            r["median_ms"],
            r["p99_ms"],
            r["errors"],
            r["server_cpu_pct"],
            r["machine_busy_pct"],
            f"{r['lock_waiters_avg']} {r['lock_top']}",
            r["uptime"],
        ]
        for r in result["load"]
    ]
    return (
        f"Database **{result['db']}**; load average before {result['uptime']}, after the "
        f"sequential part {result['uptime_after_sequential']}.\n\n"
        + md_table(["kind (sequential, one client)", "n", "median ms", "p99 ms"], rows)
        + "\n\n"
        + md_table(["derived", "ms or ratio"], derived)
        + "\n\n"
        + md_table(
            [
                "workers",
                "clients",
                "req/s",
                "median ms",
                "p99 ms",
                "errors",
                "server CPU %",
                "machine busy %",
                "sessions waiting on a lock (avg)",
                "load average",
            ],
            load,
        )
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument(
        "--calls",
        type=int,
        default=80,
        help="measured calls per kind (the reference allows 100 per 30 s)",
    )
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--reference", default=os.environ.get("REFERENCE_SERVER_DIR", ""))
    parser.add_argument("--tag", default="", help="suffix of the results file")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with bench_database(args.db, "prodpath") as url:
        result = run(args, url)
    markdown = render(result)
    save(f"production_path-{args.db}{args.tag}", result, markdown, started)


if __name__ == "__main__":
    main()
