"""The database round trips of a read and of a write execution are pinned: a regression in
the lean paths fails here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from audit.actors import SCAFFOLDING
from harness.fake_upstream import MERCHANT_ID, FakeServer, serve
from invoicebox import connections
from tools.contours.services import create_contour
from tools.keys.services import issue_key

ORDER_ID = "0c1d2e3f-0000-4000-8000-0000000000aa"


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = serve()
    yield server
    server.shutdown()
    server.server_close()
    connections.forget_all()


def test_get_order_costs_4_statements_on_postgresql_6_on_sqlite(db: None, fake: FakeServer) -> None:
    contour = create_contour(
        "lean",
        mode="custom",
        toolsets=["read"],
        token="tok",
        base_url=f"http://127.0.0.1:{fake.server_port}",
        merchant_id=MERCHANT_ID,
        actor=SCAFFOLDING,
    )
    key, http = issue_key(contour, actor=SCAFFOLDING), Client()
    body = {"name": "get_order", "arguments": {"order_id": ORDER_ID}}
    http.post(
        "/api/v1/call", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )  # the window and the pool exist from here on

    with CaptureQueriesContext(connection) as queries:
        response = http.post(
            "/api/v1/call",
            body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )

    assert response.json()["data"]["order_id"] == ORDER_ID
    statements = [
        q["sql"].split()[0]
        for q in queries.captured_queries
        if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))
    ]
    # The key with its contour; the circuit; the budget (one upsert); the journal's head, the
    # entry, the head again. A success on a closed circuit resets nothing. PostgreSQL: the
    # circuit and the budget in one statement (invoicebox/limits.py), the entry and its head in
    # one statement (audit/lanes.py).
    postgres = connection.vendor == "postgresql"
    upstream = ["WITH"] if postgres else ["SELECT", "INSERT"]
    journal = ["SELECT", "WITH"] if postgres else ["SELECT", "INSERT", "UPDATE"]
    assert statements == ["SELECT", *upstream, *journal], [
        q["sql"][:120] for q in queries.captured_queries
    ]


def test_a_write_execution_costs_19_statements_on_postgresql_19_on_sqlite(
    db: None, fake: FakeServer
) -> None:
    from tests.conftest import order_args

    contour = create_contour(
        "lean-write",
        mode="custom",
        toolsets=["read", "write"],
        token="tok",
        base_url=f"http://127.0.0.1:{fake.server_port}",
        merchant_id=MERCHANT_ID,
        actor=SCAFFOLDING,
    )
    key, http = issue_key(contour, actor=SCAFFOLDING), Client()
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
