"""A read's database round trips are pinned: a regression in the lean read path fails here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from adapters.invoicebox import connections
from benchmarks.fake_upstream import MERCHANT_ID, FakeServer, serve
from tools.contours import create_contour, issue_key

ORDER_ID = "0c1d2e3f-0000-4000-8000-0000000000aa"


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = serve()
    yield server
    server.shutdown()
    server.server_close()
    connections.forget_all()


def test_get_order_costs_six_statements(db: None, fake: FakeServer) -> None:
    contour = create_contour("lean", mode="custom", toolsets=["read"], token="tok",
                             base_url=f"http://127.0.0.1:{fake.server_port}",
                             merchant_id=MERCHANT_ID)
    key, http = issue_key(contour), Client()
    body = {"name": "get_order", "arguments": {"order_id": ORDER_ID}}
    http.post("/api/v1/call", body, content_type="application/json",
              HTTP_AUTHORIZATION=f"Bearer {key}")  # the window and the pool exist from here on

    with CaptureQueriesContext(connection) as queries:
        response = http.post("/api/v1/call", body, content_type="application/json",
                             HTTP_AUTHORIZATION=f"Bearer {key}")

    assert response.json()["data"]["order_id"] == ORDER_ID
    statements = [q["sql"].split()[0] for q in queries.captured_queries
                  if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))]
    # The key with its contour; the circuit; the budget (one upsert); the journal's head, the
    # entry, the head again. A success on a closed circuit resets nothing.
    assert statements == ["SELECT", "SELECT", "INSERT", "SELECT", "INSERT", "UPDATE"], \
        [q["sql"][:120] for q in queries.captured_queries]
