"""The authorization server through its real endpoints (uvicorn, HTTP): metadata, consent,
tokens, and each way a flow must fail."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import order_args
from tests.system.oauth.conftest import OAuthClient, Served, call_tool

pytestmark = pytest.mark.anyio


def test_discovery_names_the_authorization_server_and_public_pkce_clients(served: Served):
    # when
    unauthorized = httpx.post(served.mcp, json={})
    resource = httpx.get(f"{served.base}/.well-known/oauth-protected-resource/mcp").json()
    server = httpx.get(f"{served.base}/.well-known/oauth-authorization-server").json()

    # then: the 401 points to RFC 9728 metadata, which names this issuer (RFC 8414)
    assert unauthorized.status_code == 401
    challenge = unauthorized.headers["www-authenticate"]
    assert (
        f'resource_metadata="{served.base}/.well-known/oauth-protected-resource/mcp"' in challenge
    )
    assert resource["resource"] == served.mcp
    assert resource["authorization_servers"] == [served.base]
    assert server["issuer"] == served.base
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["token_endpoint_auth_methods_supported"] == ["none"]
    assert server["registration_endpoint"] == f"{served.base}/register"
    assert server["revocation_endpoint"] == f"{served.base}/revoke"


@pytest.mark.parametrize(
    "uri", ["http://evil.example/cb", "myapp://callback", "https://chatgpt.com/cb#frag"]
)
def test_registration_takes_only_https_or_loopback_redirects(served: Served, uri: str):
    # when
    answer = httpx.post(f"{served.base}/register", json={"redirect_uris": [uri]})

    # then
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_redirect_uri"


def test_registration_answers_a_public_client_even_when_a_secret_is_asked(served: Served):
    # when: RFC 7591 default method (client_secret_basic) asked
    answer = httpx.post(
        f"{served.base}/register",
        json={
            "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"],
            "client_name": "Claude",
            "token_endpoint_auth_method": "client_secret_basic",
        },
    )

    # then
    assert answer.status_code == 201
    assert answer.json()["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in answer.json()


async def test_an_owners_grant_is_a_key_of_the_contour_in_every_rule(
    served: Served, oauth_client: OAuthClient
):
    # given: Olga lets the client read and write on shop
    tokens = oauth_client.connect("olga", contour="shop", toolsets=("read", "write"))
    assert tokens["scope"] == "read write"
    assert tokens["access_token"].startswith("ibo_")

    # when: the official client lists, reads and starts a write with the access token
    headers = {"Authorization": f"Bearer {tokens['access_token']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(served.mcp, http_client=http), mode="legacy") as client,
    ):
        listed = [tool.name for tool in (await client.list_tools()).tools]
        read = await client.call_tool("find_orders", {"page_size": 1})
        write = await client.call_tool("create_order", order_args())

    # then: the key's scope (read+write of shop) and the two-phase write hold
    assert "create_order" in listed and "create_refund" not in listed
    assert read.structured_content["status"] == "ok"
    assert write.structured_content["code"] == "confirmation_required"
    # the grant is a key of shop held by Olga, stored by hash only
    key = served.query(
        "SELECT k.prefix, k.toolsets, u.username, c.slug, k.key_hash FROM tools_apikey k "
        "JOIN auth_user u ON u.id = k.user_id JOIN tools_contour c ON c.id = k.contour_id "
        "JOIN oauth_oauthgrant g ON g.key_id = k.id"
    )[-1]
    assert json.loads(key[1]) == ["read", "write"] and key[2:4] == ("olga", "shop")
    assert not served.query(
        "SELECT 1 FROM oauth_oauthtoken WHERE token_hash = ?", tokens["access_token"]
    )
    calls = served.journal(tool="find_orders", actor=f"key:{key[0]}")
    assert calls and calls[-1]["channel"] == "mcp-http"
    issued = served.journal(code="oauth_token_issued")[-1]
    assert issued["channel"] == "oauth" and "Тестовый клиент" in issued["actor"]
    assert served.journal(code="oauth_grant_issued")[-1]["actor"] == "user:olga"


def test_a_read_only_grant_calling_create_order_gets_insufficient_scope(
    served: Served, oauth_client: OAuthClient
):
    # given
    tokens = oauth_client.connect("olga", contour="shop", toolsets=("read",))

    # when
    answer = call_tool(served, tokens["access_token"], "create_order", order_args())

    # then: as the reference, a 403 naming the missing toolset, a scope the client can ask for
    assert answer.status_code == 403
    challenge = answer.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="read write"' in challenge
    assert answer.json()["code"] == "insufficient_scope"
    assert "«write»" in answer.json()["message"]
    assert served.journal(code="insufficient_scope", tool="create_order")


def test_a_grant_is_never_wider_than_its_contour(oauth_client: OAuthClient):
    # given
    oauth_client.register()

    # when: write asked on viewer, which only reads
    answer = oauth_client.decide("olga", contour="viewer", toolsets=("read", "write"))

    # then
    assert answer.status_code == 200
    assert "ассистентам не разрешено: запись" in answer.text


def test_deny_returns_access_denied_with_the_state(oauth_client: OAuthClient):
    # given
    oauth_client.register()

    # when
    answer = oauth_client.decide("olga", allow=False)

    # then
    assert answer.status_code == 302
    location = answer.headers["location"]
    assert location.startswith(oauth_client.redirect_uri)
    query = parse_qs(urlsplit(location).query)
    assert query["error"] == ["access_denied"] and query["state"] == [oauth_client.state]


@pytest.mark.parametrize("person", ["oleg", "anna"])
def test_an_operator_or_auditor_who_owns_nothing_cannot_grant(
    served: Served, oauth_client: OAuthClient, person: str
):
    # given
    oauth_client.register()
    grants_before = served.query("SELECT count(*) FROM oauth_oauthgrant")[0][0]

    # when: the page, then a forged allow
    _, _, page = oauth_client.consent_page(person)
    forged = oauth_client.decide(person, contour="shop")

    # then
    assert page.status_code == 403 and "только владелец магазина" in page.text
    assert forged.status_code == 403
    assert served.query("SELECT count(*) FROM oauth_oauthgrant")[0][0] == grants_before


def test_an_unregistered_redirect_uri_is_refused_without_redirecting(oauth_client: OAuthClient):
    # given
    oauth_client.register()

    # when
    answer = oauth_client.authorize(redirect_uri="http://127.0.0.1:9/elsewhere")

    # then
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_request"
    assert "not registered" in answer.json()["error_description"]


def test_pkce_is_required_at_authorize_and_at_token(oauth_client: OAuthClient):
    # given
    oauth_client.register()

    # when: no challenge at /authorize
    no_challenge = oauth_client.authorize(challenge=False)
    code = oauth_client.code("olga")
    no_verifier = oauth_client.token(code, verifier=None)
    wrong_verifier = oauth_client.token(code, verifier="x" * 50)

    # then
    assert no_challenge.status_code == 302
    assert parse_qs(urlsplit(no_challenge.headers["location"]).query)["error"] == [
        "invalid_request"
    ]
    assert no_verifier.status_code == 400 and no_verifier.json()["error"] == "invalid_request"
    assert wrong_verifier.status_code == 400 and wrong_verifier.json()["error"] == "invalid_grant"
    assert oauth_client.token(code).status_code == 200  # the right one still works


def test_a_reused_code_is_refused_and_revokes_the_grant(served: Served, oauth_client: OAuthClient):
    # given
    oauth_client.register()
    code = oauth_client.code("olga")
    first = oauth_client.token(code).json()

    # when
    again = oauth_client.token(code)

    # then
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert call_tool(served, first["access_token"], "find_orders", {}).status_code == 401
    assert served.journal(code="oauth_grant_revoked")[-1]["status"] == "rejected"


def test_refresh_rotates_and_a_reused_refresh_token_revokes_the_grant(
    served: Served, oauth_client: OAuthClient
):
    # given
    first = oauth_client.connect("olga")

    # when
    second = oauth_client.refresh(first["refresh_token"])
    reused = oauth_client.refresh(first["refresh_token"])

    # then: rotation gave new tokens and ended the old access token
    assert second.status_code == 200
    rotated = second.json()
    assert rotated["refresh_token"] != first["refresh_token"]
    assert call_tool(served, first["access_token"], "find_orders", {}).status_code == 401
    # reuse: refused, and the whole grant (the rotated tokens too) is gone
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    assert call_tool(served, rotated["access_token"], "find_orders", {}).status_code == 401
    assert oauth_client.refresh(rotated["refresh_token"]).status_code == 400
    assert served.journal(code="oauth_token_refreshed")
    revoked = json.loads(served.journal(code="oauth_grant_revoked")[-1]["arguments"])
    assert revoked["reason"] == "refresh_token_reused"


def test_a_token_revoked_by_the_client_is_unauthenticated(
    served: Served, oauth_client: OAuthClient
):
    # given
    tokens = oauth_client.connect("olga")
    assert call_tool(served, tokens["access_token"], "create_order", {}).status_code == 403

    # when
    answer = oauth_client.revoke(tokens["access_token"])

    # then
    assert answer.status_code == 200
    refused = call_tool(served, tokens["access_token"], "find_orders", {})
    assert refused.status_code == 401
    assert "resource_metadata=" in refused.headers["www-authenticate"]
    assert oauth_client.refresh(tokens["refresh_token"]).status_code == 400
    revoked = json.loads(served.journal(code="oauth_grant_revoked")[-1]["arguments"])
    assert revoked["reason"] == "revoked_by_client"


def test_rest_takes_a_contour_key_and_an_access_token_alike(
    served: Served, oauth_client: OAuthClient
):
    # given
    key = served.viewer_key
    tokens = oauth_client.connect("olga", contour="shop", toolsets=("read",))

    # when
    by_key = httpx.post(
        f"{served.base}/api/v1/call",
        json={"name": "find_orders"},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    by_grant = httpx.post(
        f"{served.base}/api/v1/call",
        json={"name": "find_orders"},
        headers={"Authorization": f"Bearer {tokens['access_token']}"},
        timeout=30,
    )
    unknown = httpx.post(
        f"{served.base}/api/v1/call",
        json={"name": "find_orders"},
        headers={"Authorization": "Bearer iba_nope"},
        timeout=30,
    )

    # then
    assert by_key.status_code == 200, by_key.text
    assert by_grant.status_code == 200, by_grant.text
    assert unknown.status_code == 401
