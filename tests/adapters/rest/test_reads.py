"""Reads through REST against the sandbox: get_order, find_orders, listing tools."""

from __future__ import annotations

import pytest

from tests.conftest import Assistant, order_args
from tools import catalog

pytestmark = pytest.mark.django_db


def create(assistant: Assistant, **changes: object) -> dict:
    args = order_args(**changes)
    _, first = assistant.call("create_order", args)
    _, done = assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )
    assert done["status"] == "ok", done
    return done["data"]


def test_get_order_by_id_reads_the_sandbox(assistant: Assistant):
    created = create(assistant)

    status, body = assistant.call(
        "get_order", {"order_id": created["order_id"], "response_format": "detailed"}
    )

    assert status == 200, body
    data = body["data"]
    assert data["order_id"] == created["order_id"]
    assert data["status"] == "created"
    assert (data["amount"], data["amount_human"]) == ("36600", "366,00 ₽")
    assert data["vat_amount"] == "6600"
    assert data["customer"] == {"name": "ООО «Ромашка»", "vat_number": "7710044140"}


def test_get_order_by_merchant_number(assistant: Assistant):
    created = create(assistant)

    _, body = assistant.call("get_order", {"merchant_order_id": created["merchant_order_id"]})

    assert body["data"]["order_id"] == created["order_id"]
    assert "customer" not in body["data"]


def test_get_order_unknown_id_is_not_found(assistant: Assistant):
    status, body = assistant.call("get_order", {"order_id": "017f038f-c78b-736d-dc00-8bce30bd0f9f"})

    assert (status, body["code"]) == (422, "not_found")


def test_get_order_needs_an_identifier(assistant: Assistant):
    status, body = assistant.call("get_order", {})

    assert (status, body["code"]) == (400, "invalid_arguments")
    assert body["problems"][0]["field"] == "order_id"


def test_find_orders_filters_and_pages(assistant: Assistant):
    for n in range(3):
        create(assistant, description=f"Счёт {n}")

    _, page = assistant.call("find_orders", {"status": ["created"], "page_size": 2})
    _, none = assistant.call("find_orders", {"status": ["completed"]})

    assert page["data"]["total_count"] == 3
    assert len(page["data"]["orders"]) == 2
    assert page["data"]["truncated"] is True
    assert none["data"]["orders"] == []
    assert none["data"]["total_count"] == 0


def test_read_only_contour_can_read(reader: Assistant):
    status, body = reader.call("find_orders", {})

    assert status == 200
    assert body["status"] == "ok"


def test_tools_lists_only_the_contours_toolsets(assistant: Assistant, reader: Assistant):
    _, full = assistant.get("/api/v1/tools")
    _, readonly = reader.get("/api/v1/tools?format=neutral")

    assert [t["name"] for t in full["tools"]] == [
        s.name for s in catalog.CATALOG if s.toolset in ("read", "write")
    ]
    assert [t["name"] for t in readonly["tools"]] == [
        s.name for s in catalog.CATALOG if s.toolset == "read"
    ]
    assert "create_refund" not in [t["name"] for t in full["tools"]]
    create_order = next(t for t in full["tools"] if t["name"] == "create_order")
    assert create_order["requires_confirmation"] is True
    assert "basket_items" in create_order["input_schema"]["properties"]


def test_tools_unknown_format_is_refused(assistant: Assistant):
    status, body = assistant.get("/api/v1/tools?format=nope")

    assert (status, body["code"]) == (400, "invalid_arguments")


def test_openapi_schema_is_served(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")

    assert response.status_code == 200
    assert "/api/v1/call" in response.content.decode()
