"""Many shops on one deployment (issue 41): one tenant's sessions never evict another's, a key
over its cap is refused, a session that never made a call expires, and a session opening
never sorts or deletes the whole table. Served by uvicorn with small caps."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from adapters.mcp import sessions
from adapters.mcp.models import McpSession
from audit.actors import SCAFFOLDING
from tests.adapters.mcp.conftest import Gateway, free_port, serving
from tests.adapters.mcp.test_http import LEGACY, post, rpc
from tools.contours.services import create_contour
from tools.models import ApiKey

# Unused sessions expire after 10 minutes here, not the default minute: the flood below opens
# 228 sessions, which on a loaded machine takes long enough for a minute to free slots.
UNUSED_SECONDS = 600
CAPS = {
    "MCP_MAX_SESSIONS": "20",
    "MCP_MAX_SESSIONS_PER_KEY": "5",
    "MCP_MAX_SESSIONS_PER_CONTOUR": "100",
    "MCP_SESSION_PROTECT_SECONDS": "300",
    "MCP_SESSION_UNUSED_SECONDS": str(UNUSED_SECONDS),
}


# Two contours and their keys made in one process (a manage.py per key costs seconds).
SHOPS = """
import json
from audit.actors import SCAFFOLDING
from tools.models import ApiKey
from tools.contours.services import create_contour
demo = create_contour("demo", mode="sandbox", actor=SCAFFOLDING)
flood = create_contour("flood", mode="sandbox", actor=SCAFFOLDING)
keys = {"demo": ApiKey.issue(demo)[1]}
keys.update({f"flood-{n}": ApiKey.issue(flood, label=f"f{n}")[1] for n in range(4)})
print(json.dumps(keys))
"""


@pytest.fixture(scope="module")
def shops(gateway: Gateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """The prepared gateway's database copied without its sessions, `demo` and a `flood`
    contour of four keys added, served with caps 5 per key and 20 for the deployment."""
    db = tmp_path_factory.mktemp("shops") / "db.sqlite3"
    shutil.copy(gateway.db, db)
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM gateway_mcp_mcpsession")
    shop = Gateway(env={**gateway.env, "DATABASE_URL": f"sqlite:///{db}"}, db=db, keys={})
    shop.keys = json.loads(shop.manage("shell", "-c", SHOPS).strip().splitlines()[-1])
    # An ephemeral port, as every served test's: tests of this module may run on two xdist
    # workers at once, and two picks from one fixed range could both take the same port, the
    # second worker then talking to the first one's gateway (its keys unknown: 401).
    with serving(shop, str(free_port()), **CAPS) as url:
        shop.url = url
        yield shop


@pytest.fixture
def shop(shops: Gateway) -> Gateway:
    """The served shops with no session open yet."""
    with sqlite3.connect(shops.db) as conn:
        conn.execute("DELETE FROM gateway_mcp_mcpsession")
    return shops


def initialize(live: Gateway, key: str):
    return post(
        live,
        rpc(
            "initialize",
            {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "tests", "version": "1"},
            },
        ),
        key=key,
    )


def session_of(live: Gateway, key: str, *, call: bool = True) -> str:
    opened = initialize(live, key)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY}
    assert (
        post(live, rpc("notifications/initialized", id=None), key=key, **headers).status_code == 202
    )
    if call:
        assert post(live, rpc("tools/list", id=2), key=key, **headers).status_code == 200
    return session


def tools_list(live: Gateway, key: str, session: str) -> int:
    return post(
        live,
        rpc("tools/list", id=3),
        key=key,
        **{"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY},
    ).status_code


def seen_ago(live: Gateway, session: str, seconds: int) -> None:
    with sqlite3.connect(live.db) as conn:
        conn.execute(
            "UPDATE gateway_mcp_mcpsession SET last_seen = datetime('now', ?) WHERE session_id = ?",
            (f"-{seconds} seconds", session),
        )


def test_another_contours_flood_leaves_a_session_used_a_minute_ago_working(shop: Gateway):
    # given: demo's session, used a minute ago
    demo = session_of(shop, shop.keys["demo"])
    seen_ago(shop, demo, 60)

    # when: 210 sessions from one key of another contour, then 5 from each of its other keys
    flood = [initialize(shop, shop.keys["flood-0"]) for _ in range(210)]
    more = [initialize(shop, shop.keys[f"flood-{n}"]) for n in (1, 2, 3) for _ in range(6)]

    # then: the key got its 5 and was refused the rest, with a reason it can show
    assert Counter(r.status_code for r in flood) == {200: 5, 429: 205}
    refused = flood[-1].json()
    assert refused["id"] == 1 and refused["error"]["data"]["code"] == "too_many_sessions"
    assert refused["error"]["data"]["scope"] == "key"
    assert "слишком много открытых сессий" in refused["error"]["message"]
    assert "mcp-session-id" not in flood[-1].headers
    # the ceiling (20) refused the other keys too, and evicted no one
    assert Counter(r.status_code for r in more)[200] == 20 - 1 - 5
    assert {r.json()["error"]["data"]["scope"] for r in more if r.status_code == 429} == {
        "key",
        "deployment",
    }
    assert tools_list(shop, shop.keys["demo"], demo) == 200
    [entry, *_] = shop.journal(code="too_many_sessions")
    assert (entry["contour"], entry["channel"]) == ("flood", "mcp-http")


def test_a_session_that_made_no_call_after_initialize_expires_before_a_used_one(shop: Gateway):
    # given: both idle past MCP_SESSION_UNUSED_SECONDS, within the idle timeout (30 min)
    probe = session_of(shop, shop.keys["demo"], call=False)
    working = session_of(shop, shop.keys["demo"])
    seen_ago(shop, probe, UNUSED_SECONDS + 1)
    seen_ago(shop, working, UNUSED_SECONDS + 1)

    # then
    assert tools_list(shop, shop.keys["demo"], probe) == 404
    assert tools_list(shop, shop.keys["demo"], working) == 200


@pytest.mark.django_db
def test_opening_a_session_neither_sorts_nor_deletes_the_whole_table():
    # given: another contour's sessions, and a key at its cap, idle past the protected window
    other = ApiKey.issue(create_contour("other", mode="sandbox", actor=SCAFFOLDING))[0]
    key = ApiKey.issue(create_contour("acme", mode="sandbox", actor=SCAFFOLDING))[0]
    for n in range(10):
        sessions.record(f"other-{n}", other.pk, LEGACY, {})
    for n in range(3):
        sessions.record(f"mine-{n}", key.pk, LEGACY, {})
        McpSession.objects.filter(pk=f"mine-{n}").update(
            last_seen=timezone.now() - timedelta(minutes=10 - n), used=True
        )

    # when
    with (
        override_settings(MCP_MAX_SESSIONS_PER_KEY=3),
        CaptureQueriesContext(connection) as queries,
    ):
        closed = sessions.record("new", key.pk, LEGACY, {})

    # then: the key's own least recently used one went, found through the key; no OFFSET,
    # no unbounded count, no DELETE but by id
    assert closed == ["mine-0"]
    statements = [q["sql"].upper() for q in queries.captured_queries]
    assert not any("OFFSET" in sql for sql in statements)
    for sql in statements:
        if "ORDER BY" in sql:
            assert '"KEY_ID" =' in sql, sql
        if sql.startswith("DELETE"):
            assert '"SESSION_ID" IN' in sql, sql
        if "COUNT(" in sql:
            assert "LIMIT" in sql, sql
    assert McpSession.objects.filter(key=other).count() == 10
