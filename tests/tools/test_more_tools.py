"""The rest of the catalog through REST: lookup, cancel, shipments, refunds, with refusals."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from audit.models import JournalEntry
from sandbox.api import pay_order
from tests.conftest import Assistant, order_args
from tools import catalog
from tools.models import PendingConfirmation

pytestmark = pytest.mark.django_db

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


def two_phase(assistant: Assistant, name: str, args: dict[str, Any]) -> tuple[int, dict]:
    status, first = assistant.call(name, args)
    if first["status"] != "confirmation_required":
        return status, first
    return assistant.call(name, {**args, "confirmation_token": first["confirmation"]["token"]})


def new_order(assistant: Assistant, paid: bool = False) -> str:
    _, body = two_phase(assistant, "create_order", order_args())
    assert body["status"] == "ok", body
    if paid:
        pay_order(body["data"]["order_id"])
    return body["data"]["order_id"]


@pytest.fixture
def refunder(assistant: Assistant) -> Assistant:
    assistant.contour.toolsets = ["read", "write", "refund"]
    assistant.contour.save()
    return assistant


PINNED = [
    "lookup_company_by_inn",
    "get_order",
    "find_orders",
    "find_shipments",
    "create_order",
    "cancel_order",
    "create_shipment",
    "create_refund",
    "update_order",
    "find_refunds",
    "get_refundable",
]


def test_catalog_order_is_pinned():
    # Every tool keeps its place (prompts rely on it); a new tool goes after them.
    assert [spec.name for spec in catalog.CATALOG][: len(PINNED)] == PINNED


# -- lookup_company_by_inn --------------------------------------------------------------------


def test_lookup_by_inn_returns_details_and_caches(assistant: Assistant):
    _, first = assistant.call("lookup_company_by_inn", {"inn": "7710044140"})
    _, second = assistant.call("lookup_company_by_inn", {"inn": "7710044140"})

    assert first["status"] == "ok", first
    assert first["data"]["kpp"] == "770201001"
    assert first["data"]["untrusted_source"] is True
    assert (first["data"]["cached"], second["data"]["cached"]) == (False, True)


def test_lookup_by_inn_bad_checksum_never_reaches_upstream(assistant: Assistant):
    status, body = assistant.call("lookup_company_by_inn", {"inn": "7710044141"})

    assert (status, body["code"]) == (400, "invalid_arguments")
    assert JournalEntry.objects.get(pk=body["journal_id"]).upstream_request_id == ""


def test_lookup_by_inn_unknown_is_not_found(assistant: Assistant):
    status, body = assistant.call("lookup_company_by_inn", {"inn": "500100732259"})

    assert (status, body["code"]) == (422, "not_found")


# -- cancel_order -----------------------------------------------------------------------------


def test_cancel_unpaid_order_in_two_phases(assistant: Assistant):
    order_id = new_order(assistant)

    _, first = assistant.call("cancel_order", {"order_id": order_id, "reason": "клиент передумал"})
    status, done = assistant.call(
        "cancel_order",
        {
            "order_id": order_id,
            "reason": "клиент передумал",
            "confirmation_token": first["confirmation"]["token"],
        },
    )
    _, read = assistant.call("get_order", {"order_id": order_id})

    assert "клиент передумал" in first["confirmation"]["summary"]
    assert (status, done["data"]["status"]) == (200, "canceled"), done
    assert read["data"]["status"] == "canceled"


def test_cancel_paid_order_is_refused_with_the_refund_hint(assistant: Assistant):
    order_id = new_order(assistant, paid=True)

    status, body = assistant.call("cancel_order", {"order_id": order_id})

    assert (status, body["code"]) == (422, "precondition_failed")
    assert "оплачен" in body["message"] and "create_refund" in body["hint"]


def test_cancel_twice_is_nothing_to_cancel(assistant: Assistant):
    order_id = new_order(assistant)
    two_phase(assistant, "cancel_order", {"order_id": order_id})

    _, body = assistant.call("cancel_order", {"order_id": order_id, "reason": "ещё раз"})

    assert body["code"] == "precondition_failed"
    assert "отменять нечего" in body["message"]


def test_cancel_on_read_only_contour_is_forbidden(reader: Assistant):
    status, body = reader.call("cancel_order", {"order_id": "017f038f-c78b-736d-dc00-8bce30bd0f9f"})

    assert (status, body["code"]) == (403, "forbidden")


# -- shipments --------------------------------------------------------------------------------


def test_shipment_of_a_paid_order_and_listing(assistant: Assistant):
    order_id = new_order(assistant, paid=True)

    _, first = assistant.call(
        "create_shipment", {"order_id": order_id, "basket_items": [SHIP_LINE]}
    )
    status, done = two_phase(
        assistant, "create_shipment", {"order_id": order_id, "basket_items": [SHIP_LINE]}
    )
    _, listed = assistant.call(
        "find_shipments", {"order_id": order_id, "response_format": "detailed"}
    )

    assert (
        "ТОРГ-12" in first["confirmation"]["summary"] and "УПД" in first["confirmation"]["summary"]
    )
    assert (status, done["status"]) == (200, "ok"), done
    assert done["data"]["amount"] == "12200"
    assert [s["shipment_id"] for s in listed["data"]["shipments"]] == [done["data"]["shipment_id"]]
    assert listed["data"]["dropped_foreign"] == 0


def test_shipment_of_an_unpaid_order_is_refused(assistant: Assistant):
    order_id = new_order(assistant)

    status, body = assistant.call(
        "create_shipment", {"order_id": order_id, "basket_items": [SHIP_LINE]}
    )

    assert (status, body["code"]) == (422, "precondition_failed")
    assert "оплаченному" in body["message"]


def test_shipment_beyond_the_remainder_is_refused(assistant: Assistant):
    order_id = new_order(assistant, paid=True)
    whole = {**SHIP_LINE, "quantity": 3, "total_amount": "36600", "total_vat_amount": "6600"}
    two_phase(assistant, "create_shipment", {"order_id": order_id, "basket_items": [whole]})

    status, body = assistant.call(
        "create_shipment", {"order_id": order_id, "basket_items": [SHIP_LINE]}
    )

    assert (status, body["code"]) == (422, "precondition_failed")
    assert "уже отгружено 366,00 ₽" in body["message"]


def test_shipment_with_wrong_line_arithmetic_is_refused(assistant: Assistant):
    order_id = new_order(assistant, paid=True)

    status, body = assistant.call(
        "create_shipment",
        {"order_id": order_id, "basket_items": [{**SHIP_LINE, "total_amount": "12300"}]},
    )

    assert (status, body["code"]) == (400, "invalid_arguments")
    assert body["problems"][0]["field"] == "basket_items[0].total_amount"


# -- refunds ----------------------------------------------------------------------------------


def test_refund_needs_the_refund_toolset(assistant: Assistant):
    order_id = new_order(assistant, paid=True)

    status, body = assistant.call(
        "create_refund", {"parent_order_id": order_id, "description": "возврат"}
    )

    assert (status, body["code"]) == (403, "forbidden")


def test_full_refund_waits_for_an_operator_then_executes(refunder: Assistant, operator: Client):
    order_id = new_order(refunder, paid=True)
    args = {"parent_order_id": order_id, "description": "отказ от брони"}

    _, first = refunder.call("create_refund", args)
    confirmed = {**args, "confirmation_token": first["confirmation"]["token"]}
    _, waiting = refunder.call("create_refund", confirmed)
    operator.post(f"/approvals/{first['confirmation']['id']}/", {"decision": "approve"})
    status, done = refunder.call("create_refund", confirmed)

    assert first["data"]["summary"]["refund_amount"] == "36600"
    assert "approval_url" in first["confirmation"]
    assert waiting["status"] == "awaiting_approval"
    assert (status, done["status"]) == (200, "ok"), done
    assert done["data"]["amount"] == "36600"


def test_partial_refund_by_lines_and_the_remainder(refunder: Assistant, operator: Client):
    order_id = new_order(refunder, paid=True)
    line = {"sku": "ROOM-STD", "quantity": 1, "total_amount": "12200"}
    args = {"parent_order_id": order_id, "description": "одна ночь", "basket_items": [line]}
    _, first = refunder.call("create_refund", args)
    operator.post(f"/approvals/{first['confirmation']['id']}/", {"decision": "approve"})
    refunder.call("create_refund", {**args, "confirmation_token": first["confirmation"]["token"]})

    _, too_much = refunder.call(
        "create_refund",
        {
            "parent_order_id": order_id,
            "description": "ещё",
            "basket_items": [{"sku": "ROOM-STD", "quantity": 3, "total_amount": "36600"}],
        },
    )

    assert first["data"]["summary"]["refund_amount"] == "12200"
    assert too_much["code"] == "invalid_arguments"
    assert "доступно 244,00 ₽" in too_much["message"]


def test_refund_of_an_unpaid_order_is_refused(refunder: Assistant):
    order_id = new_order(refunder)

    status, body = refunder.call(
        "create_refund", {"parent_order_id": order_id, "description": "возврат"}
    )

    assert (status, body["code"]) == (422, "precondition_failed")
    assert "cancel_order" in body["hint"]


def test_refund_of_an_unknown_sku_is_refused(refunder: Assistant):
    order_id = new_order(refunder, paid=True)

    _, body = refunder.call(
        "create_refund",
        {
            "parent_order_id": order_id,
            "description": "возврат",
            "basket_items": [{"sku": "NOPE", "quantity": 1, "total_amount": "100"}],
        },
    )

    assert body["code"] == "invalid_arguments"
    assert body["problems"][0]["field"] == "basket_items[0].sku"


def test_partial_amount_without_lines_is_refused(refunder: Assistant):
    order_id = new_order(refunder, paid=True)

    _, body = refunder.call(
        "create_refund", {"parent_order_id": order_id, "description": "часть", "amount": "100"}
    )

    assert body["code"] == "invalid_arguments"
    assert "составом" in body["message"]


@pytest.mark.parametrize(
    "policy",
    [
        {"approval_thresholds": {"RUB": 10**12}},
        {"approval_thresholds": {"RUB": 10**12}, "approval_for_all_writes": False},
        {"confirmation_ttl_seconds": 3600, "dedup_window_seconds": 0},
    ],
)
def test_no_configuration_lets_a_refund_run_without_a_human(refunder: Assistant, policy: dict):
    for field, value in policy.items():
        setattr(refunder.contour, field, value)
    refunder.contour.save()
    order_id = new_order(refunder, paid=True)
    _, first = refunder.call(
        "create_refund", {"parent_order_id": order_id, "description": "возврат"}
    )
    # Even a stored flag forced off can't skip the human: the rule is the tool's kind.
    PendingConfirmation.objects.update(requires_approval=False)

    _, body = refunder.call(
        "create_refund",
        {
            "parent_order_id": order_id,
            "description": "возврат",
            "confirmation_token": first["confirmation"]["token"],
        },
    )

    assert body["status"] == "awaiting_approval"
    assert not JournalEntry.objects.filter(
        tool="create_refund", phase="execute", code="ok"
    ).exists()


def test_a_tool_switched_off_is_hidden_and_forbidden(assistant: Assistant):
    assistant.contour.disabled_tools = ["cancel_order"]
    assistant.contour.save()

    _, listed = assistant.get("/api/v1/tools")
    status, body = assistant.call(
        "cancel_order", {"order_id": "017f038f-c78b-736d-dc00-8bce30bd0f9f"}
    )

    assert "cancel_order" not in [t["name"] for t in listed["tools"]]
    assert (status, body["code"]) == (403, "forbidden")


def test_created_orders_are_tracked_for_notifications(assistant: Assistant):
    from tools.models import TrackedOrder

    order_id = new_order(assistant)

    tracked = TrackedOrder.objects.get(order_id=order_id)
    assert (tracked.amount, tracked.currency, tracked.status) == (36600, "RUB", "created")
