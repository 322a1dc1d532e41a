"""/mcp over raw HTTP: the key before anything else, sessions bound to a key, Host/Origin checks."""

from __future__ import annotations

import sqlite3
from typing import Any

import httpx
import pytest

from tests.adapters.mcp.conftest import Gateway
from tools.catalog import CATALOG

ACCEPT = "application/json, text/event-stream"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
MODERN_HEADERS = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"}


def rpc(method: str, params: dict[str, Any] | None = None, id: int | None = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if id is not None:
        message["id"] = id
    return message


def modern_list() -> dict[str, Any]:
    return rpc(
        "tools/list",
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
            }
        },
    )


def post(
    live: Gateway, body: dict[str, Any], *, key: str | None = None, **headers: str
) -> httpx.Response:
    sent = {"Accept": ACCEPT, "Content-Type": "application/json", **headers}
    if key is not None:
        sent["Authorization"] = f"Bearer {key}"
    return httpx.post(live.url, json=body, headers=sent, timeout=15)


def open_session(live: Gateway, key: str) -> str:
    """A 2025-11-25 session opened with `key`: initialize, then the initialized notification."""
    opened = post(
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
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    ready = post(
        live,
        rpc("notifications/initialized", id=None),
        key=key,
        **{"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY},
    )
    assert ready.status_code == 202
    return session


def refusals(live: Gateway) -> int:
    return len(live.journal(channel="mcp-http", code="unauthenticated"))


@pytest.mark.parametrize("key", [None, "ibg_not-a-key"], ids=["no-key", "unknown-key"])
def test_request_without_a_valid_key_gets_401_with_the_envelope(live: Gateway, key: str | None):
    # given
    before = refusals(live)

    # when
    response = post(live, modern_list(), key=key, **MODERN_HEADERS)

    # then
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    body = response.json()
    assert (body["status"], body["code"]) == ("rejected", "unauthenticated")
    assert "tools" not in body
    assert refusals(live) == before + 1
    [entry] = live.journal(id=body["journal_id"])
    # An unverified credential is named by a keyed hash at most, never by its prefix.
    assert (entry["actor"].split()[0], entry["contour"]) == ("anonymous", "")
    assert key is None or key[:12] not in entry["actor"]


def test_session_opened_without_a_key_is_not_opened(live: Gateway):
    # when
    response = post(
        live,
        rpc(
            "initialize",
            {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "tests", "version": "1"},
            },
        ),
    )

    # then
    assert response.status_code == 401
    assert "mcp-session-id" not in response.headers


def test_session_is_bound_to_the_key_that_opened_it(live: Gateway):
    # given
    session = open_session(live, live.keys["acme"])
    headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY}

    # when
    same_contour_other_key = post(
        live, rpc("tools/list", id=2), key=live.keys["acme-second"], **headers
    )
    other_contour = post(live, rpc("tools/list", id=3), key=live.keys["viewer"], **headers)
    owner = post(live, rpc("tools/list", id=4), key=live.keys["acme"], **headers)

    # then
    assert same_contour_other_key.status_code == 404
    assert other_contour.status_code == 404
    assert CATALOG[0].name not in same_contour_other_key.text + other_contour.text
    assert owner.status_code == 200
    assert CATALOG[0].name in owner.text


def test_foreign_host_is_refused_before_the_key_is_even_looked_up(live: Gateway):
    # given
    before = refusals(live)

    # when
    response = post(live, modern_list(), Host="gateway.attacker.example", **MODERN_HEADERS)

    # then
    assert response.status_code == 421
    assert refusals(live) == before


def test_foreign_origin_is_refused_even_with_a_valid_key(live: Gateway):
    # when
    response = post(
        live,
        modern_list(),
        key=live.keys["acme"],
        Origin="http://attacker.example",
        **MODERN_HEADERS,
    )

    # then
    assert response.status_code == 403
    assert CATALOG[0].name not in response.text


def test_loopback_origin_is_allowed(live: Gateway):
    # given
    port = live.env["PORT"]

    # when
    response = post(
        live,
        modern_list(),
        key=live.keys["acme"],
        Origin=f"http://localhost:{port}",
        **MODERN_HEADERS,
    )

    # then
    assert response.status_code == 200, response.text
    assert CATALOG[0].name in response.text


def test_django_still_serves_everything_else(live: Gateway):
    # when
    response = httpx.get(
        live.url.removesuffix("/mcp") + "/api/v1/tools?format=mcp",
        headers={"Authorization": f"Bearer {live.keys['viewer']}"},
        timeout=10,
    )

    # then
    assert response.status_code == 200
    assert [t["name"] for t in response.json()["tools"]] == [
        spec.name for spec in CATALOG if spec.toolset == "read"
    ]


def test_a_read_only_key_lists_and_calls_only_reads_over_mcp(live: Gateway):
    """The key's scope is the core's: MCP refuses a write exactly as REST does."""
    read_key = live.manage("create_api_key", "acme", "--toolsets", "read").strip()
    session = open_session(live, read_key)
    headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY}

    listed = post(live, rpc("tools/list", id=2), key=read_key, **headers)
    refused = post(
        live,
        rpc("tools/call", {"name": "create_order", "arguments": {}}, id=3),
        key=read_key,
        **headers,
    )

    assert listed.status_code == 200 and "find_orders" in listed.text
    assert '"create_order"' not in listed.text
    assert refused.status_code == 200
    assert '"isError":true' in refused.text.replace(" ", "")
    assert "forbidden" in refused.text
    [entry] = live.journal(channel="mcp-http", tool="create_order", actor=f"key:{read_key[:12]}")
    assert entry["code"] == "forbidden"


def test_an_expired_key_gets_401_over_mcp(live: Gateway):
    raw = live.manage("create_api_key", "acme", "--expires", "2999-01-01T00:00:00+00:00").strip()
    assert post(live, modern_list(), key=raw, **MODERN_HEADERS).status_code == 200
    with sqlite3.connect(live.db) as conn:
        conn.execute(
            "UPDATE tools_apikey SET expires_at = '2001-01-01 00:00:00' WHERE prefix = ?",
            (raw[:12],),
        )

    expired = post(live, modern_list(), key=raw, **MODERN_HEADERS)

    assert expired.status_code == 401
    assert expired.json()["code"] == "unauthenticated"
