"""The MCP fast path's own Python, in process (issue 44, third pass): `lean.call_of` and
`http.admit` (the key, the session, the core call with its journal, the answer's bytes) on
PostgreSQL against the fake upstream, with no server, loop or client around them.

    .venv/bin/python -m benchmarks.lean_hop [--reads 1000] [--rounds 3] [--port 18400]
        [--profile tottime|cumulative] [--top 40]

Prints the thread CPU per read of each round and, with --profile, a cProfile (thread CPU
clock) of one more round: its first line counts the Python function calls, a figure the
machine's load does not move. Run it on two trees in turn to compare them.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from typing import Any

from benchmarks._common import key_on_fake_upstream
from benchmarks.cost_per_call import GATEWAY_ENV, ORDER_ID, TOKEN

VERSION = "2025-11-25"  # a session-era version: the fast path's


def reader(key: str) -> Any:
    """One read as the fast path answers it, on a session opened for it."""
    from starlette.requests import Request

    from adapters.mcp import http, lean, sessions
    from tools.models import ApiKey

    found = ApiKey.authenticate(key)
    assert found is not None
    session_id = "bench-lean-hop-session-0000000001"
    sessions.record(session_id, found.pk, VERSION, {"capabilities": {}, "protocolVersion": VERSION})
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "get_order", "arguments": {"order_id": ORDER_ID}},
        }
    ).encode()
    header = f"Bearer {key}"
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "query_string": b"",
        "client": ("127.0.0.1", 1),
        "headers": [
            (b"mcp-protocol-version", VERSION.encode()),
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"mcp-session-id", session_id.encode()),
            (b"authorization", header.encode()),
        ],
    }

    def read() -> None:
        call = lean.call_of(Request(scope), body)
        admitted = http.admit(header, "127.0.0.1", session_id, True, body, call)
        assert admitted.response is not None and admitted.response.status_code == 200

    return read


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reads", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=18400, help="the fake upstream's")
    parser.add_argument("--profile", choices=("tottime", "cumulative"))
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args(argv)
    with key_on_fake_upstream("leanhop", args.port, GATEWAY_ENV, TOKEN) as key:
        read = reader(key)
        for _ in range(50):
            read()
        for _ in range(args.rounds):
            started = time.thread_time()
            for _ in range(args.reads):
                read()
            print(f"thread CPU ms/read {(time.thread_time() - started) / args.reads * 1000:.3f}")
        if args.profile:
            profile = cProfile.Profile(time.thread_time)
            profile.enable()
            for _ in range(args.reads):
                read()
            profile.disable()
            pstats.Stats(profile).sort_stats(args.profile).print_stats(args.top)


if __name__ == "__main__":
    main()
