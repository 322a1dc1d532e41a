"""Rungs of the gateway's own architecture, for benchmarks.cost_per_call --ladder (issue 44):
what one MCP get_order costs at least when served the way the gateway serves it, each rung
adding one part of the path. The first four use nothing of the gateway's code but its upstream
client; the three above `pg` each add one part the product requires, done by the gateway's
own code (benchmarks/ladder_sdk.py, benchmarks/ladder_required.py).

    LADDER_RUNG=echo|hop|get|pg|sdk|journal|core LADDER_UPSTREAM=http://127.0.0.1:8765 \
        [LADDER_DATABASE=postgres://...] [DATABASE_URL=... LADDER_KEY=...] \
        .venv/bin/python -m uvicorn benchmarks.ladder_server:app --port 18120 --no-access-log

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
  (the entry's SHA-256 computed in the process; one synchronous commit);
- sdk: pg, the tools/call parsed and answered with the mcp SDK's types as the gateway's fast
  path does (adapters/mcp/lean.py): the body through the SDK's JSON-RPC adapter, the params
  checked by the spec's surface and the SDK's model (on the event loop, before the hop); the
  answer the gateway's envelope (adapters/mcp/schema.tool_result: text and structured
  content) serialised by the SDK's result sieve and JSONRPCResponse (in the hop). No Django;
- journal: sdk, with the hand-written journal replaced by the gateway's: the read's entry
  made by tools/pipeline/call_trace.journal_outcome (audit/journal.build: redaction of the
  contour's secrets and of personal values in the arguments and the upstream's reply;
  audit/lanes.append: the lane's two round trips, the HMAC link under GATEWAY_JOURNAL_KEYS;
  the ops hooks) on the gateway's own audit_journalentry, the run's contour and key. Django
  is set up in the process; every statement runs on its connection of the thread;
- core: the gateway's whole core call (tools/pipeline/gateway.call: the key's scope, the
  contour's checks, validation, the upstream GET with its budget, shaping, the journal) and
  the SDK's answer, behind this file's ASGI app and hand-written key and session reads (the
  key's row, joined with its contour, from the gateway's own tables, on every call; the key
  and contour objects built once, by the ORM, its last use taken from that row) instead of
  the gateway's Starlette stack and its ORM reads.

The gap between `pg` and the gateway is the gateway's own Python (Django's ORM and
connection handling, the core's validation, shaping and redaction, the SDK's types); the gap
between `pg` and the reference is the architecture: a sync core on threads and a database.
`sdk`, `journal` and `core` split the first gap: what they add is required work; what is left
between `core` and the gateway is its ASGI stack (Starlette, the middleware, the SDK's
transport checks) and its key and session reads through the ORM.
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

from benchmarks import ladder_sdk
from benchmarks.ladder_sdk import SdkCall
from invoicebox.connections import send
from tools.errors import Outcome

RUNG = os.environ.get("LADDER_RUNG", "echo")
UPSTREAM = os.environ.get("LADDER_UPSTREAM", "http://127.0.0.1:8765")
DATABASE = os.environ.get("LADDER_DATABASE", "")
RUNGS = ("echo", "hop", "get", "pg", "sdk", "journal", "core")
if RUNG not in RUNGS:
    raise SystemExit(f"LADDER_RUNG must be one of {RUNGS}")
SDK_RUNGS = ("sdk", "journal", "core")  # parsed and answered by the SDK (ladder_sdk.py)
DJANGO_RUNGS = ("journal", "core")  # the gateway's own code, on Django (ladder_required.py)
if RUNG in DJANGO_RUNGS:
    from benchmarks import ladder_required as required

_pool = ThreadPoolExecutor(max_workers=int(os.environ.get("LADDER_THREADS", "36")))
_local = threading.local()
_client = httpx.Client(
    base_url=UPSTREAM.rstrip("/") + "/v3",
    timeout=30,
    headers={"Accept": "application/json", "User-Agent": "ladder"},
)
ECHO = {"status": "ok", "data": {"id": "0" * 36, "status": "created", "amount": "12200"}}
READ_MESSAGE = "Вот данные счёта."  # the core's message for get_order (tools/catalog/orders.py)
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
KEY_SQL = "SELECT contour, revoked, last_used FROM ladder_key WHERE digest = 'k'"
SESSION_SQL = (
    "SELECT protocol, params, last_seen, used FROM ladder_session "
    "WHERE id = %s AND key_digest = 'k'"
)
BUDGET_SQL = (
    "INSERT INTO ladder_budget VALUES ('acct', floor(extract(epoch FROM now()) / 30), 1) "
    "ON CONFLICT (account, slot) DO UPDATE SET used = ladder_budget.used + 1 "
    "RETURNING used, set_config('synchronous_commit', 'off', true)"
)


def _connection() -> Any:
    """This thread's connection (Django's on the Django rungs), its session row made once."""
    if RUNG in DJANGO_RUNGS:
        conn = required.database_connection()
    else:
        conn = getattr(_local, "conn", None)
        if conn is None:
            import psycopg

            conn = psycopg.connect(DATABASE, autocommit=True, cursor_factory=psycopg.ClientCursor)
            _local.conn = conn
    if not getattr(_local, "session", False):
        conn.execute(
            "INSERT INTO ladder_session VALUES (%s, 'k', '2025-11-25', '{}', now(), true) "
            "ON CONFLICT DO NOTHING",
            (SESSION,),
        )
        _local.session = True
    return conn


def _key_and_session(conn: Any, key_sql: str = KEY_SQL, key_params: Any = ()) -> Any:
    key_row = conn.execute(key_sql, key_params).fetchone()
    conn.execute(SESSION_SQL, (SESSION,))
    return key_row


def _database_work(order: dict[str, Any], arguments: dict[str, Any]) -> None:
    conn = _connection()
    _key_and_session(conn)
    conn.execute(BUDGET_SQL)
    _journal_by_hand(conn, order, arguments)


def _journal_by_hand(conn: Any, order: dict[str, Any], arguments: dict[str, Any]) -> None:
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


def _get(arguments: dict[str, Any]) -> dict[str, Any]:
    response = send(
        _client,
        "GET",
        "/filter/api/order/order",
        params=[("id", str(arguments.get("order_id", ""))), ("_pageSize", 1)],
    )
    order: dict[str, Any] = response.json()
    return order


def _work(arguments: dict[str, Any]) -> dict[str, Any]:
    """hop, get, pg: the call's work in the hop; the answer built by hand."""
    if RUNG == "hop":
        return ECHO
    order = _get(arguments)
    if RUNG == "pg":
        _database_work(order, arguments)
    return {"status": "ok", "data": order}


