"""Cost per call (issue 31): the gateway, the vendor's reference server and a floor, side by
side on one fake upstream, spoken to with a raw-socket HTTP/1.1 client (benchmarks/raw_http.py).

- gateway: uvicorn, one worker, config.asgi, PostgreSQL (a database made for the run) with the
  connection pool (DATABASE_POOL=true), Redis off, its upstream budget lifted;
- reference: github:InvoiceBox/invoicebox-mcp-server built by benchmarks/reference_setup.sh,
  its account cap lifted by that script's one-line patch, one Node process;
- floor: uvicorn + the mcp SDK's Streamable HTTP, one tool making the same pooled httpx GET,
  no database (benchmarks/floor_server.py);
- with --granian, the gateway again (same database and env) served by granian's ASGI
  interface, one worker, instead of uvicorn;
- REST floor: the gateway's served app with one DRF view making that GET, no key, no
  database (benchmarks/rest_floor.py), timed at one client; and the same view appending the
  call's journal entry as a call does (the REST floor + the journal entry).

One client first, calls interleaved kind by kind (direct GET to the fake, REST and MCP get_order
through the gateway, MCP get_order on the floor and the reference); then `--clients` clients
per server, servers interleaved round by round. CPU per call is each server's process tree;
PostgreSQL's is the CPU of the backends serving the run's database, reported apart.

    sh benchmarks/reference_setup.sh        # once
    .venv/bin/python -m benchmarks.cost_per_call [--calls 400] [--clients 8] [--duration 6]
        [--rounds 2] [--port 18110] [--access-log] [--granian] [--compare DIR]
        [--alone] [--tag=-before]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks._common import (
    CLOCK_TICKS,
    ROOT,
    CpuMeter,
    Server,
    _cpu_ticks,
    bench_database,
    percentile,
    process,
    process_tree,
    save,
    seed_key,
    server_env,
)
from benchmarks.cost_report import journal_sizes, render, statements_per_call
from benchmarks.raw_http import RawHttp, RawMcp
from harness.fake_upstream import MERCHANT_ID

ORDER_ID = "0c1d2e3f-0000-4000-8000-0000000000aa"
TOKEN = "bench-token-0123456789abcdef0123"  # noqa: S105 - the fake accepts any token
REFERENCE = ROOT / "benchmarks" / ".reference"
ARGS = {"order_id": ORDER_ID}
# benchmarks/ladder_server.py's rungs, bottom up, and those served on the run's database.
LADDER_RUNGS = ("echo", "hop", "get", "pg", "sdk", "journal", "core")
DATABASE_RUNGS = ("pg", "sdk", "journal", "core")
# Every served gateway of these benchmarks: the pooled database, no Redis, no broker.
# Its session caps lifted: every client of every round opens a session of the one key.
GATEWAY_ENV = {
    "DATABASE_POOL": "true",
    "MCP_REDIS_URL": "",
    "CELERY_BROKER_URL": "memory://",
    "MCP_MAX_SESSIONS": "100000",
    "MCP_MAX_SESSIONS_PER_KEY": "100000",
    "MCP_MAX_SESSIONS_PER_CONTOUR": "100000",
}
Call = Callable[[], Awaitable[None]]


def uptime() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def pg_backends(dbname: str) -> list[int]:
    import psycopg

    with psycopg.connect(
        host="127.0.0.1", user="postgres", dbname="postgres", autocommit=True
    ) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (dbname,),
        ).fetchall()
    return [row[0] for row in rows]


def reference_env(fake: str, port: int, state: str) -> dict[str, str]:
    return {
        **os.environ,
        "INVOICEBOX_API_TOKEN": TOKEN,
        "INVOICEBOX_ENV": "production",
        "INVOICEBOX_MERCHANT_ID": MERCHANT_ID,
        "INVOICEBOX_TOOLSETS": "read,write",
        "INVOICEBOX_API_URL": fake,
        "INVOICEBOX_HTTP_PORT": str(port),
        "INVOICEBOX_RATE_LIMIT": "1000000000/30",
        "INVOICEBOX_STATE_DIR": state,
        "INVOICEBOX_LOG_LEVEL": "error",
    }


class Target:
    """One server under test: how to make a client call, and its process tree."""

    def __init__(
        self,
        name: str,
        pids: Callable[[], list[int]],
        make: Callable[[], Awaitable[Call]],
        pg: bool | None = None,
    ) -> None:
        self.name, self.pids, self.make = name, pids, make
        # Served on the run's database: its backends' CPU is metered with this server's. By
        # default told by its name (a gateway, a rung that uses the database).
        self.pg = (
            name.startswith(("gateway", *(f"rung {rung}" for rung in DATABASE_RUNGS)))
            if pg is None
            else pg
        )


# The reference refuses a session's 201st tool call; its clients open a new session before,
# outside the timed part (the benchmark lifts only its account rate limit).
SESSION_CALLS = 190


async def maintain(call: Call) -> None:
    """Work between two timed calls (a new session where one is due)."""
    await getattr(call, "maintain", _nothing)()


async def _nothing() -> None:
    return None


def mcp_target(
    name: str, port: int, pids: Callable[[], list[int]], headers: dict[str, str] | None = None
) -> Target:
    async def make() -> Call:
        client = await RawMcp(port, headers).open()
        count = 0

        async def call() -> None:
            nonlocal count
            count += 1
            result = await client.call_tool("get_order", ARGS)
            if result.get("isError"):
                raise RuntimeError(str(result)[:300])

        async def renew() -> None:
            nonlocal count
            if count >= SESSION_CALLS:
                client.headers.pop("Mcp-Session-Id", None)
                await client.open()
                count = 0

        call.maintain = renew  # type: ignore[attr-defined]
        return call

    return Target(name, pids, make)


def rung_target(
    stack: contextlib.ExitStack,
    rung: str,
    port: int,
    url: str,
    fake: str,
    key: str,
    gateway_env: dict[str, str],
) -> Target:
    """A rung of benchmarks/ladder_server.py served on `port` for the run (entered on `stack`):
    the gateway's environment (journal, core: its code on Django), each thread keeping its own
    connection as the rungs below do: no pool."""
    env = server_env(
        url,
        port,
        **{**gateway_env, "DATABASE_POOL": "false"},
        LADDER_RUNG=rung,
        LADDER_UPSTREAM=fake,
        LADDER_DATABASE=url,
        LADDER_KEY=key,
    )
    argv = [sys.executable, "-m", "uvicorn", "benchmarks.ladder_server:app", "--port", str(port)]
    argv += ["--no-access-log", "--log-level", "warning"]
    served = stack.enter_context(process(argv, port, f"rung {rung}", env=env))
    return mcp_target(f"rung {rung}", port, functools.partial(process_tree, served.pid))


def reference_target(stack: contextlib.ExitStack, fake: str, port: int, name: str) -> Target:
    """The vendor's reference server (benchmarks/reference_setup.sh) on `port` for the run."""
    state = stack.enter_context(tempfile.TemporaryDirectory(prefix="gw-ref-"))
    ref = stack.enter_context(
        process(
            [shutil.which("node") or "node", "dist/index.js"],
            port,
            "reference",
            env=reference_env(fake, port, state),
            cwd=REFERENCE,
        )
    )
    return mcp_target(name, port, lambda: process_tree(ref.pid))


