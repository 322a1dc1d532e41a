"""Rungs of the gateway's own architecture, for benchmarks.cost_per_call --ladder (issue 44):
what one MCP get_order costs at least when served the way the gateway serves it, each rung
adding one part of the path and nothing of the gateway's code but its upstream client.

    LADDER_RUNG=echo|hop|get|pg LADDER_UPSTREAM=http://127.0.0.1:8765 \
        [LADDER_DATABASE=postgres://...] .venv/bin/python -m uvicorn \
        benchmarks.ladder_server:app --port 18120 --no-access-log

- echo: uvicorn (httptools, uvloop) and a bare ASGI app speaking just enough Streamable HTTP
  (initialize, the initialized notification, tools/call) with a fixed answer the size of the
  gateway's: the HTTP server and JSON-RPC, no SDK;
- hop: + the call's work on a thread pool, one hop there and back (the gateway's sync core
  runs on the pool: config/asgi.py, adapters/mcp/http.py);
- get: + the upstream GET there, through invoicebox.connections.send on a pooled httpx.Client
  (what the gateway sends), its JSON read and the answer built from it;
- pg: + the five PostgreSQL round trips of the gateway's MCP read, on one connection per
  thread, with tables of the same shape made for the run: the key's row, the session's row,
  the budget's upsert (committed asynchronously, as invoicebox/limits.py does), then the
  journal's `BEGIN; SELECT … FOR UPDATE SKIP LOCKED` and its `WITH … INSERT … UPDATE; COMMIT`
  (the entry's SHA-256 computed in the process; one synchronous commit).

The gap between `pg` and the gateway is the gateway's own Python (Django's ORM and
connection handling, the core's validation, shaping and redaction, the SDK's types); the gap
between `pg` and the reference is the architecture: a sync core on threads and a database.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from invoicebox.connections import send

RUNG = os.environ.get("LADDER_RUNG", "echo")
UPSTREAM = os.environ.get("LADDER_UPSTREAM", "http://127.0.0.1:8765")
DATABASE = os.environ.get("LADDER_DATABASE", "")
RUNGS = ("echo", "hop", "get", "pg")
if RUNG not in RUNGS:
    raise SystemExit(f"LADDER_RUNG must be one of {RUNGS}")

_pool = ThreadPoolExecutor(max_workers=int(os.environ.get("LADDER_THREADS", "36")))
_local = threading.local()
_client = httpx.Client(
    base_url=UPSTREAM.rstrip("/") + "/v3",
    timeout=30,
    headers={"Accept": "application/json", "User-Agent": "ladder"},
)
ECHO = {"status": "ok", "data": {"id": "0" * 36, "status": "created", "amount": "12200"}}
SESSION = str(uuid.uuid4())
SCHEMA = """
CREATE TABLE IF NOT EXISTS ladder_key (digest text PRIMARY KEY, contour int, revoked bool,
    last_used timestamptz);
CREATE TABLE IF NOT EXISTS ladder_session (id text, key_digest text, protocol text,
    params jsonb, last_seen timestamptz, used bool, PRIMARY KEY (id, key_digest));
CREATE TABLE IF NOT EXISTS ladder_budget (account text, slot bigint, used int,
    PRIMARY KEY (account, slot));
CREATE TABLE IF NOT EXISTS ladder_lane (lane int PRIMARY KEY, head text, last_id bigint);
CREATE TABLE IF NOT EXISTS ladder_journal (id bigserial PRIMARY KEY, lane int, at timestamptz,
    tool text, arguments jsonb, outcome jsonb, prev text, hash text UNIQUE);
