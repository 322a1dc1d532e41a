"""Each tool's description names only result fields the tool really returns."""

from __future__ import annotations

import re
from typing import Any, get_args

import pytest

from invoicebox.statuses import OrderStatus
from sandbox.api import pay_order
from tests.conftest import Assistant, order_args
from tools import catalog
from tools.models import PendingConfirmation

pytestmark = pytest.mark.django_db

IDENTIFIER = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\b[a-z]+\b")
SHIP_LINE = {
    "sku": "ROOM-STD",
    "name": "Бронирование номера",
    "measure": "шт",
    "quantity": 1,
    "amount": "12200",
    "total_amount": "12200",
    "total_vat_amount": "2200",
    "vat_code": "RUS_VAT22",
    "type": "service",
}


def keys_of(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys_of(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys_of(v)}
    return set()


def words_not_about_results(spec: Any) -> set[str]:
    """Latin words a description may use for inputs, formats and values, not result fields."""
    schema = spec.params.model_json_schema()
    words = set(keys_of(schema.get("properties", {}))) | set(schema.get("properties", {}))
    for definition in schema.get("$defs", {}).values():
        words |= set(definition.get("properties", {}))
    text = str(schema)
    words |= set(re.findall(r"'([a-z_]+)'", text))  # enum values, e.g. concise, created
    statuses = set(get_args(OrderStatus))  # status values named in a description
    # Inputs accepted but not offered in the schema (SkipJsonSchema) are inputs all the same.
    hidden = set(spec.params.model_fields)
    return words | statuses | hidden | set(catalog.names())


def execute(assistant: Assistant, name: str, args: dict[str, Any]) -> dict[str, Any]:
    _, first = assistant.call(name, args)
    if first["status"] != "confirmation_required":
        return first
    return assistant.call(name, {**args, "confirmation_token": first["confirmation"]["token"]})[1]


def results(assistant: Assistant) -> dict[str, dict[str, Any]]:
    """One real, detailed result of every tool, from the sandbox."""
    assistant.contour.toolsets = ["read", "write", "refund"]
    assistant.contour.approval_thresholds = {"RUB": 10**12}
    assistant.contour.save()
    paid = execute(assistant, "create_order", order_args())["data"]["order_id"]
    pay_order(paid)
    unpaid = execute(assistant, "create_order", order_args(description="Второй"))
    out = {"create_order": unpaid}
    out["create_shipment"] = execute(
        assistant, "create_shipment", {"order_id": paid, "basket_items": [SHIP_LINE]}
    )
    out["get_order"] = assistant.call(
        "get_order", {"order_id": paid, "response_format": "detailed"}
    )[1]
    out["find_orders"] = assistant.call(
        "find_orders", {"response_format": "detailed", "page_size": 1}
    )[1]
    out["find_shipments"] = assistant.call(
        "find_shipments", {"order_id": paid, "response_format": "detailed"}
    )[1]
    out["lookup_company_by_inn"] = assistant.call("lookup_company_by_inn", {"inn": "7710044140"})[1]
    out["update_order"] = execute(
        assistant, "update_order", {"order_id": unpaid["data"]["order_id"], "description": "Иное"}
    )
    out["cancel_order"] = execute(
        assistant, "cancel_order", {"order_id": unpaid["data"]["order_id"]}
    )
    refund_args = {"parent_order_id": paid, "description": "возврат"}
    _, first = assistant.call("create_refund", refund_args)
    # An operator's approval, as the web UI records it (its tests: tests/tools/people/test_operator_views.py).
    PendingConfirmation.objects.filter(pk=first["confirmation"]["id"]).update(status="approved")
    out["create_refund"] = assistant.call(
        "create_refund", {**refund_args, "confirmation_token": first["confirmation"]["token"]}
    )[1]
    out["find_refunds"] = assistant.call("find_refunds", {"order_id": paid})[1]
    out["get_refundable"] = assistant.call("get_refundable", {"order_id": paid})[1]
    return out


def test_every_field_a_description_promises_is_in_a_real_result(assistant: Assistant):
    real = results(assistant)
    assert set(real) == set(catalog.names())
    for spec in catalog.CATALOG:
        body = real[spec.name]
        assert body["status"] == "ok", (spec.name, body)
        returned = keys_of(body["data"])
        promised = set(IDENTIFIER.findall(spec.description_ru)) - words_not_about_results(spec)
        missing = promised - returned
        assert not missing, f"{spec.name} promises {sorted(missing)} but returns {sorted(returned)}"
