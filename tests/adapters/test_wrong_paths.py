"""A program's typo under /api/ or /mcp gets the JSON envelope (404 `no_such_path`), not
Django's HTML page; the trailing slash the docs omit is accepted on the documented paths."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from starlette.testclient import TestClient

from tests.conftest import Assistant

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/api/v1/toolz", "/api/v2/call", "/api/", "/mcp/tools", "/mcpp"])
def test_a_typo_under_the_programs_prefixes_is_a_json_404(settings, path: str):
    settings.DEBUG = False

    response = Client().post(path, data="{}", content_type="application/json")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert (body["status"], body["code"]) == ("rejected", "no_such_path")
    assert body["data"]["path"] == path and "/api/v1/call" in body["hint"]


def test_other_typos_keep_the_html_page(settings):
    settings.DEBUG = False

    response = Client().get("/admn/")

    assert response.status_code == 404 and "Страница не найдена" in response.content.decode()


def test_the_documented_paths_take_a_trailing_slash(assistant: Assistant):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {assistant.key}"}
    http = Client()

    tools = http.get("/api/v1/tools/", **headers)
    call = http.post(
        "/api/v1/call/",
        content_type="application/json",
        data=json.dumps({"name": "find_orders", "arguments": {}}),
        **headers,
    )
    health = http.get("/health/")

    assert tools.status_code == 200 and tools.json()["tools"], tools.content[:300]
    assert (call.status_code, call.json()["status"]) == (200, "ok"), call.content[:300]
    assert health.status_code in (200, 503) and "status" in health.json()


def test_mcp_with_a_trailing_slash_reaches_mcp(transactional_db: None):
    from config.asgi import application

    served = TestClient(application, base_url="http://127.0.0.1:8000")
    answer = served.post("/mcp/", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})

    # the MCP door's own refusal (no key), not Django's HTML 404
    assert answer.status_code == 401, answer.text[:300]
    assert "WWW-Authenticate" in answer.headers
