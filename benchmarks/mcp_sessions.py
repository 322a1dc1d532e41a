"""MCP sessions shared by workers (issue 26): what a session's first and later calls cost with
one worker and with two (every request to the other worker than the one before, as a balancer
without stickiness does), and what a session costs the process that holds it.

    .venv/bin/python -m benchmarks.mcp_sessions [--sessions 30] [--calls 10] [--held 500]

PostgreSQL (the shared store), Redis off (no dialog here), the bundled sandbox in process.
Raw Streamable HTTP over one httpx client per worker, so the figures are the server's; the
first call on a worker that has no copy of the session includes rebuilding that copy.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks._common import (
    Server,
    bench_database,
    free_port,
    md_table,
    save,
    seed_key,
    server_env,
    summary_ms,
)

VERSION = "2025-11-25"


class Raw:
    """One worker's /mcp, spoken to directly."""

    def __init__(self, base: str, key: str) -> None:
        self.url = f"{base}/mcp"
        self.http = httpx.Client(
            timeout=60,
            headers={
                "Authorization": f"Bearer {key}",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
                "MCP-Protocol-Version": VERSION,
            },
        )

    def post(self, body: dict[str, Any], session: str | None = None) -> httpx.Response:
        headers = {"Mcp-Session-Id": session} if session else {}
        response = self.http.post(self.url, json=body, headers=headers)
        response.raise_for_status()
        return response

    def open(self) -> str:
        opened = self.post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"},
                },
            }
        )
        session = opened.headers["mcp-session-id"]
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        return session

    def call(self, session: str, request_id: int) -> float:
        started = time.perf_counter()
        answer = self.post(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": "find_orders", "arguments": {}},
            },
            session,
        )
        elapsed = time.perf_counter() - started
        assert '"status":"ok"' in answer.text.replace(" ", ""), answer.text[:300]
        return elapsed


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def latency(workers: list[Raw], sessions: int, calls: int) -> dict[str, Any]:
    opening, first, later = [], [], []
    for _ in range(sessions):
        started = time.perf_counter()
        session = workers[0].open()
        opening.append(time.perf_counter() - started)
        # The first call goes to the next worker: with two, one that never saw the session.
        first.append(workers[1 % len(workers)].call(session, 2))
        for index in range(calls):
            later.append(workers[index % len(workers)].call(session, 3 + index))
    return {
        "initialize": summary_ms(opening),
        "first call": summary_ms(first),
        "later calls": summary_ms(later),
    }


def held(server: Server, raw: Raw, count: int) -> dict[str, Any]:
    """RSS of one worker before and after it opens `count` sessions (and answered one call in
    each, so every session is a live copy with its task)."""
    assert server.process is not None
    pid = ([p for p in server.pids() if p != server.process.pid] or [server.process.pid])[0]
    for index in range(3):  # warm: the first sessions import and cache what all of them use
        raw.call(raw.open(), 100 + index)
    before = rss_kib(pid)
    for index in range(count):
        raw.call(raw.open(), 200 + index)
    after = rss_kib(pid)
    return {
        "sessions": count,
        "rss_before_mib": round(before / 1024, 1),
        "rss_after_mib": round(after / 1024, 1),
        "per_session_kib": round((after - before) / count, 1),
    }


def run(args: argparse.Namespace, url: str) -> tuple[dict[str, Any], str]:
    key = seed_key(url)
    extra = {
        "CELERY_BROKER_URL": "memory://",
        "MCP_REDIS_URL": "",
        # One key holds them all: every cap (issue 41: per key and contour too) above it.
        **{
            name: str(args.held + 100)
            for name in (
                "MCP_MAX_SESSIONS",
                "MCP_MAX_SESSIONS_PER_KEY",
                "MCP_MAX_SESSIONS_PER_CONTOUR",
            )
        },
    }
    data: dict[str, Any] = {}
    port_a, port_b = free_port(), free_port()
    with (
        Server(server_env(url, port_a, **extra), port_a) as a,
        Server(server_env(url, port_b, **extra), port_b) as b,
    ):
        raw_a, raw_b = Raw(a.base, key), Raw(b.base, key)
        latency([raw_a], 3, 2)  # warm both
        latency([raw_a, raw_b], 3, 2)
        data["1 worker"] = latency([raw_a], args.sessions, args.calls)
        data["2 workers, alternating"] = latency([raw_a, raw_b], args.sessions, args.calls)
        data["held"] = held(b, raw_b, args.held)
    rows = [
        [cell, part, v["median_ms"], v["p99_ms"], v["n"]]
        for cell in ("1 worker", "2 workers, alternating")
        for part, v in data[cell].items()
    ]
    h = data["held"]
    markdown = (
        md_table(["workers", "request", "median ms", "p99 ms", "n"], rows)
        + "\n\n"
        + f"One worker holding {h['sessions']} more sessions: RSS {h['rss_before_mib']}"
        f" → {h['rss_after_mib']} MiB, {h['per_session_kib']} KiB per session.\n"
    )
    return data, markdown


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--held", type=int, default=500)
    args = parser.parse_args(argv)
    started = time.monotonic()
    with bench_database("postgres", "mcp_sessions") as url:
        data, markdown = run(args, url)
    save("mcp_sessions-postgres", json.loads(json.dumps(data)), markdown, started)


if __name__ == "__main__":
    main()
