"""Overload answered, not queued (issue 44): admitted calls' latency at a worker's capacity and
at twice it, with the in-flight limit (adapters/inflight.py) and without it, in one run.

One uvicorn worker serves config.asgi:application on SQLite with a sandbox contour whose
upstream answers after `--latency-ms` (the sandbox's latency fault), so a worker's capacity is
its `--limit` slots: `--limit` calls in flight at once. `--limit` clients then `2 × --limit`
clients call REST `get_order` back to back for `--seconds` each; the limit is
`GATEWAY_MAX_INFLIGHT=--limit` in one server and `0` (off: calls queue for the pool's threads)
in the other. Both have `--limit` pool threads (the default: GATEWAY_MAX_INFLIGHT is
GATEWAY_SYNC_THREADS), so without the limit a call past capacity waits in the pool's queue.
Each row is preceded by 2 s of the same load, not counted (start-up, connections).

    python -m benchmarks.overload --limit 4 --latency-ms 200 --seconds 10 --waits 0.25 0

Wall-clock figures: the upstream's latency, not CPU, is what fills the slots here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(  # noqa: S603 - our own manage.py with our own arguments
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout


def start(
    state: Path, port: int, limit: int, threads: int, latency_ms: int, wait: float
) -> tuple[subprocess.Popen[bytes], str, str]:
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{state / 'db.sqlite3'}",
        "LOG_LEVEL": "WARNING",
        "GATEWAY_SYNC_THREADS": str(threads),
        "GATEWAY_MAX_INFLIGHT": str(limit),
        "GATEWAY_INFLIGHT_WAIT_SECONDS": str(wait),
        "MCP_LEAN": "true",
        "INVOICEBOX_RATE_LIMIT": "1000000000/30",
    }
    manage(env, "migrate", "--noinput")
    manage(env, "create_contour", "acme", "--mode", "sandbox", "--toolsets", "read")
    key = manage(env, "create_api_key", "acme").strip()
    manage(
        env,
        "shell",
        "-c",
        "from sandbox.api import set_faults; from tools.models import Contour; "
        f"set_faults(Contour.objects.get(slug='acme').api_token, latency_ms={latency_ms})",
    )
    server = subprocess.Popen(  # noqa: S603
        [
            sys.executable,
            "-m",
            "uvicorn",
            "config.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--no-access-log",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            httpx.get(f"{base}/health", timeout=1)
            break
        except httpx.TransportError:
            time.sleep(0.1)
    return server, base, key


def drive(base: str, key: str, clients: int, seconds: float) -> dict[str, float]:
    admitted: list[float] = []
    refused: list[float] = []
    other: list[int] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client() -> None:
        with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {key}"}) as http:
            while time.monotonic() < stop:
                started = time.perf_counter()
                response = http.post(
                    f"{base}/api/v1/call",
                    json={"name": "get_order", "arguments": {"order_id": str(uuid.uuid4())}},
                )
                took = (time.perf_counter() - started) * 1000
                with lock:
                    if response.status_code == 503:
                        refused.append(took)
                    elif response.status_code == 422:
                        admitted.append(took)
                    else:
                        other.append(response.status_code)
                if response.status_code == 503:
                    # what a client honouring Retry-After would do, shortened to stay loaded
                    time.sleep(0.05)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    def pct(values: list[float], q: float) -> float:
        return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else float("nan")

    return {
        "admitted": len(admitted),
        "admitted_p50": pct(admitted, 50),
        "admitted_p99": pct(admitted, 99),
        "refused": len(refused),
        "refused_p99": pct(refused, 99),
        "other": len(other),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--port", type=int, default=8650)
    parser.add_argument(
        "--waits",
        type=float,
        nargs="+",
        default=[0.25, 0.0],
        help="GATEWAY_INFLIGHT_WAIT_SECONDS of each limited server",
    )
    parser.add_argument(
        "--factors", type=int, nargs="+", default=[1, 2], help="clients as multiples of --limit"
    )
    args = parser.parse_args()
    rows = []
    servers = [(f"limit {args.limit}, wait {wait:g} s", args.limit, wait) for wait in args.waits]
    for label, limit, wait in [*servers, ("limit off", 0, 0.0)]:
        with tempfile.TemporaryDirectory(prefix="overload-") as state:
            server, base, key = start(
                Path(state), args.port, limit, args.limit, args.latency_ms, wait
            )
            try:
                for clients in (factor * args.limit for factor in args.factors):
                    drive(base, key, clients, 2)  # warm-up, not counted
                    rows.append((label, clients, drive(base, key, clients, args.seconds)))
            finally:
                server.terminate()
                server.wait(timeout=10)
    print(
        f"upstream latency {args.latency_ms} ms, capacity {args.limit} calls in flight, "
        f"{args.seconds:g} s per row"
    )
    print(
        "| server | clients | admitted | p50 ms | p99 ms | refused 503 | refusal p99 ms | other |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, clients, r in rows:
        print(
            f"| {label} | {clients} | {r['admitted']} | {r['admitted_p50']:.0f} | "
            f"{r['admitted_p99']:.0f} | {r['refused']} | {r['refused_p99']:.0f} | "
            f"{r['other']} |"
        )


if __name__ == "__main__":
    main()
