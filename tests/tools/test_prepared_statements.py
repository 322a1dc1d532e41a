"""DATABASE_PREPARED_STATEMENTS=true (config/settings/framework.py): PostgreSQL binds the
gateway's parameters itself and keeps the statements run on every call prepared per
connection, while the journal's two messages stay bound on the client (audit/lanes.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from audit.walk import check_chain
from harness.fake_upstream import MERCHANT_ID, FakeServer, serve
from invoicebox import connections
from tools.contours.services import create_contour
from tools.keys.services import issue_key

ROOT = Path(__file__).resolve().parents[2]
ORDER_ID = "0c1d2e3f-0000-4000-8000-0000000000ab"


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = serve()
    yield server
    server.shutdown()
    server.server_close()
    connections.forget_all()


def prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


@pytest.fixture
def prepared_connection() -> Iterator[None]:
    """The connection reopened as DATABASE_PREPARED_STATEMENTS=true opens it."""
    options = connection.settings_dict["OPTIONS"]
    before = dict(options)
    connection.close()
    options.update(server_side_binding=True, prepare_threshold=5)
    connection.features.__dict__.pop("uses_server_side_binding", None)  # a cached_property
    yield
    connection.close()
    options.clear()
    options.update(before)
    connection.features.__dict__.pop("uses_server_side_binding", None)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_reads_run_on_statements_prepared_on_their_connection(
    prepared_connection: None, fake: FakeServer
) -> None:
    contour = create_contour(
        "prepared",
        mode="custom",
        toolsets=["read"],
        token="tok",
        base_url=f"http://127.0.0.1:{fake.server_port}",
        merchant_id=MERCHANT_ID,
        actor=SCAFFOLDING,
    )
    key, http = issue_key(contour, actor=SCAFFOLDING), Client()
    body = {"name": "get_order", "arguments": {"order_id": ORDER_ID}}

    def read() -> None:
        answer = http.post(
            "/api/v1/call",
            body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        assert answer.json()["data"]["order_id"] == ORDER_ID

    with CaptureQueriesContext(connection) as queries:
        for _ in range(7):  # psycopg prepares a statement on its fifth run on a connection
            read()

    prepared = prepared_statements()
    assert any('FROM "tools_apikey"' in s and "$1" in s for s in prepared), prepared
    assert any('"invoicebox_upstreamwindow"' in s for s in prepared), prepared  # the budget
    # The journal's BEGIN and its lane still go in one message, bound on the client, and
    # every read's entry is chained.
    assert sum(q["sql"].startswith("BEGIN; SELECT") for q in queries.captured_queries) == 7
    assert JournalEntry.objects.filter(contour="prepared", tool="get_order").count() == 7
    assert check_chain().broken_id is None


def database_options(**env: str) -> str:
    code = "import config.settings as s; o = s.DATABASES['default']['OPTIONS']; " + (
        "print(o.get('server_side_binding'), o.get('prepare_threshold'))"
    )
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
    return done.stdout.strip()


def test_prepared_statements_are_off_unless_asked_for() -> None:
    assert database_options() == "None None"
    assert database_options(DATABASE_PREPARED_STATEMENTS="true") == "True 5"
