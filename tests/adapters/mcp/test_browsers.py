"""/mcp for browser clients and strict ones (issue 41): CORS for MCP_ALLOWED_ORIGINS answered
before the key is asked for, and the protocol's 400s: no fresh session id on an answer that
opens no session, an unknown protocol version refused as such."""

from __future__ import annotations

import httpx
import pytest

from tests.adapters.mcp.conftest import Gateway
from tests.adapters.mcp.test_http import ACCEPT, LEGACY, open_session, post, rpc

ALLOWED = "http://localhost:5173"  # a web client on loopback: http://localhost:* is allowed
FOREIGN = "https://attacker.example"


def preflight(live: Gateway, origin: str) -> httpx.Response:
    return httpx.options(
        live.url,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, mcp-session-id, "
            "mcp-protocol-version, last-event-id",
        },
        timeout=10,
    )


def test_a_preflight_from_an_allowed_origin_is_answered_before_the_key(live: Gateway):
    # when
    response = preflight(live, ALLOWED)

    # then
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == ALLOWED
    assert {"GET", "POST", "DELETE"} <= {
        m.strip() for m in response.headers["access-control-allow-methods"].split(",")
    }
    allowed = response.headers["access-control-allow-headers"].lower()
    for header in (
        "authorization",
        "content-type",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    ):
        assert header in allowed
    assert int(response.headers["access-control-max-age"]) > 0


def test_answers_to_an_allowed_origin_expose_the_session_and_the_challenge(live: Gateway):
    # when
    unauthenticated = post(live, rpc("initialize", {}), Origin=ALLOWED)
    opened = post(
        live,
        rpc(
            "initialize",
            {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "web", "version": "1"},
            },
        ),
        key=live.keys["acme"],
        Origin=ALLOWED,
    )

    # then
    for response in (unauthenticated, opened):
        assert response.headers["access-control-allow-origin"] == ALLOWED
        exposed = response.headers["access-control-expose-headers"].lower()
        assert "mcp-session-id" in exposed and "www-authenticate" in exposed
    assert unauthenticated.status_code == 401
    assert opened.status_code == 200 and opened.headers["mcp-session-id"]


def test_another_origin_gets_no_cors_at_all(live: Gateway):
    # when
    refused_preflight = preflight(live, FOREIGN)
    refused = post(live, rpc("tools/list"), key=live.keys["acme"], Origin=FOREIGN)

    # then
    for response in (refused_preflight, refused):
        assert not any(h.startswith("access-control-") for h in response.headers)
    assert refused.status_code == 403


@pytest.mark.parametrize("case", ["missing-session-id", "not-acceptable", "batch"])
def test_a_400_answer_names_no_session(live: Gateway, case: str):
    # when
    if case == "missing-session-id":
        response = post(
            live, rpc("tools/list"), key=live.keys["acme"], **{"MCP-Protocol-Version": LEGACY}
        )
    elif case == "not-acceptable":
        response = post(
            live,
            rpc(
                "initialize",
                {
                    "protocolVersion": LEGACY,
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            ),
            key=live.keys["acme"],
            Accept="text/html",
        )
    else:
        response = httpx.post(
            live.url,
            json=[rpc("tools/list", id=1), rpc("ping", id=2)],
            headers={
                "Accept": ACCEPT,
                "Content-Type": "application/json",
                "Authorization": f"Bearer {live.keys['acme']}",
            },
            timeout=10,
        )

    # then
    assert response.status_code in (400, 406), response.text
    assert "mcp-session-id" not in response.headers


def test_an_unknown_protocol_version_on_a_session_is_refused_as_such(live: Gateway):
    # given
    session = open_session(live, live.keys["acme"])

    # when
    response = post(
        live,
        rpc("tools/list", id=7),
        key=live.keys["acme"],
        **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2099-01-01"},
    )

    # then
    assert response.status_code == 400
    body = response.json()
    assert body["id"] == 7
    assert body["error"]["message"] == "Unsupported protocol version"
    assert body["error"]["data"]["requested"] == "2099-01-01"
    assert LEGACY in body["error"]["data"]["supported"]
    assert "_meta" not in response.text
