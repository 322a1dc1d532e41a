"""Fixtures for the function formats: definitions over REST, an httpx route into Django."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from django.test import Client

from tests.conftest import Assistant, order_args


class DjangoTransport(httpx.BaseTransport):
    """httpx requests served by Django's test client: the loop helpers' HTTP, in-process."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        headers = {
            key: value
            for key, value in request.headers.items()
            if key.lower() in ("authorization", "content-type", "accept")
        }
        response = self.client.generic(
            request.method,
            request.url.raw_path.decode(),
            data=request.read(),
            content_type=request.headers.get("content-type", "application/octet-stream"),
            headers=headers,
        )
        return httpx.Response(
            response.status_code, headers=dict(response.items()), content=response.content
        )


@pytest.fixture
def gateway_http(assistant: Assistant) -> httpx.Client:
    return httpx.Client(transport=DjangoTransport(assistant.http), base_url="http://testserver")


def definitions(assistant: Assistant, fmt: str) -> dict[str, Any]:
    status, body = assistant.get(f"/api/v1/tools?format={fmt}")
    assert status == 200, body
    return body


def envelope(text: str) -> dict[str, Any]:
    return json.loads(text)


def issued_order(assistant: Assistant, description: str = "Бронирование номера") -> dict[str, Any]:
    """An order created through the plain REST contract, to read it back in another format."""
    args = order_args(description=description)
    _, first = assistant.call("create_order", args)
    _, done = assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )
    assert done["status"] == "ok", done
    return done["data"]