def rest_target(
    port: int,
    key: str,
    pids: Callable[[], list[int]],
    name: str = "gateway REST get_order",
    path: str = "/api/v1/call",
) -> Target:
    body = json.dumps({"name": "get_order", "arguments": ARGS}).encode()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    async def make() -> Call:
        http = RawHttp(port)

        async def call() -> None:
            status, _, data = await http.request("POST", path, headers, body)
            if status != 200 or json.loads(data)["status"] != "ok":
                raise RuntimeError(f"REST {status} {data[:200]!r}")

        return call

    return Target(name, pids, make)


def direct_target(port: int) -> Target:
    async def make() -> Call:
        http = RawHttp(port)

        async def call() -> None:
            status, _, _ = await http.request(
                "GET", f"/v3/filter/api/order/order?id={ORDER_ID}&_pageSize=1"
            )
            if status != 200:
                raise RuntimeError(f"direct GET {status}")

        return call

    return Target("direct GET to the fake", list, make)


class PgMeter:
    """CPU of the PostgreSQL backends serving one database, over a window."""

    def __init__(self, dbname: str | None) -> None:
        self.dbname = dbname

    def __enter__(self) -> PgMeter:
        self.pids = pg_backends(self.dbname) if self.dbname else []
        self.meter = CpuMeter(lambda: self.pids).__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.meter.__exit__()
        self.pct = self.meter.result["ours_pct"]


