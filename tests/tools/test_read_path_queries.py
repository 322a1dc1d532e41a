"""The database round trips of a read and of a write execution are pinned: a regression in
the lean paths fails here. With DATABASE_PREPARED_STATEMENTS=true (config/settings/framework.py)
the statements every call sends are prepared once per connection and sent as EXECUTE, their
values still bound on the client (tools/models/prepared.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from audit.walk import check_chain
from harness.fake_upstream import MERCHANT_ID, FakeServer
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models.prepared import run_prepared

ROOT = Path(__file__).resolve().parents[2]
ORDER_ID = "0c1d2e3f-0000-4000-8000-0000000000aa"


def key_of_contour(upstream: FakeServer, slug: str, toolsets: list[str]) -> str:
    """A key of a new custom contour whose upstream is the fake, over TCP."""
    contour = create_contour(
        slug,
        mode="custom",
        toolsets=toolsets,
        token="tok",
        base_url=f"http://127.0.0.1:{upstream.server_port}",
        merchant_id=MERCHANT_ID,
        actor=SCAFFOLDING,
    )
    return issue_key(contour, actor=SCAFFOLDING)


def get_order(http: Client, key: str) -> Any:
    """A REST get_order of ORDER_ID with the key, as an assistant sends it."""
    body = {"name": "get_order", "arguments": {"order_id": ORDER_ID}}
    return http.post(
        "/api/v1/call", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )


def test_get_order_costs_4_statements_on_postgresql_6_on_sqlite(
    db: None, fake_upstream: FakeServer
) -> None:
    key, http = key_of_contour(fake_upstream, "lean", ["read"]), Client()
    get_order(http, key)  # the window and the pool exist from here on

    with CaptureQueriesContext(connection) as queries:
        response = get_order(http, key)

    assert response.json()["data"]["order_id"] == ORDER_ID
    assert_a_reads_statements(queries)


def assert_a_reads_statements(queries: CaptureQueriesContext) -> None:
    """The key with its contour; the circuit; the budget (one upsert); the journal's head, the
    entry, the head again. A success on a closed circuit resets nothing. PostgreSQL: the
    circuit and the budget in one statement (invoicebox/limits.py), the entry and its head in
    one statement (audit/lanes.py)."""
    statements = [
        q["sql"].split()[0]
        for q in queries.captured_queries
        if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))
    ]
    postgres = connection.vendor == "postgresql"
    upstream = ["WITH"] if postgres else ["SELECT", "INSERT"]
    journal = ["SELECT", "WITH"] if postgres else ["SELECT", "INSERT", "UPDATE"]
    assert statements == ["SELECT", *upstream, *journal], [
        q["sql"][:120] for q in queries.captured_queries
    ]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_served_read_on_postgresql_is_three_round_trips(fake_upstream: FakeServer) -> None:
    """As a server runs it, outside any transaction of the test: the key; the circuit and the
    budget; the journal entry after the head the previous read of this process left, with its
    head and its commit (audit/lanes.py)."""
    key, http = key_of_contour(fake_upstream, "served", ["read"]), Client()
    get_order(http, key)  # the window, the pool and the contour's journal lane exist from here on
    with CaptureQueriesContext(connection) as queries:
        answer = get_order(http, key)

    assert answer.json()["data"]["order_id"] == ORDER_ID
    sent = [q["sql"] for q in queries.captured_queries]
    assert len(sent) == 3, sent
    assert sent[0].startswith("SELECT") and '"tools_apikey"' in sent[0]
    assert sent[1].lstrip().startswith("WITH circuit") and "upstreamwindow" in sent[1]
    assert sent[2].startswith("WITH lane") and "audit_journalentry" in sent[2]
    assert not any("BEGIN" in q or "COMMIT" in q for q in sent), sent
    entry = JournalEntry.objects.filter(contour="served").latest("id")
    assert (entry.tool, entry.status) == ("get_order", "ok")
    assert check_chain().broken_id is None


def test_an_mcp_session_read_costs_the_same_statements_as_rest(
    db: None, fake_upstream: FakeServer
) -> None:
    """The MCP fast path's hop (adapters/mcp/http.admit): the key and the session the request
    names in one statement (adapters/mcp/sessions.key_and_session), then what a REST read
    sends."""
    from starlette.requests import Request

    from adapters.mcp import http as mcp_http
    from adapters.mcp import lean, sessions
    from tools.models import ApiKey

    key = key_of_contour(fake_upstream, "leanmcp", ["read"])
    found = ApiKey.authenticate(key)
    assert found is not None
    version = "2025-11-25"
    session_id = "read-path-queries-session-000001"
    sessions.record(session_id, found.pk, version, {"capabilities": {}})
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "get_order", "arguments": {"order_id": ORDER_ID}},
        }
    ).encode()
    headers = {
        b"mcp-protocol-version": version.encode(),
        b"content-type": b"application/json",
        b"accept": b"application/json, text/event-stream",
        b"mcp-session-id": session_id.encode(),
    }
    request = Request({"type": "http", "method": "POST", "headers": list(headers.items())})

    def read() -> Any:
        call = lean.call_of(request, body)
        assert call is not None
        return mcp_http.admit(f"Bearer {key}", "127.0.0.1", session_id, True, body, call)

    read()  # the window, the session's first use and the key's last use are written here
    with CaptureQueriesContext(connection) as queries:
        admitted = read()

    assert admitted.response is not None and admitted.response.status_code == 200
    assert ORDER_ID.encode() in admitted.response.body
    assert_a_reads_statements(queries)
    assert "gateway_mcp_mcpsession" in queries.captured_queries[0]["sql"]


def test_a_write_execution_costs_19_statements_on_postgresql_19_on_sqlite(
    db: None, fake_upstream: FakeServer
) -> None:
    from tests.conftest import order_args

    key, http = key_of_contour(fake_upstream, "lean-write", ["read", "write"]), Client()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    arguments = order_args()
    first = http.post(
        "/api/v1/call",
        {"name": "create_order", "arguments": arguments},
        content_type="application/json",
        **auth,
    ).json()
    token = first["confirmation"]["token"]
    body = {"name": "create_order", "arguments": {**arguments, "confirmation_token": token}}

    with CaptureQueriesContext(connection) as queries:
        response = http.post("/api/v1/call", body, content_type="application/json", **auth)

    assert response.json()["status"] == "ok", response.json()
    # Left out: savepoints (the test's own transaction) and the sweep of old budget windows,
    # made only by the request that opens a new window.
    counted = [
        q["sql"]
        for q in queries.captured_queries
        if not q["sql"].startswith(
            ("SAVEPOINT", "RELEASE SAVEPOINT", 'DELETE FROM "invoicebox_upstreamwindow"')
        )
    ]
    statements = [sql.split()[0] for sql in counted]
    tables = [
        next((word.strip('"') for word in sql.split() if word.startswith('"') and "_" in word), "")
        for sql in counted
    ]
    # The key; the token's confirmation; the database's clock (tools/clock.py: one clock for
    # every process) for its expiry. The claim: contour and confirmation locked, no operation
    # yet, the clock again, the ceilings, the operation born in flight, the attempt's journal
    # entry (head, entry, head). The upstream: circuit, budget (PostgreSQL: one statement,
    # invoicebox/limits.py). The order tracked (one upsert).
    # The finish: confirmation locked, the clock, operation and confirmation done. The
    # outcome's journal entry.
    # PostgreSQL: each journal entry is two statements (the lane; the entry with its head).
    # SQLite: the host's clock is every process's clock (one file, one host), never a statement.
    postgres = connection.vendor == "postgresql"
    journal = ["SELECT", "WITH"] if postgres else ["SELECT", "INSERT", "UPDATE"]
    clock = ["CLOCK"] if postgres else []
    upstream = ["WITH"] if postgres else ["SELECT", "INSERT"]
    expected = [
        "SELECT",
        "SELECT",
        *clock,
        "SELECT",
        "SELECT",
        "SELECT",
        *clock,
        "SELECT",
        "INSERT",
        *journal,
        *upstream,
        "INSERT",
        "SELECT",
        *clock,
        "UPDATE",
        "UPDATE",
        *journal,
    ]
    assert len(expected) == 19
    seen = [
        "CLOCK" if "statement_timestamp()" in sql else word
        for sql, word in zip(counted, statements, strict=True)
    ]
    assert seen == expected, "\n".join(q["sql"][:140] for q in queries.captured_queries)
    operation = expected.index("INSERT")
    tracked = len(expected) - len(journal) - len(clock) - 4  # before the finish
    assert tables[operation] == "tools_operation" and tables[tracked] == "tools_trackedorder", (
        tables
    )


def prepared_setting(**env: str) -> bool:
    """settings.DATABASE_PREPARED_STATEMENTS as config/settings/framework.py makes it of this
    environment (PostgreSQL unless DATABASE_URL says otherwise)."""
    code = "import config.settings as s; print(s.DATABASE_PREPARED_STATEMENTS)"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "DJANGO_"))}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, "DATABASE_URL": "postgres://gw@127.0.0.1:5432/gw", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return bool(json.loads(done.stdout.strip().lower()))


def test_prepared_statements_are_off_unless_asked_for_on_postgresql() -> None:
    assert prepared_setting() is False
    assert prepared_setting(DATABASE_PREPARED_STATEMENTS="true") is True
    sqlite = "sqlite:////tmp/prepared-setting.sqlite3"
    assert prepared_setting(DATABASE_PREPARED_STATEMENTS="true", DATABASE_URL=sqlite) is False


@pytest.fixture
def prepared_connection(settings: Any) -> Iterator[None]:
    """DATABASE_PREPARED_STATEMENTS on, on a connection opened with it (tools/apps.py installs
    the statements' wrapper when a connection is made)."""
    settings.DATABASE_PREPARED_STATEMENTS = True
    connection.close()
    connection.ensure_connection()
    assert run_prepared in connection.execute_wrappers
    yield
    connection.execute_wrappers.remove(run_prepared)
    connection.close()


def prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_reads_run_on_statements_prepared_on_their_connection(
    prepared_connection: None, fake_upstream: FakeServer
) -> None:
    key, http = key_of_contour(fake_upstream, "prepared", ["read"]), Client()

    def read() -> None:
        assert get_order(http, key).json()["data"]["order_id"] == ORDER_ID

    read()  # the contour's journal lane is opened here, through the ORM
    with CaptureQueriesContext(connection) as queries:
        for _ in range(3):
            read()

    prepared = prepared_statements()
    for table in ("tools_apikey", "invoicebox_upstreamwindow", "audit_chainhead"):
        assert any(f'"{table}"' in s and "$1" in s for s in prepared), (table, prepared)
    assert any(s.startswith("PREPARE") and "audit_journalentry" in s for s in prepared)
    sent = [q["sql"].lstrip() for q in queries.captured_queries]
    # Every read sends its key's, its budget's and its journal entry's statements (the entry
    # after the head the previous read left: audit/lanes.py) as EXECUTE with their values.
    assert len(sent) == 9 and all(q.startswith("EXECUTE gw_") for q in sent), sent
    assert not any("BEGIN" in q or "COMMIT" in q or "/*prepared*/" in q for q in sent), sent
    assert JournalEntry.objects.filter(contour="prepared", tool="get_order").count() == 4
    assert check_chain().broken_id is None


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_statement_postgresql_cannot_prepare_is_sent_as_it_is(
    prepared_connection: None,
) -> None:
    """A value PostgreSQL cannot type ($1 IS NULL) fails its PREPARE alone: the statement goes
    as it came, and a transaction around it stays usable (the PREPARE ran under a savepoint)."""
    marked = "SELECT %s IS NULL, 7 /*prepared*/"
    with connection.cursor() as cursor:
        cursor.execute(marked, [None])
        assert cursor.fetchone() == (True, 7)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(marked.replace("7", "8"), [None])
        assert cursor.fetchone() == (True, 8)
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
    assert not any("IS NULL" in s for s in prepared_statements())


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_statements_dropped_under_the_gateway_fail_one_call_then_are_prepared_again(
    prepared_connection: None, fake_upstream: FakeServer
) -> None:
    """DEALLOCATE ALL (DISCARD ALL, a pooler's other server connection) under the gateway: the
    next call is a database error with its envelope, the one after runs prepared again."""
    key, http = key_of_contour(fake_upstream, "dropped", ["read"]), Client()

    def read() -> Any:
        return get_order(http, key)

    assert read().status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    failed = read()
    assert failed.status_code == 503 and failed.json()["code"] == "database_unavailable"
    assert read().json()["data"]["order_id"] == ORDER_ID
    assert any('"tools_apikey"' in s for s in prepared_statements())
