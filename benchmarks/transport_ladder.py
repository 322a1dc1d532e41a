"""The upstream GET, rung by rung (issue 44): what each HTTP client layer costs in CPU per request.

One pooled, kept-alive GET of an order against the fake upstream (harness/fake_upstream.py,
run as its own process so that its CPU is not counted), through each client in turn, rounds
interleaved in one run. The figure is this process's CPU time (time.process_time(): user +
system of every thread) per request, which stays meaningful on a shared, busy machine where
wall-clock throughput does not; wall time per request is printed beside it.

Sync rungs are what the gateway runs: invoicebox/transport.py calls the upstream from sync code
on the pool's threads (config/asgi.py), through the pooled httpx.Client of
invoicebox/connections.py. The async rungs (httpx's AsyncClient, the `httpx-aiohttp`
transport, httpcore's async pool, hand-written asyncio streams) are measured for the record:
an aiohttp transport is async-only and does not apply to that sync path.

    python -m benchmarks.transport_ladder --requests 2000 --rounds 5 --clients 1 8

`--clients 8` runs 8 threads (sync) or 8 tasks (async) on one shared client.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ORDER = "0c1d2e3f-0000-4000-8000-000000000001"
PATH = f"/v3/filter/api/order/order?id={ORDER}"
HEADERS = {
    "Authorization": "Bearer bench-token",
    "Content-Type": "application/json",
    "Accept": "application/json",
    "User-Agent": "transport-ladder/1.0",
}

SyncGet = Callable[[], bytes]
AsyncGet = Callable[[], Awaitable[bytes]]


# -- sync rungs: each returns (get, close) ------------------------------------------------------


def raw_socket(host: str, port: int) -> tuple[SyncGet, Callable[[], None]]:
    """The floor: a kept-alive socket, the request bytes, the answer read by Content-Length."""
    local = threading.local()
    head = (
        f"GET {PATH} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        + "".join(f"{k}: {v}\r\n" for k, v in HEADERS.items())
        + "\r\n"
    ).encode()

    def get() -> bytes:
        sock = getattr(local, "sock", None)
        if sock is None:
            sock = local.sock = socket.create_connection((host, port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            local.file = sock.makefile("rb")
        sock.sendall(head)
        length = 0
        while (line := local.file.readline()) not in (b"\r\n", b""):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        return local.file.read(length)

    return get, lambda: None


def stdlib_http_client(host: str, port: int) -> tuple[SyncGet, Callable[[], None]]:
    local = threading.local()

    def get() -> bytes:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection(host, port, timeout=30)
        conn.request("GET", PATH, headers=HEADERS)
        return conn.getresponse().read()

    return get, lambda: None


def urllib3_pool(host: str, port: int) -> tuple[SyncGet, Callable[[], None]]:
    import urllib3

    pool = urllib3.HTTPConnectionPool(host, port, maxsize=16, timeout=30.0, retries=False)
    return (lambda: pool.request("GET", PATH, headers=HEADERS).data), pool.close


def httpcore_pool(host: str, port: int) -> tuple[SyncGet, Callable[[], None]]:
    import httpcore

    pool = httpcore.ConnectionPool(max_connections=16)
    url = f"http://{host}:{port}{PATH}"
    timeouts = {"connect": 30.0, "read": 30.0, "write": 30.0, "pool": 30.0}

    def get() -> bytes:
        return pool.request("GET", url, headers=HEADERS, extensions={"timeout": timeouts}).content

    return get, pool.close


def httpx_transport(host: str, port: int) -> tuple[SyncGet, Callable[[], None]]:
    """httpx's own transport (httpcore underneath, its errors mapped to httpx's), no Client."""
    import httpx

    transport = httpx.HTTPTransport()
    url = httpx.URL(f"http://{host}:{port}{PATH}")
    timeouts = {"connect": 30.0, "read": 30.0, "write": 30.0, "pool": 30.0}

    def get() -> bytes:
        request = httpx.Request("GET", url, headers=HEADERS, extensions={"timeout": timeouts})
        response = transport.handle_request(request)
        try:
            return response.read()
        finally:
            response.close()

    return get, transport.close


def httpx_bare(host: str, port: int) -> tuple[SyncGet, Callable[[], None]]:
    import httpx

    client = httpx.Client(timeout=30.0)
    url = f"http://{host}:{port}{PATH}"
    return (lambda: client.get(url, headers=HEADERS).content), client.close


def httpx_gateway(host: str, port: int) -> tuple[SyncGet, Callable[[], None]]:
    """The gateway's own client (invoicebox/connections.py: base URL, no-cookie jar, default
    headers, shared SSL context) and its call shape (invoicebox/transport.py)."""
    from invoicebox import connections

    client = connections.build(f"http://{host}:{port}", timeout=30.0)
    params = [("id", ORDER)]

    def get() -> bytes:
        return client.request(
            "GET", "/filter/api/order/order", params=params, content=None, headers=HEADERS
        ).content

    return get, client.close


def gateway_send(host: str, port: int, transport: Any = None) -> tuple[SyncGet, Callable[[], None]]:
    """What the gateway runs now: the same client, its request handed straight to its
    transport (invoicebox/connections.py: send); httpx's default one unless given."""
    from invoicebox import connections

    client = connections.build(f"http://{host}:{port}", timeout=30.0, transport=transport)
    params = [("id", ORDER)]

    def get() -> bytes:
        return connections.send(
            client, "GET", "/filter/api/order/order", params=params, content=None, headers=HEADERS
        ).content

    return get, client.close


