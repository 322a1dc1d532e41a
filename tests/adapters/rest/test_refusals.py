"""Refusals through REST: each has its own code and HTTP status, and nothing goes upstream."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from audit.models import JournalEntry
from tests.conftest import Assistant, order_args, sandbox_orders
from tools import catalog
from tools.models import ApiKey

pytestmark = pytest.mark.django_db


def test_missing_key_is_unauthenticated(client: Client):
    response = client.post(
        "/api/v1/call", data={"name": "get_order", "arguments": {}}, content_type="application/json"
    )

    assert response.status_code == 401
    assert response.json()["status"] == "rejected"
    assert response.json()["code"] == "unauthenticated"
    assert JournalEntry.objects.filter(code="unauthenticated").count() == 1


@pytest.mark.parametrize("header", ["Bearer ibg_wrong", "Basic abc", "Bearer", "Bearer a b"])
def test_bad_key_is_unauthenticated(client: Client, header: str):
    response = client.get("/api/v1/tools", HTTP_AUTHORIZATION=header)

    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"


def test_revoked_key_is_unauthenticated(assistant: Assistant):
    ApiKey.objects.get().revoke()

    status, body = assistant.call("find_orders", {})

    assert (status, body["code"]) == (401, "unauthenticated")


def test_unknown_tool_lists_only_the_names_this_contour_may_call(assistant: Assistant):
    status, body = assistant.call("delete_everything", {})

    assert (status, body["code"]) == (404, "unknown_tool")
    assert "create_order" in body["message"]
    visible = [name for name in catalog.names() if name != "create_refund"]  # refunds are off
    assert body["data"]["known_tools"] == visible
    assert "create_refund" not in body["message"]


@pytest.mark.parametrize("arguments", [[], "order_id=1", 42, None, True])
def test_arguments_that_are_not_an_object(assistant: Assistant, arguments: object):
    status, body = assistant.call("get_order", arguments)

    assert (status, body["code"]) == (400, "arguments_not_object")


def test_extra_argument_is_refused_with_its_path(assistant: Assistant):
    status, body = assistant.call(
        "get_order", {"order_id": "017f038f-c78b-736d-dc00-8bce30bd0f9f", "force": True}
    )

    assert (status, body["code"]) == (400, "invalid_arguments")
    assert body["problems"] == [{"field": "force", "message": body["problems"][0]["message"]}]
    assert "допустимы: order_id" in body["problems"][0]["message"]


def test_extra_nested_argument_is_refused(assistant: Assistant):
    args = order_args()
    args["basket_items"][0]["discount"] = "100"

    status, body = assistant.call("create_order", args)

    assert status == 400
    assert [p["field"] for p in body["problems"]] == ["basket_items[0].discount"]


def test_invalid_json_body(assistant: Assistant):
    response = assistant.http.post(
        "/api/v1/call",
        data="{not json",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {assistant.key}",
    )

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_json"
    assert JournalEntry.objects.filter(code="invalid_json", contour="acme").count() == 1


@pytest.mark.parametrize(
    "body", [[1, 2], "text", {"name": "get_order", "arguments": {}, "x": 1}, {"arguments": {}}]
)
def test_malformed_call_bodies(assistant: Assistant, body: object):
    status, reply = assistant.post("/api/v1/call", body)

    assert status == 400
    assert reply["code"] in {"invalid_json", "invalid_arguments"}


def test_write_on_read_only_contour_is_forbidden(reader: Assistant):
    status, body = reader.call("create_order", order_args())

    assert (status, body["code"]) == (403, "forbidden")
    assert sandbox_orders(reader.http) == []
    entry = JournalEntry.objects.get(pk=body["journal_id"])
    assert (entry.tool, entry.code, entry.contour) == ("create_order", "forbidden", "viewer")


def test_write_with_a_token_on_read_only_contour_is_forbidden(reader: Assistant):
    status, body = reader.call("create_order", {**order_args(), "confirmation_token": "ibc_x"})

    assert (status, body["code"]) == (403, "forbidden")


def test_garbage_never_gets_a_500(assistant: Assistant):
    weird = [
        {"name": "create_order", "arguments": {"basket_items": "много"}},
        {"name": "create_order", "arguments": {"amount": 1e308, "customer": []}},
        {"name": "find_orders", "arguments": {"page": "2", "created_from": "вчера"}},
        {"name": "find_orders", "arguments": {"status": ["paid"], "page_size": 10_000}},
        {"name": "get_order", "arguments": {"order_id": "not-a-uuid"}},
        {"name": "get_order", "arguments": {"merchant_order_id": "\u0000" * 300}},
        {"name": 123, "arguments": {}},
        {"name": "x" * 10_000, "arguments": {}},
    ]
    for body in weird:
        status, reply = assistant.post("/api/v1/call", body)
        assert 400 <= status < 500, (body, reply)
        assert reply["status"] == "rejected"
        assert reply["message"]


def test_every_refusal_and_success_is_journaled_without_secrets(assistant: Assistant):
    args = order_args()
    _, first = assistant.call("create_order", args)
    token = first["confirmation"]["token"]
    assistant.call("create_order", {**args, "confirmation_token": token})
    assistant.call("get_order", {})
    assistant.call("nope", {})
    assistant.call("get_order", [])
    assistant.http.get("/api/v1/tools", HTTP_AUTHORIZATION="Bearer ibg_guess")

    entries = list(JournalEntry.objects.order_by("id"))
    assert [(e.phase, e.code) for e in entries] == [
        ("prepare", "confirmation_required"),
        ("execute", "execution_started"),
        ("execute", "ok"),
        ("read", "invalid_arguments"),
        ("call", "unknown_tool"),
        ("call", "arguments_not_object"),
        ("call", "unauthenticated"),
    ]
    dump = json.dumps([e.__dict__ for e in entries], default=str, ensure_ascii=False)
    assert assistant.contour.api_token not in dump
    assert token not in dump
    assert assistant.key not in dump
    assert "ibg_guess" not in dump
    # The started entry names the operation before any request; the outcome has its request id.
    assert entries[1].operation_key and not entries[1].upstream_request_id
    assert entries[2].operation_key == entries[1].operation_key and entries[2].upstream_request_id


def test_deeply_nested_json_is_invalid_json_not_a_500(assistant: Assistant):
    response = assistant.http.post(
        "/api/v1/call",
        data="[" * 100_000,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {assistant.key}",
    )

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_json"