def figures(
    samples: list[float], ticks: int | None, pg_ticks: int | None, calls: int
) -> dict[str, Any]:
    """One client's p50, p99 and CPU per call (server tree, PostgreSQL) from 10 ms ticks;
    None where that part was not metered."""
    per_call = 1000 / CLOCK_TICKS / calls
    return {
        "p50_ms": round(percentile(samples, 50) * 1000, 3),
        "p99_ms": round(percentile(samples, 99) * 1000, 3),
        "cpu_ms_per_call": round(ticks * per_call, 3) if ticks is not None else None,
        "pg_cpu_ms_per_call": round(pg_ticks * per_call, 3) if pg_ticks is not None else None,
    }


async def sequential(
    targets: list[Target], calls: int, warmup: int, dbname: str
) -> dict[str, dict[str, Any]]:
    """Kind by kind, one call each in turn. CPU is read around every call (the process tree
    of that call's server, and the database's backends for the gateway's), so the REST and
    MCP calls of one gateway process are told apart; 10 ms ticks average out over the run."""
    made = [await target.make() for target in targets]
    for _ in range(warmup):
        for call in made:
            await call()
            await maintain(call)
    pids = [t.pids() for t in targets]
    pg = pg_backends(dbname)
    samples: dict[str, list[float]] = {t.name: [] for t in targets}
    ticks = dict.fromkeys(samples, 0)
    pg_ticks = dict.fromkeys(samples, 0)
    for _ in range(calls):
        for target, call, tree in zip(targets, made, pids, strict=True):
            on_pg = target.pg
            before, pg_before = _cpu_ticks(tree), _cpu_ticks(pg) if on_pg else 0
            begin = time.perf_counter()
            await call()
            samples[target.name].append(time.perf_counter() - begin)
            ticks[target.name] += _cpu_ticks(tree) - before
            pg_ticks[target.name] += (_cpu_ticks(pg) - pg_before) if on_pg else 0
            await maintain(call)
    return {
        t.name: figures(
            samples[t.name],
            ticks[t.name] if tree else None,
            pg_ticks[t.name] if t.pg else None,
            calls,
        )
        for t, tree in zip(targets, pids, strict=True)
    }


async def alone(
    targets: list[Target], calls: int, warmup: int, dbname: str
) -> dict[str, dict[str, Any]]:
    """Each kind by itself, one client, `calls` calls in a row: no other server runs between
    two of its calls (interleaving costs every server its warm caches; this tells how much).
    CPU over the whole series: the server's tree, and the database's backends for gateways."""
    pg = pg_backends(dbname)
    out: dict[str, dict[str, Any]] = {}
    for target in targets:
        call = await target.make()
        for _ in range(warmup):
            await call()
            await maintain(call)
        tree, on_pg = target.pids(), target.pg
        samples: list[float] = []
        before, pg_before = _cpu_ticks(tree), _cpu_ticks(pg) if on_pg else 0
        for _ in range(calls):
            begin = time.perf_counter()
            await call()
            samples.append(time.perf_counter() - begin)
            await maintain(call)
        out[target.name] = figures(
            samples,
            _cpu_ticks(tree) - before if tree else None,
            _cpu_ticks(pg) - pg_before if on_pg else None,
            calls,
        )
    return out


