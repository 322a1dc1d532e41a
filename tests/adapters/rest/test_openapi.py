"""/api/schema/ and /api/docs/: offline Swagger UI, the Bearer schemes, every endpoint with
examples, JSON on ?format=json."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client

from adapters.functions.formats import PLATFORMS

pytestmark = pytest.mark.django_db

# Every endpoint that executes a call: REST's own, one per function-calling platform, the text one.
CALL_PATHS = ("/api/v1/call", *(platform.path for platform in PLATFORMS), "/api/v1/text/call")


def schema(client: Client) -> dict[str, Any]:
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi+json")
    return json.loads(response.content)


def test_format_json_returns_json_and_the_default_stays_yaml(client: Client):
    assert schema(client)["openapi"].startswith("3.")
    default = client.get("/api/schema/")
    assert default["Content-Type"].startswith("application/vnd.oai.openapi")
    assert default.content.startswith(b"openapi: ")


def test_contour_key_is_a_bearer_scheme_every_assistant_endpoint_requires(client: Client):
    document = schema(client)
    schemes = document["components"]["securitySchemes"]
    assert schemes["contourKey"]["type"] == "http"
    assert schemes["contourKey"]["scheme"] == "bearer"
    for path in ("/api/v1/tools", *CALL_PATHS):
        operation = next(iter(document["paths"][path].values()))
        assert {"contourKey": []} in operation["security"], path


def test_journal_endpoints_are_documented_for_auditors(client: Client):
    paths = schema(client)["paths"]
    listing = paths["/api/v1/journal"]["get"]
    export = paths["/api/v1/journal/export"]["get"]
    assert {"auditorToken": []} in listing["security"]
    assert {p["name"] for p in listing["parameters"]} >= {"after", "limit", "channel", "since"}
    assert {p["name"] for p in export["parameters"]} >= {"format", "excel", "contour", "status"}
    assert "text/csv" in export["responses"]["200"]["content"]


@pytest.mark.parametrize("path", CALL_PATHS)
def test_call_endpoints_carry_request_examples(client: Client, path: str):
    body = schema(client)["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    assert body.get("examples"), path


def test_swagger_ui_is_served_from_this_server_not_a_cdn(client: Client):
    page = client.get("/api/docs/").content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert any("swagger-ui-bundle.js" in src for src in sources), sources
    assert not [src for src in sources if src.startswith(("http://", "https://", "//"))]
