"""The OAuth endpoints are served beside Django, not through it: they still get Django's host
check (ALLOWED_HOSTS) and the headers every Django answer carries."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

OAUTH_PATHS = [
    ("GET", "/.well-known/oauth-authorization-server"),
    ("GET", "/.well-known/oauth-protected-resource/mcp"),
    ("POST", "/register"),
    ("GET", "/authorize"),
    ("POST", "/token"),
    ("POST", "/revoke"),
]


@pytest.mark.parametrize(("method", "path"), OAUTH_PATHS)
def test_a_host_outside_allowed_hosts_is_refused(served: TestClient, method: str, path: str):
    response = served.request(method, path, headers={"Host": "evil.example"})

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(("method", "path"), OAUTH_PATHS)
def test_every_oauth_answer_carries_djangos_security_headers(
    served: TestClient, method: str, path: str
):
    response = served.request(method, path)

    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert "Cache-Control" in response.headers  # the SDK's own (metadata is cacheable) or Django's


def test_hsts_when_configured(served: TestClient, settings) -> None:
    settings.SECURE_HSTS_SECONDS = 3600

    response = served.get(
        "/.well-known/oauth-authorization-server", headers={"X-Forwarded-Proto": "https"}
    )
    secure = TestClient(served.app, base_url="https://127.0.0.1:8000").get(
        "/.well-known/oauth-authorization-server"
    )

    assert "Strict-Transport-Security" not in response.headers  # not over plain http
    assert secure.headers["Strict-Transport-Security"] == "max-age=3600"