async def loaded(
    target: Target,
    clients: int,
    duration: float,
    dbname: str | None,
    window: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
) -> dict[str, Any]:
    """`clients` clients calling for `duration` seconds after a second's warm-up; `window`: a
    context manager entered around the timed part only (benchmarks/served_ab.py's meters)."""
    made = [await target.make() for _ in range(clients)]
    latencies: list[float] = []
    errors = 0

    async def loop(call: Call, stop: float) -> None:
        nonlocal errors
        while time.monotonic() < stop:
            begin = time.perf_counter()
            try:
                await call()
                latencies.append(time.perf_counter() - begin)
                await maintain(call)
            except Exception:  # counted, not fatal
                errors += 1

    await asyncio.gather(*(loop(call, time.monotonic() + 1.0) for call in made))  # warm
    latencies.clear()
    with CpuMeter(target.pids) as cpu, PgMeter(dbname) as pg, window():
        started = time.monotonic()
        await asyncio.gather(*(loop(call, started + duration) for call in made))
        elapsed = time.monotonic() - started
    done = max(1, len(latencies))
    return {
        "server": target.name,
        "clients": clients,
        "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(percentile(latencies, 50) * 1000, 2),
        "p99_ms": round(percentile(latencies, 99) * 1000, 2),
        "errors": errors,
        "cpu_ms_per_call": round(cpu.result["ours_pct"] / 100 * elapsed * 1000 / done, 3),
        "pg_cpu_ms_per_call": round(pg.pct / 100 * elapsed * 1000 / done, 3) if dbname else None,
        "machine_busy_pct": cpu.result["machine_busy_pct"],
        "uptime": uptime(),
    }