def _sdk_work(call: SdkCall) -> bytes:
    """sdk, journal, core: the call's work in the hop, in the gateway's order (the key and the
    session, then the call), and its answer serialised by the SDK."""
    arguments = call.params.arguments or {}
    conn = _connection()
    if RUNG == "core":
        key_row = _key_and_session(conn, required.KEY_SQL, (required.KEY_HASH,))
        outcome = required.core_call(key_row, call.params.name, arguments)
        return ladder_sdk.answer(call, outcome)
    _key_and_session(conn)
    conn.execute(BUDGET_SQL)
    order = _get(arguments)
    if RUNG == "sdk":
        _journal_by_hand(conn, order, arguments)
        outcome = Outcome(status="ok", code="ok", message=READ_MESSAGE, data=order)
    else:
        outcome = required.journal_read(arguments, order)
    return ladder_sdk.answer(call, outcome)


def _setup() -> None:
    if RUNG in ("pg", *SDK_RUNGS):
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


async def _respond(send_: Any, status: int, body: bytes, headers: list[Any]) -> None:
    await send_(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send_({"type": "http.response.body", "body": body})


async def _answer(send_: Any, status: int, payload: Any, headers: list[Any]) -> None:
    body = b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode()
    await _respond(send_, status, body, headers)


def _header(scope: dict[str, Any], name: bytes) -> str:
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == name), "")


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
    body = await _body(receive)
    session = [(b"mcp-session-id", SESSION.encode())]
    loop = asyncio.get_running_loop()
    if RUNG in SDK_RUNGS and b'"tools/call"' in body:  # parsed by the SDK, on the loop
        call = ladder_sdk.parse_call(body, _header(scope, b"mcp-protocol-version"))
        await _respond(send_, 200, await loop.run_in_executor(_pool, _sdk_work, call), session)
        return
    message = json.loads(body)
    method = message.get("method")
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
            outcome = await loop.run_in_executor(_pool, _work, arguments)
        text = json.dumps(outcome, ensure_ascii=False)
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    await _answer(send_, 200, {"jsonrpc": "2.0", "id": message["id"], "result": result}, session)
