"""A form dialog is offered only where its answer can come back (issue 41).

Several workers and no relay (no Redis, the database not PostgreSQL): an answer the client
posts to another worker would never be heard and the write would wait for the dialog's timeout.
There the dialog is not offered and the write answers the chat confirmation at once. Through
the real /mcp path (the app config/asgi.py mounts), in process; the relayed case itself, two
workers on PostgreSQL without Redis, is tests/system/test_sessions.py.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.db import connection

from audit.actors import SCAFFOLDING
from tests.adapters.mcp.test_lean import in_process, open_in_process
from tests.conftest import order_args
from tools.contours.services import create_contour
from tools.models import ApiKey

pytestmark = [pytest.mark.anyio]

ELICITATION = {"elicitation": {"form": {}}}


@pytest.fixture
def shop_key(transactional_db: None) -> str:
    return ApiKey.issue(
        create_contour("dialogs", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)
    )[1]


def sse_messages(text: str) -> list[dict[str, Any]]:
    return [
        json.loads(line[5:])
        for line in text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]


@pytest.mark.parametrize(
    ("workers", "asked"), [(1, True), (2, False)], ids=["one-worker", "two-workers-no-relay"]
)
async def test_the_dialog_is_offered_only_where_its_answer_can_come_back(
    shop_key: str, settings: Any, workers: int, asked: bool
):
    if connection.vendor == "postgresql":
        pytest.skip("PostgreSQL relays the answer (LISTEN/NOTIFY): the dialog is offered")
    settings.MCP_WORKERS = workers
    settings.MCP_REDIS_URL = ""  # and the tests' database is SQLite: no relay
    settings.MCP_ELICITATION_TIMEOUT_SECONDS = 2.0
    async with in_process([]) as client:
        headers = await open_in_process(client, shop_key, ELICITATION)
        started = time.monotonic()
        answer = await client.post(
            "/mcp",
            headers=headers,
            json={
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {"name": "create_order", "arguments": order_args()},
            },
        )
        elapsed = time.monotonic() - started

    assert answer.status_code == 200, answer.text
    found = sse_messages(answer.text)
    dialogs = [m for m in found if m.get("method") == "elicitation/create"]
    result = next(m for m in found if m.get("id") == 5)["result"]["structuredContent"]
    assert result["status"] == "confirmation_required"
    assert bool(dialogs) is asked
    if not asked:  # no wait for a dialog nobody can answer
        assert elapsed < 1.5