def run(args: argparse.Namespace, url: str) -> dict[str, Any]:
    port = args.port
    fake_port, gw_port, floor_port, ref_port = port, port + 1, port + 2, port + 3
    fake = f"http://127.0.0.1:{fake_port}"
    dbname = url.rsplit("/", 1)[1]
    key = seed_key(url, upstream=fake, merchant_id=MERCHANT_ID, token=TOKEN)
    env_extra = {**GATEWAY_ENV, **dict(e.split("=", 1) for e in args.env)}
    env = server_env(url, gw_port, **env_extra)
    result: dict[str, Any] = {"uptime_start": uptime(), "env": args.env}
    with contextlib.ExitStack() as stack:
        stack.enter_context(
            process(
                [sys.executable, "-m", "harness.fake_upstream", "--port", str(fake_port)],
                fake_port,
                "fake upstream",
            )
        )
        floor = stack.enter_context(
            process(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "benchmarks.floor_server:app",
                    "--port",
                    str(floor_port),
                    "--no-access-log",
                    "--log-level",
                    "warning",
                ],
                floor_port,
                "floor",
                env={**os.environ, "FLOOR_UPSTREAM": fake},
            )
        )
        gateway = stack.enter_context(Server(env, gw_port, 1))

        targets = [
            direct_target(fake_port),
            rest_target(gw_port, key, gateway.pids),
            mcp_target(
                "gateway MCP get_order", gw_port, gateway.pids, {"Authorization": f"Bearer {key}"}
            ),
            mcp_target("floor MCP get_order", floor_port, lambda: process_tree(floor.pid)),
        ]
        if args.access_log:  # a second gateway, as the first but logging every request
            logged = stack.enter_context(
                Server(server_env(url, ref_port + 1, **env_extra), ref_port + 1, 1, access_log=True)
            )
            targets.append(
                mcp_target(
                    "gateway MCP get_order, access log on",
                    ref_port + 1,
                    logged.pids,
                    {"Authorization": f"Bearer {key}"},
                )
            )
        if args.granian:  # the same app and env served by granian (ASGI, one worker)
            port_g = ref_port + 3 + 2 * len(args.compare)  # past the compare trees' REST floors
            rust = stack.enter_context(
                Server(server_env(url, port_g, **env_extra), port_g, 1, granian=True)
            )
            targets.append(
                mcp_target(
                    "gateway MCP get_order, granian",
                    port_g,
                    rust.pids,
                    {"Authorization": f"Bearer {key}"},
                )
            )
            targets.append(rest_target(port_g, key, rust.pids, "gateway REST get_order, granian"))
        for index, tree in enumerate(args.compare):  # earlier versions, same database
            port_b = ref_port + 2 + index
            other = stack.enter_context(
                Server(server_env(url, port_b, **env_extra), port_b, 1, cwd=Path(tree).resolve())
            )
            targets.append(
                mcp_target(
                    f"gateway MCP get_order, {Path(tree).name}",
                    port_b,
                    other.pids,
                    {"Authorization": f"Bearer {key}"},
                )
            )
            targets.append(
                rest_target(port_b, key, other.pids, f"gateway REST get_order, {Path(tree).name}")
            )
        # The REST floor: the same served app, a DRF view making the same GET, no database;
        # a --compare tree's too when its benchmarks/rest_floor.py is there (copy it in).
        floors = [
            (ROOT, ""),
            *[(Path(tree).resolve(), f", {Path(tree).name}") for tree in args.compare],
        ]
        for index, (tree, label) in enumerate(
            [(t, label) for t, label in floors if (t / "benchmarks/rest_floor.py").exists()]
        ):
            port_f = ref_port + 2 + len(args.compare) + index
            served = stack.enter_context(
                Server(
                    server_env(url, port_f, **env_extra, FLOOR_UPSTREAM=fake),
                    port_f,
                    1,
                    app="benchmarks.rest_floor:application",
                    cwd=tree,
                )
            )
            targets.append(
                rest_target(
                    port_f,
                    key,
                    served.pids,
                    f"gateway REST floor (served app, no database){label}",
                    "/bench/rest-floor",
                )
            )
            if "rest-floor-journal" in (tree / "benchmarks/rest_floor.py").read_text():
                targets.append(
                    rest_target(
                        port_f,
                        key,
                        served.pids,
                        f"gateway REST floor + the journal entry{label}",
                        "/bench/rest-floor-journal",
                    )
                )
        if args.ladder:  # the gateway's architecture rung by rung (benchmarks/ladder_server.py)
            for index, rung in enumerate(LADDER_RUNGS):
                targets.append(
                    rung_target(stack, rung, port + 40 + index, url, fake, key, env_extra)
                )
        if (REFERENCE / "dist" / "index.js").exists():
            targets.append(reference_target(stack, fake, ref_port, "reference MCP get_order"))
        else:
            print("reference not built (sh benchmarks/reference_setup.sh): floor only")
        result["sequential"] = asyncio.run(sequential(targets, args.calls, 20, dbname))
        if args.alone:
            result["alone"] = asyncio.run(alone(targets, args.calls, 20, dbname))
        result["statements"] = statements_per_call(key, ARGS)
        result["uptime_after_sequential"] = uptime()
        result["load"] = []
        for _ in range(args.rounds):
            # Under load MCP only: REST is timed by the one-client part.
            for target in [t for t in targets[2:] if " REST " not in t.name]:
                row = asyncio.run(
                    loaded(
                        target,
                        args.clients,
                        args.duration,
                        dbname if target.pg else None,
                    )
                )
                print(f"  {row}", flush=True)
                result["load"].append(row)
    result["uptime_end"] = uptime()
    result["journal"] = journal_sizes(dbname)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--port",
        type=int,
        default=18110,
        help="five ports from here, two more per --compare tree, one with --access-log, "
        "one with --granian",
    )
    parser.add_argument("--env", action="append", default=[], help="NAME=value for the gateway")
    parser.add_argument(
        "--access-log",
        action="store_true",
        help="also a gateway with uvicorn's access log on (a fifth port)",
    )
    parser.add_argument(
        "--granian",
        action="store_true",
        help="also the gateway served by granian instead of uvicorn (a port past the REST floors)",
    )
    parser.add_argument(
        "--compare",
        action="append",
        default=[],
        help="a source tree (e.g. `git archive main` unpacked) whose gateway "
        "runs in the same run too (one more port each; may repeat)",
    )
    parser.add_argument(
        "--alone",
        action="store_true",
        help="after the interleaved part, time each kind alone too (one client)",
    )
    parser.add_argument(
        "--ladder",
        action="store_true",
        help="also the rungs of benchmarks/ladder_server.py (seven ports from --port + 40)",
    )
    parser.add_argument("--tag", default="")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with bench_database("postgres", "cost") as url:
        result = run(args, url)
    save(f"cost_per_call{args.tag}", result, render(result), started)


if __name__ == "__main__":
    main()
