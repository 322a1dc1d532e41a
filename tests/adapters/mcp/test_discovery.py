"""A client without a key is told what to do: the 401 points to RFC 9728 metadata, and every
OAuth address it probes next answers with the Russian reason, never Django's English 404 and
never a warning in the log."""

from __future__ import annotations

from urllib.request import parse_http_list, parse_keqv_list

import httpx
import pytest

from adapters.mcp.discovery import NO_OAUTH
from tests.adapters.mcp.conftest import Gateway
from tests.adapters.mcp.test_http import LEGACY, post, rpc

PROBES = [("GET", "/.well-known/oauth-authorization-server"),
          ("GET", "/.well-known/oauth-authorization-server/mcp"),
          ("GET", "/.well-known/openid-configuration"),
          ("GET", "/.well-known/openid-configuration/mcp"),
          ("POST", "/register"), ("GET", "/authorize"), ("POST", "/token")]


def origin(live: Gateway) -> str:
    return live.url.removesuffix("/mcp")


def challenge(response: httpx.Response) -> dict[str, str]:
    scheme, _, parameters = response.headers["www-authenticate"].partition(" ")
    assert scheme == "Bearer"
    return parse_keqv_list(parse_http_list(parameters))


@pytest.mark.parametrize("key", [None, "ibg_not-a-key"], ids=["no-key", "unknown-key"])
def test_the_401_names_the_resource_metadata(live: Gateway, key: str | None):
    # when
    refused = post(live, rpc("initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                            "clientInfo": {"name": "t", "version": "1"}}),
                   key=key)

    # then
    assert refused.status_code == 401
    params = challenge(refused)
    assert params["resource_metadata"] == (
        f"{origin(live)}/.well-known/oauth-protected-resource/mcp")
    assert params["realm"] == "invoicebox-gateway"
    assert ("error" in params) is (key is not None)  # RFC 6750: no error without credentials


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource/mcp",
                                  "/.well-known/oauth-protected-resource"])
def test_the_metadata_says_which_resource_and_how_to_send_the_key(live: Gateway, path: str):
    # when
    metadata = httpx.get(origin(live) + path, timeout=15)

    # then
    assert metadata.status_code == 200
    body = metadata.json()
    assert body["resource"] == live.url
    assert body["bearer_methods_supported"] == ["header"]
    assert "authorization_servers" not in body  # none yet: the key is the way in


@pytest.mark.parametrize(("method", "path"), PROBES)
def test_oauth_probes_get_the_russian_reason(live: Gateway, method: str, path: str):
    # when
    answer = httpx.request(method, origin(live) + path, timeout=15)

    # then
    assert answer.status_code == 404
    body = answer.json()
    assert body["error_description"] == NO_OAUTH
    assert body["code"] == "oauth_not_configured"


def test_probes_leave_no_warning_in_the_log(live: Gateway):
    # given
    log = live.db.with_name("uvicorn.log")
    before = log.read_text()

    # when
    for method, path in PROBES:
        httpx.request(method, origin(live) + path, timeout=15)
    httpx.get(origin(live) + "/.well-known/oauth-protected-resource/mcp", timeout=15)

    # then
    assert ".well-known" not in log.read_text()[len(before):]
    assert "/register" not in log.read_text()[len(before):]