def gateway_send_urllib3(host: str, port: int) -> tuple[SyncGet, Callable[[], None]]:
    """connections.send on a client whose transport is benchmarks/urllib3_transport.py
    (urllib3's pools behind httpx's transport interface)."""
    from benchmarks.urllib3_transport import PooledTransport
    from invoicebox import connections

    return gateway_send(host, port, PooledTransport(connections.ssl_context()))


SYNC_RUNGS: dict[str, Callable[[str, int], tuple[SyncGet, Callable[[], None]]]] = {
    "sync socket (floor)": raw_socket,
    "sync http.client": stdlib_http_client,
    "sync urllib3": urllib3_pool,
    "sync httpcore pool": httpcore_pool,
    "sync httpx.HTTPTransport": httpx_transport,
    "sync httpx.Client": httpx_bare,
    "sync httpx.Client, gateway's before": httpx_gateway,
    "sync connections.send, gateway's now": gateway_send,
    "sync connections.send, urllib3 transport": gateway_send_urllib3,
}


# -- async rungs --------------------------------------------------------------------------------


def asyncio_streams(host: str, port: int) -> tuple[Callable[[], AsyncGet], Callable[[], Any]]:
    head = (
        f"GET {PATH} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        + "".join(f"{k}: {v}\r\n" for k, v in HEADERS.items())
        + "\r\n"
    ).encode()

    def make() -> AsyncGet:
        streams: list[Any] = []

        async def get() -> bytes:
            if not streams:
                streams.extend(await asyncio.open_connection(host, port))
            reader, writer = streams
            writer.write(head)
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            return await reader.readexactly(length)

        return get

    return make, None


def async_httpcore(host: str, port: int) -> tuple[Callable[[], AsyncGet], Callable[[], Any]]:
    import httpcore

    pool = httpcore.AsyncConnectionPool(max_connections=16)
    url = f"http://{host}:{port}{PATH}"

    async def get() -> bytes:
        return (await pool.request("GET", url, headers=HEADERS)).content

    return (lambda: get), pool.aclose


def async_httpx(host: str, port: int) -> tuple[Callable[[], AsyncGet], Callable[[], Any]]:
    import httpx

    client = httpx.AsyncClient(timeout=30.0)
    url = f"http://{host}:{port}{PATH}"

    async def get() -> bytes:
        return (await client.get(url, headers=HEADERS)).content

    return (lambda: get), client.aclose


def async_httpx_aiohttp(host: str, port: int) -> tuple[Callable[[], AsyncGet], Callable[[], Any]]:
    import httpx
    from httpx_aiohttp import AiohttpTransport

    client = httpx.AsyncClient(timeout=30.0, transport=AiohttpTransport())
    url = f"http://{host}:{port}{PATH}"

    async def get() -> bytes:
        return (await client.get(url, headers=HEADERS)).content

    return (lambda: get), client.aclose


ASYNC_RUNGS = {
    "async asyncio streams (floor)": asyncio_streams,
    "async httpcore pool": async_httpcore,
    "async httpx.AsyncClient": async_httpx,
    "async httpx + httpx-aiohttp": async_httpx_aiohttp,
}