INSERT INTO ladder_key VALUES ('k', 1, false, now()) ON CONFLICT DO NOTHING;
INSERT INTO ladder_lane SELECT g, '', 0 FROM generate_series(1, 8) g ON CONFLICT DO NOTHING;
"""


def _connection() -> Any:
    import psycopg

    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = psycopg.connect(DATABASE, autocommit=True, cursor_factory=psycopg.ClientCursor)
        conn.execute(
            "INSERT INTO ladder_session VALUES (%s, 'k', '2025-11-25', '{}', now(), true) "
            "ON CONFLICT DO NOTHING",
            (SESSION,),
        )
        _local.conn = conn
    return conn


def _database_work(order: dict[str, Any], arguments: dict[str, Any]) -> None:
    conn = _connection()
    conn.execute("SELECT contour, revoked, last_used FROM ladder_key WHERE digest = 'k'")
    conn.execute(
        "SELECT protocol, params, last_seen, used FROM ladder_session "
        "WHERE id = %s AND key_digest = 'k'",
        (SESSION,),
    )
    conn.execute(
        "INSERT INTO ladder_budget VALUES ('acct', floor(extract(epoch FROM now()) / 30), 1) "
        "ON CONFLICT (account, slot) DO UPDATE SET used = ladder_budget.used + 1 "
        "RETURNING used, set_config('synchronous_commit', 'off', true)"
    )
    cur = conn.cursor()
    try:
        _append(cur, order, arguments)
    except Exception:
        cur.execute("ROLLBACK")
        raise


def _append(cur: Any, order: dict[str, Any], arguments: dict[str, Any]) -> None:
    cur.execute(
        "BEGIN; SELECT lane, head FROM ladder_lane ORDER BY lane FOR UPDATE SKIP LOCKED LIMIT 1"
    )
    cur.nextset()  # past BEGIN's result to the SELECT's
    lane, head = cur.fetchone()
    entry = json.dumps(
        {"id": uuid.uuid4().hex, "tool": "get_order", "arguments": arguments, "outcome": order}
    )
    digest = hashlib.sha256((head + entry).encode()).hexdigest()
    cur.execute(
        "WITH entry AS (INSERT INTO ladder_journal (lane, at, tool, arguments, outcome, prev, "
        "hash) VALUES (%s, now(), 'get_order', %s, %s, %s, %s) RETURNING id) "
        "UPDATE ladder_lane SET head = %s, last_id = (SELECT id FROM entry) WHERE lane = %s; "
        "COMMIT",
        (lane, json.dumps(arguments), entry, head, digest, digest, lane),
    )


def _work(arguments: dict[str, Any]) -> dict[str, Any]:
    if RUNG == "hop":
        return ECHO
    response = send(
        _client,
        "GET",
        "/filter/api/order/order",
        params=[("id", str(arguments.get("order_id", ""))), ("_pageSize", 1)],
    )
    order = response.json()
    if RUNG == "pg":
        _database_work(order, arguments)
    return {"status": "ok", "data": order}


def _setup() -> None:
    if RUNG == "pg":
        import psycopg

        with psycopg.connect(DATABASE, autocommit=True) as conn:
            conn.execute(SCHEMA)


async def _body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _answer(send_: Any, status: int, payload: Any, headers: list[Any]) -> None:
    body = b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode()
    await send_(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send_({"type": "http.response.body", "body": body})


async def app(scope: dict[str, Any], receive: Any, send_: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                _setup()
                await send_({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send_({"type": "lifespan.shutdown.complete"})
                return
    message = json.loads(await _body(receive))
    method = message.get("method")
    session = [(b"mcp-session-id", SESSION.encode())]
    if "id" not in message:  # a notification
        await _answer(send_, 202, None, [])
        return
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "ladder", "version": "1"},
        }
    else:
        arguments = message["params"].get("arguments") or {}
        if RUNG == "echo":
            outcome = ECHO
        else:
            outcome = await asyncio.get_running_loop().run_in_executor(_pool, _work, arguments)
        text = json.dumps(outcome, ensure_ascii=False)
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    await _answer(send_, 200, {"jsonrpc": "2.0", "id": message["id"], "result": result}, session)
