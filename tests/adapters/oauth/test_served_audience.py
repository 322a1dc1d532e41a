"""A token is for one resource: this server's /mcp (GATEWAY_SITE_URL + /mcp, what the
protected-resource metadata names). One issued for another server's /mcp, sharing the
database, is refused on /mcp and on REST with 401 invalid_token; REST takes this server's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from starlette.testclient import TestClient

from adapters.oauth import grants
from adapters.oauth.models import OAuthClient, OAuthGrant
from audit.actors import SCAFFOLDING
from tools.contours.services import create_contour
from tools.models import Contour, ContourRole

HERE = "http://127.0.0.1:8000/mcp"
ELSEWHERE = "https://other-gateway.example/mcp"
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def shop(transactional_db: None, make_user: Callable[..., User]) -> tuple[Contour, User]:
    contour = create_contour("shop", mode="sandbox", toolsets=["read"], actor=SCAFFOLDING)
    olga = make_user("olga")
    ContourRole.objects.create(user=olga, contour=contour, role="owner")
    return contour, olga


def token_for(shop: tuple[Contour, User], resource: str) -> str:
    contour, person = shop
    client, _ = OAuthClient.objects.get_or_create(
        client_id="c-1", defaults={"name": "ChatGPT", "redirect_uris": ["https://chatgpt.com/cb"]}
    )
    code = grants.consent(
        client,
        contour,
        person,
        ["read"],
        redirect_uri="https://chatgpt.com/cb",
        redirect_uri_explicit=True,
        code_challenge="x" * 43,
        resource=resource,
        redirect_host="chatgpt.com",
    )
    issued = grants.exchange_code(grants.find_code("c-1", code))
    assert issued is not None
    return issued.access


def rest(token: str) -> Any:
    return Client().post(
        "/api/v1/call",
        {"name": "find_orders", "arguments": {}},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def test_a_token_for_another_servers_mcp_is_refused_on_mcp(served: TestClient, shop):
    token = token_for(shop, ELSEWHERE)

    response = served.post(
        "/mcp", json=LIST, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    )

    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"
    challenge = response.headers["WWW-Authenticate"]
    assert 'error="invalid_token"' in challenge and "resource_metadata=" in challenge


def test_a_token_for_another_servers_mcp_is_refused_on_rest(shop):
    token = token_for(shop, ELSEWHERE)

    response = rest(token)

    assert response.status_code == 401
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


@pytest.mark.parametrize("resource", [HERE, HERE + "/", ""], ids=["named", "slash", "unnamed"])
def test_a_token_for_this_servers_mcp_serves_rest_too(shop, resource: str):
    token = token_for(shop, resource)

    assert rest(token).status_code == 200
    assert OAuthGrant.objects.get().resource == HERE  # unnamed: this server's, stored


def test_the_same_token_is_refused_once_the_server_is_another(shop, settings):
    # given: a token this server issued; the database is then served under another address
    token = token_for(shop, "")
    settings.GATEWAY_SITE_URL = "https://other-gateway.example"

    # then
    assert rest(token).status_code == 401


def test_a_missing_credential_is_no_invalid_token(shop):
    response = Client().post(
        "/api/v1/call", {"name": "find_orders", "arguments": {}}, content_type="application/json"
    )

    assert response.status_code == 401 and "error=" not in response["WWW-Authenticate"]


def test_access_tokens_have_a_prefix_of_their_own(shop):
    from audit.redaction import scrub
    from tools.models import sha256_hex

    token = token_for(shop, "")
    # An access token issued before the prefix was its own (`iba_`, the auditors') still works
    # until it expires.
    legacy = "iba_" + token.removeprefix("ibo_")
    grants.OAuthToken.objects.filter(kind="access").update(token_hash=sha256_hex(legacy))

    assert token.startswith("ibo_")
    assert rest(legacy).status_code == 200
    assert scrub(f"Bearer {token}", []) == f"Bearer {token[:12]}***"