# -- measuring ----------------------------------------------------------------------------------


def measure_sync(get: SyncGet, requests: int, clients: int) -> tuple[float, float]:
    """(CPU µs, wall µs) per request, `clients` threads sharing `get`."""
    per = requests // clients
    barrier = threading.Barrier(clients + 1)

    def worker() -> None:
        barrier.wait()
        for _ in range(per):
            get()

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for thread in threads:
        thread.start()
    cpu, wall = time.process_time(), time.perf_counter()
    barrier.wait()
    for thread in threads:
        thread.join()
    done = per * clients
    return ((time.process_time() - cpu) / done * 1e6, (time.perf_counter() - wall) / done * 1e6)


def measure_async(
    make: Callable[[], AsyncGet], requests: int, clients: int, loop: Any
) -> tuple[float, float]:
    per = requests // clients

    async def worker(get: AsyncGet) -> None:
        for _ in range(per):
            await get()

    async def run() -> None:
        await asyncio.gather(*(worker(make()) for _ in range(clients)))

    cpu, wall = time.process_time(), time.perf_counter()
    loop.run_until_complete(run())
    done = per * clients
    return ((time.process_time() - cpu) / done * 1e6, (time.perf_counter() - wall) / done * 1e6)


def start_upstream(port: int) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(  # noqa: S603
        [
            sys.executable,
            "-m",
            "harness.fake_upstream",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    assert server.stdout is not None
    if not server.stdout.readline():  # "fake upstream on ...", or nothing: it did not start
        raise SystemExit(f"the fake upstream did not start (exit {server.wait()})")
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--port", type=int, default=8690)
    parser.add_argument("--kinds", nargs="+", default=["sync", "async"])
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()  # the gateway's rung builds its client through invoicebox.connections

    upstream = start_upstream(args.port)
    host, port = "127.0.0.1", args.port
    loop = asyncio.new_event_loop()
    results: dict[str, dict[int, list[tuple[float, float]]]] = {}
    try:
        rungs: list[tuple[str, str, Any, Any]] = []
        for name, build in SYNC_RUNGS.items() if "sync" in args.kinds else ():
            get, close = build(host, port)
            rungs.append((name, "sync", get, close))
        for name, build_async in ASYNC_RUNGS.items() if "async" in args.kinds else ():
            try:
                make, close = build_async(host, port)
            except ImportError as missing:
                print(f"skipped {name}: {missing}")
                continue
            rungs.append((name, "async", make, close))
        for clients in args.clients:
            for _name, kind, runner, _ in rungs:  # warm-up: connections open, code paths hot
                if kind == "sync":
                    measure_sync(runner, 50 * clients, clients)
                else:
                    measure_async(runner, 50 * clients, clients, loop)
            for round_no in range(args.rounds):
                # Interleaved, the order rotated every round: a neighbour's load hits all rungs.
                order = rungs[round_no % len(rungs) :] + rungs[: round_no % len(rungs)]
                for name, kind, runner, _ in order:
                    figure = (
                        measure_sync(runner, args.requests, clients)
                        if kind == "sync"
                        else measure_async(runner, args.requests, clients, loop)
                    )
                    results.setdefault(name, {}).setdefault(clients, []).append(figure)
        for _, _kind, _, close in rungs:
            if close is not None:
                outcome = close()
                if asyncio.iscoroutine(outcome):
                    loop.run_until_complete(outcome)
    finally:
        upstream.terminate()
        upstream.wait(timeout=10)
        loop.close()
    print(
        f"CPU µs per request (median [min–max] over {args.rounds} rounds of "
        f"{args.requests}), wall µs median; fake upstream in its own process"
    )
    header = (
        "| rung | "
        + " | ".join(f"CPU, {c} client{'s' * (c > 1)} | wall" for c in args.clients)
        + " |"
    )
    print(header)
    print("|---" * (1 + 2 * len(args.clients)) + "|")
    for name, by_clients in results.items():
        cells = []
        for clients in args.clients:
            cpu = [c for c, _ in by_clients[clients]]
            wall = [w for _, w in by_clients[clients]]
            cells.append(f"{statistics.median(cpu):.0f} [{min(cpu):.0f}–{max(cpu):.0f}]")
            cells.append(f"{statistics.median(wall):.0f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    name: {str(c): figures for c, figures in by.items()}
                    for name, by in results.items()
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
