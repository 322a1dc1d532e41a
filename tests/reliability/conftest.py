"""Helpers for the reliability tests: issuing an order through the gateway, signed posts."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from adapters.invoicebox.notify import sign
from audit.models import JournalEntry
from tests.conftest import Assistant, order_args
from tools.models import TrackedOrder


def issue(assistant: Assistant, **changes: Any) -> dict[str, Any]:
    """create_order in two phases, as an assistant does; returns the created order's data."""
    args = order_args(**changes)
    status, first = assistant.call("create_order", args)
    assert status == 200 and first["status"] == "confirmation_required", first
    status, done = assistant.call("create_order",
                                  {**args, "confirmation_token": first["confirmation"]["token"]})
    assert status == 200 and done["status"] == "ok", done
    return done["data"]


def post_notification(http: Client, slug: str, body: bytes, key: str | None,
                      signature: str | None = None) -> tuple[int, dict[str, Any]]:
    headers = {}
    if signature is not None or key is not None:
        headers["HTTP_X_SIGNATURE"] = signature if signature is not None else sign(body, key or "")
    response = http.post(f"/invoicebox/notifications/{slug}", data=body,
                         content_type="application/json", **headers)
    return response.status_code, response.json()


def webhook_entries() -> list[JournalEntry]:
    return list(JournalEntry.objects.filter(channel="webhook").order_by("id"))


def tracked(order_id: str) -> TrackedOrder:
    return TrackedOrder.objects.get(order_id=order_id)


def body_of(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode()


@pytest.fixture
def http() -> Client:
    return Client()
